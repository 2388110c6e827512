import ContinualCore

/// ER-ACE, experience replay with the asymmetric cross-entropy (Caccia et al., ICLR 2022, "New
/// insights on reducing abrupt representation change in online continual learning").
///
/// Objective per step, as in the paper (Eq. 3) and Mammoth's `er_ace`:
///   mean_{own rows} CE over the classes present in the incoming batch
///   + mean_{replayed rows} CE over the active classes (all, or those seen so far),
/// the replayed rows being `replay_per_batch` samples drawn uniformly from a reservoir buffer of
/// `capacity` samples (Algorithm R) that is offered every incoming row. Masking the incoming
/// rows' softmax to the classes they contain keeps new classes from pushing down the logits of
/// old ones — the abrupt drift of old representations ER suffers at each class boundary — while
/// the replayed rows learn to tell old and new apart.
///
/// How it sits on the hooks: the replayed rows are appended with their labels, so the loop gives
/// every row its usual gradient (1/n)(p − y) with p the softmax over the active classes; this
/// batch-loss term then removes exactly that share and puts in the objective's (own rows:
/// (1/own)(p_present − y); replayed rows: (1/replayed)(p − y)), leaving any other term's share
/// untouched. Choices where implementations differ:
/// - The mask is the set of classes among the batch's own rows in every experience, the first
///   included (the paper's definition; Mammoth masks only from the second task on, which is the
///   same when the first experience's batches hold all of its classes).
/// - Binary heads (one logit) have nothing to mask: the incoming rows keep the plain CE, so the
///   method is ER with the objective's per-part means.
/// - Buffer updates happen at every step (online, as in the paper), after the step's replay draw.
public struct ERACE: BatchLossTerm {
    public var name: String { Options.typeName }
    public let options: Options
    var buffer = LogitReservoir(dimension: 0, logitCount: 1, capacity: 0)
    private var streams = ReservoirStreams()
    /// Classes among this step's own rows.
    private var present: [Bool] = []
    private var replayed = 0
    private var logitCount = 1

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        logitCount = model.logitCount
        buffer = LogitReservoir(dimension: context.dimension, logitCount: logitCount, capacity: options.capacity)
        streams = ReservoirStreams(context, plugin: "er_ace")
    }

    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        present = [Bool](repeating: false, count: max(logitCount, 1))
        for i in 0..<batch.ownCount {
            let y = Int(batch.labels[i])
            if y >= 0 && y < present.count { present[y] = true }
        }
        replayed = 0
        guard buffer.count > 0, options.replayPerBatch > 0 else { return }
        for slot in buffer.draw(options.replayPerBatch, rng: &streams.batch) {
            batch.append(features: buffer.row(slot), label: buffer.labels[slot], route: buffer.routes[slot])
            replayed += 1
        }
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        let L = input.logitCount
        let own = input.batch.ownCount
        let scale = Double(input.scale)
        var value = 0.0
        for (k, row) in input.rows.enumerated() {
            let z = input.logits + k * L, g = input.logitGradient + k * L
            let label = Int(input.batch.labels[row])
            // Rows another plugin added without a task loss (-1); a label outside the head
            // (only from an edited checkpoint: restores check) never indexes the logits.
            guard label >= 0, label < max(L, 2) else { continue }
            let loop = RowLoss.loopCrossEntropy(z, L: L, label: label, active: input.activeClasses)
            let loopGrad = RowLoss.ceGradient(loop.p, label: label)
            if row < own {
                let mine = L == 1 ? loop : RowLoss.crossEntropy(z, L: L, label: label) { present[$0] }
                let w = 1 / Double(max(own, 1))
                let grad = RowLoss.ceGradient(mine.p, label: label)
                for c in 0..<L { g[c] += Float(w * grad[c] - scale * loopGrad[c]) }
                value += w * mine.loss - scale * loop.loss
                buffer.offer(features: input.batch.row(row), label: input.batch.labels[row],
                             route: input.batch.routes[row], logits: nil, rng: &streams.buffer)
            } else if row < own + replayed {
                let w = 1 / Double(replayed) - scale
                for c in 0..<L { g[c] += Float(w * loopGrad[c]) }
                value += w * loop.loss
            }
        }
        return value
    }

    /// Stored samples; per step the replayed rows' forward and backward.
    public var resources: PluginResources {
        let rows = min(buffer.count, options.replayPerBatch)
        return PluginResources(storedSampleBytes: buffer.bytes, extraRowsPerBatch: rows,
                               extraFLOPsPerStep: 12 * (rows + options.replayPerBatch) * logitCount)
    }

    public func checkpointState() -> PluginState { buffer.state(with: streams) }
    public mutating func restore(from state: PluginState) throws { streams = try buffer.restore(state, plugin: "er_ace") }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "capacity": .int(Int64(options.capacity)), "replay_per_batch": .int(Int64(options.replayPerBatch)),
            "buffer_samples": .int(Int64(buffer.count)), "offered": .int(Int64(buffer.offered)),
            "objective": .string("mean CE(own rows, classes present in the batch) + mean CE(replayed rows, active classes)"),
        ])
    }

    /// `{"type": "er_ace", "capacity": 200, "replay_per_batch": 32}`.
    public struct Options: PluginOptions {
        public static let typeName = "er_ace"
        public static let summary = "ER-ACE (Caccia 2022): replay with the asymmetric cross-entropy"
        public static let storesSamples = true
        public static let composition = PluginComposition.soleRehearsal
        public var capacity = 200
        public var replayPerBatch = 32

        enum Keys: String, CodingKey, CaseIterable { case capacity, replayPerBatch = "replay_per_batch" }

        public init() {}
        public init(capacity: Int, replayPerBatch: Int) {
            self.capacity = capacity
            self.replayPerBatch = replayPerBatch
        }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            capacity = try c.decode(.capacity, default: 200)
            try c.require((1...10_000_000).contains(capacity), .capacity, "capacity must be in 1...10000000, got \(capacity)")
            replayPerBatch = try c.decode(.replayPerBatch, default: 32)
            try c.require((1...100_000).contains(replayPerBatch), .replayPerBatch,
                          "replay_per_batch must be in 1...100000, got \(replayPerBatch)")
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(capacity, forKey: .capacity)
            try c.encode(replayPerBatch, forKey: .replayPerBatch)
        }
        public func makePlugin() -> any StrategyPlugin { ERACE(options: self) }

        /// The buffer of `capacity` samples (with room for stored logits) and `replay_per_batch` rows per batch.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(Double(capacity) * shape.sampleBytes(logits: shape.outputs), key: Keys.capacity.path)],
                             extraRowsPerBatch: Double(replayPerBatch))
        }
    }
}
