import ContinualCore

/// Dark Experience Replay, DER and DER++ (Buzzega et al., NeurIPS 2020): a reservoir buffer keeps
/// samples with the logits the model gave them when they were seen; later steps pull the current
/// logits on replayed samples towards the stored ones (MSE, weight α), and DER++ also trains on
/// the replayed labels (cross-entropy, weight β).
///
/// Objective per step, as in the paper and Mammoth:
///   mean_own CE(x, y) + α · mean_{B₁} mean_c (z_c(x) − z*_c)² [+ β · mean_{B₂} CE(x, y)],
/// with B₁, B₂ two independent draws of `replay_per_batch` samples from the buffer (B₂ only for
/// DER++). The loop averages its task loss over every batch row; replayed rows are appended with
/// `Batch.noTaskLoss`, and this term rescales the own rows' gradient by (batch rows / own rows)
/// and adds the replay terms, so the gradient is exactly the one above. (The run's loss curve,
/// the loop's task loss per row, is therefore the own rows' CE times own/batch rows.) The buffer
/// is offered every own row of every step together with its logits at that step (reservoir,
/// `capacity` samples). Uses the full softmax for β's CE.
///
/// Replay targets are the buffer's contents *before* this step's own rows are offered: the
/// stored logits (and DER++'s labels) of every drawn slot are copied when the rows are drawn
/// (`extendBatch`), so an own row that evicts a drawn slot in the same step cannot hand a
/// replayed row a foreign target — on any route of a multi-head batch, whose routes the loop
/// passes in separate `addBatchLoss` calls. This is Mammoth's order (targets read from the
/// buffer, the buffer updated after the optimizer step). Only the order matters: the offers
/// themselves are the same rows, logits and random draws as Mammoth's post-step update.
public struct DarkExperienceReplay: BatchLossTerm {
    public var name: String { plusPlus ? DERPlusPlusOptions.typeName : DEROptions.typeName }
    public let plusPlus: Bool
    public let alpha: Double
    public let beta: Double
    public let capacity: Int
    public let replayPerBatch: Int
    var buffer = LogitReservoir(dimension: 0, logitCount: 1, capacity: 0)
    private var streams = ReservoirStreams()
    /// This step's appended rows: (batch row, buffer slot) for the MSE and the CE draws.
    private var mseRows: [(Int, Int)] = []
    private var ceRows: [(Int, Int)] = []
    /// The drawn slots' stored logits (`mseRows.count × L`) and labels (`ceRows.count`), copied
    /// at draw time: the targets of this step whatever the own rows do to the buffer.
    private var mseTargets: [Float] = []
    private var ceLabels: [Int32] = []
    private var flopsPerSample = 0
    /// The prefix of the run's random streams (`der.buffer`, `der.batch`) and whether own rows
    /// are offered to the reservoir: X-DER reuses these terms with its own streams and fills the
    /// buffer itself at the end of each experience.
    let streamName: String
    let offersOwnRows: Bool

    public init(plusPlus: Bool, alpha: Double, beta: Double, capacity: Int, replayPerBatch: Int) {
        self.init(plusPlus: plusPlus, alpha: alpha, beta: beta, capacity: capacity, replayPerBatch: replayPerBatch,
                  streamName: "der", offersOwnRows: true)
    }

    init(plusPlus: Bool, alpha: Double, beta: Double, capacity: Int, replayPerBatch: Int, streamName: String,
         offersOwnRows: Bool) {
        self.plusPlus = plusPlus
        self.alpha = alpha
        self.beta = beta
        self.capacity = capacity
        self.replayPerBatch = replayPerBatch
        self.streamName = streamName
        self.offersOwnRows = offersOwnRows
    }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        buffer = LogitReservoir(dimension: context.dimension, logitCount: model.logitCount, capacity: capacity)
        streams = ReservoirStreams(context, plugin: streamName)
        flopsPerSample = model.flopsPerTrainingSample
    }

    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        mseRows.removeAll(keepingCapacity: true)
        ceRows.removeAll(keepingCapacity: true)
        mseTargets.removeAll(keepingCapacity: true)
        ceLabels.removeAll(keepingCapacity: true)
        guard buffer.count > 0, replayPerBatch > 0 else { return }
        let L = buffer.logitCount
        for slot in buffer.draw(replayPerBatch, rng: &streams.batch) {
            mseRows.append((batch.count, mseRows.count))
            mseTargets.append(contentsOf: buffer.logits[(slot * L)..<((slot + 1) * L)])
            batch.append(features: buffer.row(slot), label: Batch.noTaskLoss, route: buffer.routes[slot])
        }
        guard plusPlus else { return }
        for slot in buffer.draw(replayPerBatch, rng: &streams.batch) {
            ceRows.append((batch.count, ceRows.count))
            ceLabels.append(buffer.labels[slot])
            batch.append(features: buffer.row(slot), label: Batch.noTaskLoss, route: buffer.routes[slot])
        }
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        let L = input.logitCount
        let n = input.batch.count, own = input.batch.ownCount
        var value = 0.0
        // The replayed rows were appended in order after the own rows: MSE rows, then CE rows;
        // each maps to its index in the targets copied at draw time.
        func slot(_ rows: [(Int, Int)], _ row: Int) -> Int? {
            guard let first = rows.first?.0, row >= first, row - first < rows.count else { return nil }
            return rows[row - first].1
        }
        let rescale = Float(n) / Float(max(own, 1))
        for (k, row) in input.rows.enumerated() {
            let z = input.logits + k * L, g = input.logitGradient + k * L
            if row < own {
                // Own rows: the loop's 1/n becomes 1/own (the mean over the incoming batch) ...
                if rescale != 1 { for c in 0..<L { g[c] *= rescale } }
                // ... and the buffer is offered the row with its logits at this step.
                if offersOwnRows { buffer.offer(features: input.batch.row(row), label: input.batch.labels[row],
                                                 route: input.batch.routes[row], logits: z, rng: &streams.buffer) }
            } else if let target = slot(mseRows, row), alpha > 0 {
                // α · mean over the draw and the logits of (z − z*)².
                let w = alpha / Double(mseRows.count * L)
                for c in 0..<L {
                    let d = Double(z[c]) - Double(mseTargets[target * L + c])
                    value += w * d * d
                    g[c] += Float(2 * w * d)
                }
            } else if let target = slot(ceRows, row), beta > 0 {
                let (ce, grad) = Self.crossEntropy(z, L: L, label: Int(ceLabels[target]))
                let w = beta / Double(ceRows.count)
                value += w * ce
                for c in 0..<L { g[c] += Float(w * grad[c]) }
            }
        }
        return value
    }

    /// CE of one row's logits and its gradient (binary: sigmoid; multi-class: softmax), float64.
    static func crossEntropy(_ z: UnsafePointer<Float>, L: Int, label: Int) -> (Double, [Double]) {
        if L == 1 {
            let x = Double(z[0]), y = label == 0 ? 0.0 : 1.0
            let p = x >= 0 ? 1 / (1 + _exp(-x)) : _exp(x) / (1 + _exp(x))
            return (max(x, 0) - y * x + _log1p(_exp(-abs(x))), [p - y])
        }
        var m = -Double.infinity
        for c in 0..<L { m = max(m, Double(z[c])) }
        var s = 0.0
        for c in 0..<L { s += _exp(Double(z[c]) - m) }
        var grad = (0..<L).map { _exp(Double(z[$0]) - m) / s }
        grad[label] -= 1
        return (m + _log(s) - Double(z[label]), grad)
    }

    /// Stored samples and their logits; per step the replayed rows' forward and backward.
    public var resources: PluginResources {
        let rows = buffer.count == 0 ? 0 : min(buffer.count, replayPerBatch) * (plusPlus ? 2 : 1)
        return PluginResources(storedSampleBytes: buffer.bytes, extraRowsPerBatch: rows,
                               extraFLOPsPerStep: rows * 8 * buffer.logitCount)
    }

    public func checkpointState() -> PluginState { buffer.state(with: streams) }
    public mutating func restore(from state: PluginState) throws { streams = try buffer.restore(state, plugin: name) }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "alpha": .double(alpha), "beta": .double(plusPlus ? beta : 0), "capacity": .int(Int64(capacity)),
            "replay_per_batch": .int(Int64(replayPerBatch)), "buffer_samples": .int(Int64(buffer.count)),
            "offered": .int(Int64(buffer.offered)),
            "objective": .string(plusPlus ? "mean CE(own) + alpha * MSE(logits, stored logits) + beta * mean CE(replayed labels)"
                                          : "mean CE(own) + alpha * MSE(logits, stored logits)"),
        ])
    }
}

/// Options shared by `der` and `derpp`.
struct DERCoding {
    enum Keys: String, CodingKey, CaseIterable {
        case alpha, beta, capacity, replayPerBatch = "replay_per_batch"
    }

    static func decode(_ decoder: any Decoder, plusPlus: Bool) throws -> (Double, Double, Int, Int) {
        let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
        let alpha = try c.decode(.alpha, default: plusPlus ? 0.1 : 0.3)
        try c.require(alpha >= 0 && alpha.isFinite, .alpha, "alpha must be a finite number ≥ 0, got \(alpha)")
        let beta = try c.decode(.beta, default: plusPlus ? 0.5 : 0.0)
        try c.require(beta >= 0 && beta.isFinite, .beta, "beta must be a finite number ≥ 0, got \(beta)")
        try c.require(plusPlus || !c.contains(.beta), .beta, "beta belongs to derpp; der has no label term")
        let capacity = try c.decode(.capacity, default: 200)
        try c.require((0...10_000_000).contains(capacity), .capacity, "capacity must be in 0...10000000, got \(capacity)")
        let replay = try c.decode(.replayPerBatch, default: 32)
        try c.require((0...100_000).contains(replay), .replayPerBatch, "replay_per_batch must be in 0...100000, got \(replay)")
        return (alpha, beta, capacity, replay)
    }
}

/// `{"type": "der", "alpha": 0.3, "capacity": 200, "replay_per_batch": 32}`.
public struct DEROptions: PluginOptions {
    public static let typeName = "der"
    public static let storesSamples = true
    public static let summary = "dark experience replay (Buzzega 2020): replay stored logits (MSE)"
    public static let strengthKey: String? = "capacity"
    public var alpha = 0.3, capacity = 200, replayPerBatch = 32
    public init() {}
    public init(from decoder: any Decoder) throws {
        (alpha, _, capacity, replayPerBatch) = try DERCoding.decode(decoder, plusPlus: false)
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: DERCoding.Keys.self)
        try c.encode(alpha, forKey: .alpha)
        try c.encode(capacity, forKey: .capacity)
        try c.encode(replayPerBatch, forKey: .replayPerBatch)
    }
    public func makePlugin() -> any StrategyPlugin {
        DarkExperienceReplay(plusPlus: false, alpha: alpha, beta: 0, capacity: capacity, replayPerBatch: replayPerBatch)
    }
    /// The buffer of `capacity` samples with their logits, and `replay_per_batch` rows per batch.
    public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
        PlannedResources(memory: [.init(Double(capacity) * shape.sampleBytes(logits: shape.outputs), key: DERCoding.Keys.capacity.path)],
                         extraRowsPerBatch: Double(replayPerBatch))
    }
}

/// `{"type": "derpp", "alpha": 0.1, "beta": 0.5, "capacity": 200, "replay_per_batch": 32}`.
public struct DERPlusPlusOptions: PluginOptions {
    public static let typeName = "derpp"
    public static let storesSamples = true
    public static let summary = "DER++ (Buzzega 2020): replay stored logits (MSE) and labels (CE)"
    public static let strengthKey: String? = "capacity"
    public var alpha = 0.1, beta = 0.5, capacity = 200, replayPerBatch = 32
    public init() {}
    public init(from decoder: any Decoder) throws {
        (alpha, beta, capacity, replayPerBatch) = try DERCoding.decode(decoder, plusPlus: true)
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: DERCoding.Keys.self)
        try c.encode(alpha, forKey: .alpha)
        try c.encode(beta, forKey: .beta)
        try c.encode(capacity, forKey: .capacity)
        try c.encode(replayPerBatch, forKey: .replayPerBatch)
    }
    public func makePlugin() -> any StrategyPlugin {
        DarkExperienceReplay(plusPlus: true, alpha: alpha, beta: beta, capacity: capacity, replayPerBatch: replayPerBatch)
    }
    /// The buffer of `capacity` samples with their logits, and `replay_per_batch` rows per batch.
    public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
        PlannedResources(memory: [.init(Double(capacity) * shape.sampleBytes(logits: shape.outputs), key: DERCoding.Keys.capacity.path)],
                         extraRowsPerBatch: Double(replayPerBatch))
    }
}
