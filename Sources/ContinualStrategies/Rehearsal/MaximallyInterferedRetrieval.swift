import ContinualCore

/// Maximally Interfered Retrieval, MIR (Aljundi, Caccia, Belilovsky, Caccia, Lin, Charlin &
/// Tuytelaars, NeurIPS 2019, "Online Continual Learning with Maximally Interfered Retrieval"):
/// experience replay that replays the stored samples the incoming batch would hurt most.
///
/// Per step, with θ the current parameters and B_in the batch's own rows:
///
///     θ_v = θ − η ∇_θ L(B_in; θ)                                  (the virtual SGD step)
///     s(x, y) = ℓ(f_θv(x), y) − ℓ(f_θ(x), y)                      (the interference, Sec. 3.1)
///
/// for each of `candidates` (C) samples drawn uniformly from a reservoir buffer of `capacity`
/// samples; the `replay_per_batch` (k) candidates with the largest s are appended to the batch,
/// in decreasing order of s (ties: the earlier drawn first), and the step trains on both as ER
/// does. Every incoming row is then offered to the reservoir (Algorithm R), after the draw.
///
/// Choices: ℓ is the plain cross-entropy over every output (the sigmoid's for binary heads), as
/// in the authors' code (their `F.cross_entropy`), whatever `training.active_outputs` gives the
/// loop's loss; L is its mean over the own rows, through each row's route. The authors' code
/// takes η from the run's SGD optimizer; a plugin does not see the optimizer, so η is the option
/// `virtual_lr` (set it to the run's `optimizer.lr`). The plugin follows the parameters through
/// `StepObserver` (the model's parameters after each step) to run the two forward passes; it
/// keeps that copy, refreshed at each experience's start, beside the buffer.
public struct MaximallyInterferedRetrieval: StepObserver {
    public var name: String { Options.typeName }
    public let options: Options
    var buffer = LogitReservoir(dimension: 0, logitCount: 1, capacity: 0)
    private var bufferRNG = RandomSource(seed: 0)
    private var drawRNG = RandomSource(seed: 0)
    /// The model at the current parameters (θ), and a scratch copy for θ_v.
    private var current: MLP?
    private var workspace: Workspace?
    /// Slots retrieved at the last step, in the order they were appended (for tests and reports).
    public private(set) var lastRetrieved: [Int] = []
    private var retrievals = 0

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        buffer = LogitReservoir(dimension: context.dimension, logitCount: model.logitCount, capacity: options.capacity)
        bufferRNG = context.randomSource("mir.buffer")
        drawRNG = context.randomSource("mir.candidates")
        current = model
        workspace = model.makeWorkspace(capacity: max(context.training.batchSize, 1))
        (lastRetrieved, retrievals) = ([], 0)
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        // A model that grew (another plugin's columns or adapters) needs a workspace of its layers.
        if workspace == nil || model.parameterCount != current?.parameterCount {
            workspace = model.makeWorkspace(capacity: 64)
        }
        current = model
    }

    /// Keeps θ: the parameters the next step starts from.
    public mutating func afterStep(_ step: StepObservation) {
        guard current != nil, step.parametersAfter.count == current!.parameterCount else { return }
        current!.parameters.withUnsafeMutableBufferPointer { _ = $0.update(from: step.parametersAfter) }
    }

    /// Appends the k most interfered candidates, then offers the own rows to the reservoir.
    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        lastRetrieved = []
        let own = batch.ownCount
        if let model = current, let ws = workspace, buffer.count > 0, own > 0 {
            let candidates = buffer.draw(options.candidates, rng: &drawRNG)
            lastRetrieved = Self.mostInterfered(candidates: candidates, buffer: buffer, batch: batch, model: model,
                                                virtualLR: options.virtualLR, k: options.replayPerBatch, workspace: ws)
            for slot in lastRetrieved {
                batch.append(features: buffer.row(slot), label: buffer.labels[slot], route: buffer.routes[slot])
            }
            retrievals += 1
        }
        for i in 0..<own {
            buffer.offer(features: batch.row(i), label: batch.labels[i], route: batch.routes[i], logits: nil, rng: &bufferRNG)
        }
    }

    /// The `k` slots of `candidates` whose loss rises most under the virtual step θ − η∇L(own rows).
    static func mostInterfered(candidates: [Int], buffer: LogitReservoir, batch: Batch, model: MLP, virtualLR: Double,
                               k: Int, workspace ws: Workspace) -> [Int] {
        var virtual = model
        var gradient = [Float](repeating: 0, count: model.parameterCount)
        let own = batch.ownCount
        let route = batch.routes[0]
        let oneRoute = (0..<own).allSatisfy { batch.routes[$0] == route }
        gradient.withUnsafeMutableBufferPointer { g in
            batch.features.withUnsafeBufferPointer { x in
                batch.labels.withUnsafeBufferPointer { y in
                    // Own rows come first; one pass when they share a route, else one per row.
                    for (start, count) in oneRoute ? [(0, own)] : (0..<own).map({ ($0, 1) }) {
                        _ = model.lossAndGradient(features: x.baseAddress! + start * batch.dimension,
                                                  labels: y.baseAddress! + start, count: count,
                                                  route: Int(batch.routes[start]), scale: 1 / Float(own),
                                                  workspace: ws, gradient: g.baseAddress!)
                    }
                }
            }
        }
        let eta = Float(virtualLR)
        for i in 0..<virtual.parameterCount { virtual.parameters[i] -= eta * gradient[i] }
        let before = losses(model, candidates, buffer, ws), after = losses(virtual, candidates, buffer, ws)
        let order = candidates.indices.sorted { a, b in
            let (sa, sb) = (after[a] - before[a], after[b] - before[b])
            return sa != sb ? sa > sb : a < b
        }
        return order.prefix(k).map { candidates[$0] }
    }

    /// Plain cross-entropy of each candidate under `model`, through its stored route.
    static func losses(_ model: MLP, _ slots: [Int], _ buffer: LogitReservoir, _ ws: Workspace) -> [Double] {
        slots.map { slot in
            let x = Array(buffer.row(slot))
            return x.withUnsafeBufferPointer { xp in
                model.forward(xp.baseAddress!, count: 1, route: Int(buffer.routes[slot]), workspace: ws)
                return RowLoss.crossEntropy(UnsafePointer(ws.logits), L: model.logitCount,
                                            label: Int(buffer.labels[slot])) { _ in true }.loss
            }
        }
    }

    /// Stored samples and the parameter copy; per step the own rows' gradient, the virtual step and
    /// 2C forward passes.
    public var resources: PluginResources {
        let p = current?.parameterCount ?? 0, flops = current?.flopsPerPrediction ?? 0
        let train = current?.flopsPerTrainingSample ?? 0
        let rows = min(buffer.count, options.replayPerBatch)
        return PluginResources(storedSampleBytes: buffer.bytes, stateBytes: 4 * p, extraRowsPerBatch: rows,
                               extraFLOPsPerStep: buffer.count > 0
                                   ? options.candidates * 2 * flops + 2 * p + 16 * train : 0)
    }

    public func checkpointState() -> PluginState {
        var s = buffer.state()
        s.ints["rng.buffer"] = bufferRNG.state.map { Int64(bitPattern: $0) }
        s.ints["rng.candidates"] = drawRNG.state.map { Int64(bitPattern: $0) }
        s.ints["retrievals"] = [Int64(retrievals)]
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        try buffer.restore(state)
        guard let a = state.ints["rng.buffer"], a.count == 4, let b = state.ints["rng.candidates"], b.count == 4,
              let r = state.ints["retrievals"]?.first else {
            throw CheckpointError.mismatch("mir state lacks its random streams or its retrieval count")
        }
        bufferRNG = RandomSource(state: a.map { UInt64(bitPattern: $0) })
        drawRNG = RandomSource(state: b.map { UInt64(bitPattern: $0) })
        retrievals = Int(r)
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "capacity": .int(Int64(options.capacity)), "replay_per_batch": .int(Int64(options.replayPerBatch)),
            "candidates": .int(Int64(options.candidates)), "virtual_lr": .double(options.virtualLR),
            "buffer_samples": .int(Int64(buffer.count)), "offered": .int(Int64(buffer.offered)),
            "retrieving_steps": .int(Int64(retrievals)),
            "criterion": .string("replay the k of C random buffer samples with the largest CE(theta - lr grad L_in) - CE(theta)"),
        ])
    }
}

extension MaximallyInterferedRetrieval {
    /// `{"type": "mir", "capacity": 200, "candidates": 50, "replay_per_batch": 10, "virtual_lr": 0.1}`.
    public struct Options: PluginOptions {
        public static let typeName = "mir"
        public static let summary = "MIR (Aljundi 2019): replay the buffer samples a virtual step on the batch hurts most"
        public static let storesSamples = true
        public var capacity = 200
        /// C: random buffer samples scored per step (the authors' `subsample`, 50).
        public var candidates = 50
        /// k: replayed rows per step (the authors' buffer batch size, 10).
        public var replayPerBatch = 10
        /// η of the virtual SGD step (the run's learning rate in the authors' code).
        public var virtualLR = 0.1

        enum Keys: String, CodingKey, CaseIterable {
            case capacity, candidates
            case replayPerBatch = "replay_per_batch"
            case virtualLR = "virtual_lr"
        }

        public init(capacity: Int = 200, candidates: Int = 50, replayPerBatch: Int = 10, virtualLR: Double = 0.1) {
            (self.capacity, self.candidates, self.replayPerBatch, self.virtualLR) = (capacity, candidates, replayPerBatch, virtualLR)
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            capacity = try c.decode(.capacity, default: 200)
            try c.require((1...10_000_000).contains(capacity), .capacity, "capacity must be in 1...10000000, got \(capacity)")
            candidates = try c.decode(.candidates, default: 50)
            try c.require((1...100_000).contains(candidates), .candidates, "candidates must be in 1...100000, got \(candidates)")
            replayPerBatch = try c.decode(.replayPerBatch, default: 10)
            try c.require((1...candidates).contains(replayPerBatch), .replayPerBatch,
                          "replay_per_batch must be in 1...candidates (\(candidates)), got \(replayPerBatch)")
            virtualLR = try c.decode(.virtualLR, default: 0.1)
            try c.require(virtualLR > 0 && virtualLR.isFinite, .virtualLR, "virtual_lr must be a finite number > 0, got \(virtualLR)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(capacity, forKey: .capacity)
            try c.encode(candidates, forKey: .candidates)
            try c.encode(replayPerBatch, forKey: .replayPerBatch)
            try c.encode(virtualLR, forKey: .virtualLR)
        }

        public func makePlugin() -> any StrategyPlugin { MaximallyInterferedRetrieval(options: self) }

        /// The buffer of `capacity` samples and `replay_per_batch` rows per batch.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(Double(capacity) * shape.sampleBytes(), key: Keys.capacity.path)],
                             extraRowsPerBatch: Double(replayPerBatch))
        }
    }
}
