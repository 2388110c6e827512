import ContinualCore

/// `"training"`: epochs per experience, batch size and related switches.
public struct TrainingConfig: Codable, Sendable, Equatable {
    public var epochs = 1
    /// `"steps_per_experience"`: the budget in optimizer iterations per experience (van de Ven
    /// et al. 2022 give 2,000 per context; Hsu et al.'s 4 epochs of MNIST at batch 128 are ≈ 375)
    /// instead of `epochs`; exclusive with it. One step is one optimizer update on one batch,
    /// however the batch is assembled (replayed rows added to it, joint's union of the data):
    /// see `TrainingPass.maxSteps`. Written to the resolved config only when set.
    public var stepsPerExperience: Int? = nil
    /// `"flops_per_experience"`: the budget in training FLOPs per experience (equal-compute
    /// comparisons, Prabhu et al. 2023; see `TrainingOptions.flopsPerExperience`); exclusive with
    /// `epochs` and `steps_per_experience`. Written to the resolved config only when set.
    public var flopsPerExperience: Double? = nil
    public var batchSize = 32
    public var shuffle = true
    public var resetOptimizer = true
    public var evalBatchSize = 512
    /// Mean epoch loss above which a run is reported as diverged; nil (JSON null) disables it.
    public var divergenceLoss: Double? = 1e4
    /// `"early_stopping": {"patience": N, "min_delta": x}`; null or absent = off. Written to the
    /// resolved config only when set, so run ids of configs without it do not change.
    public var earlyStopping: EarlyStopping? = nil
    /// `batch` (experience by experience, `epochs` passes) or `prequential` (online: predict each
    /// training sample, then learn from it; one pass; see PrequentialTrainer).
    public var mode: Mode = .batch
    /// Prequential mode: accuracy is averaged over the last `window` predictions...
    public var window = 100
    /// ...and recorded every `record_every` samples.
    public var recordEvery = 10

    public enum Mode: String, Codable, Sendable, CaseIterable { case batch, prequential }

    /// `"all"` (default) or `"seen"`: the softmax over every class or over the classes seen so
    /// far (see `ActiveOutputs`). Written to the resolved config only when `seen`.
    public var activeOutputs: ActiveOutputs = .all

    /// `"lr_schedule"`: how the learning rate changes within each experience (see
    /// `LearningRateSchedule`); absent = constant. Written to the resolved config only when set.
    public var learningRateSchedule: LearningRateSchedule? = nil

    /// `"precision"`: `"float32"` (default), `"bfloat16"` or `"float16"`, emulated exactly with
    /// float32 master weights (see `TrainingPrecision` for which tensors round); `"loss_scale"`:
    /// `"dynamic"` (float16's default; or `{"initial": 65536, "growth_interval": 2000}`), `"none"`
    /// (bfloat16's default) or a number (a fixed scale). Written to the resolved config only when
    /// not float32.
    public var precision: TrainingPrecision = .float32

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case epochs, stepsPerExperience = "steps_per_experience", flopsPerExperience = "flops_per_experience", batchSize = "batch_size", shuffle, resetOptimizer = "reset_optimizer"
        case evalBatchSize = "eval_batch_size", divergenceLoss = "divergence_loss"
        case earlyStopping = "early_stopping"
        case mode, window, recordEvery = "record_every"
        case activeOutputs = "active_outputs"
        case learningRateSchedule = "lr_schedule"
        case precision, lossScale = "loss_scale"
    }

    enum LossScaleKeys: String, CodingKey, CaseIterable {
        case initial, growthInterval = "growth_interval"
    }

    enum ScheduleKeys: String, CodingKey, CaseIterable {
        case type, everyEpochs = "every_epochs", gamma, minFactor = "min_factor", warmupSteps = "warmup_steps"
    }

    enum ScheduleType: String, CaseIterable { case constant, step, cosine }

    enum EarlyStoppingKeys: String, CodingKey, CaseIterable {
        case patience, minDelta = "min_delta", window, tolerance
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        epochs = try c.decode(.epochs, default: 1)
        stepsPerExperience = try Self.decodeSteps(c)
        flopsPerExperience = try Self.decodeFLOPs(c)
        batchSize = try c.decode(.batchSize, default: 32)
        shuffle = try c.decode(.shuffle, default: true)
        resetOptimizer = try c.decode(.resetOptimizer, default: true)
        evalBatchSize = try c.decode(.evalBatchSize, default: 512)
        if c.contains(.divergenceLoss) {
            divergenceLoss = try c.decodeNil(forKey: .divergenceLoss) ? nil : c.decode(Double.self, forKey: .divergenceLoss)
        }
        if c.contains(.earlyStopping), try !c.decodeNil(forKey: .earlyStopping) {
            earlyStopping = try Self.decodeEarlyStopping(c)
        }
        precision = try Self.decodePrecision(c)
        try c.require((divergenceLoss ?? 1) > 0, .divergenceLoss, "must be > 0 or null, got \(divergenceLoss ?? 0)")
        if c.contains(.learningRateSchedule) {
            learningRateSchedule = try Self.decodeSchedule(c)
        }
        mode = try c.decodeChoice(.mode, default: .batch)
        activeOutputs = try c.decodeChoice(.activeOutputs, default: .all)
        window = try c.decode(.window, default: 100)
        recordEvery = try c.decode(.recordEvery, default: 10)
        try c.require(window >= 1, .window, "must be ≥ 1, got \(window)")
        try c.require(recordEvery >= 1, .recordEvery, "must be ≥ 1, got \(recordEvery)")
        try c.require(mode == .prequential || (!c.contains(.window) && !c.contains(.recordEvery)), .window,
                      "window and record_every apply only to \"mode\": \"prequential\"")
        try c.require(stepsPerExperience == nil || mode == .batch, .stepsPerExperience,
                      "applies only to \"mode\": \"batch\" (a prequential run passes over its stream once)")
        try c.require(flopsPerExperience == nil || (mode == .batch && earlyStopping == nil), .flopsPerExperience,
                      "applies only to \"mode\": \"batch\" without \"early_stopping\"")
        try c.require(stepsPerExperience == nil || earlyStopping == nil, .stepsPerExperience,
                      "a steps budget is fixed; \"early_stopping\" ends an epochs budget early — use one or the other")
        try c.require(epochs >= 1 && epochs <= 100_000, .epochs, "must be in 1...100000, got \(epochs)")
        try c.require(batchSize >= 1 && batchSize <= 1_000_000, .batchSize, "must be in 1...1000000, got \(batchSize)")
        try c.require(evalBatchSize >= 1, .evalBatchSize, "must be ≥ 1, got \(evalBatchSize)")
    }

    /// `"steps_per_experience"` when given (nil otherwise): a budget exclusive with `"epochs"`.
    private static func decodeSteps(_ c: KeyedDecodingContainer<CodingKeys>) throws -> Int? {
        guard c.contains(.stepsPerExperience) else { return nil }
        let steps: Int = try c.decode(.stepsPerExperience, default: 1)
        try c.require(!c.contains(.epochs), .stepsPerExperience,
                      "give either \"epochs\" or \"steps_per_experience\" (the training budget per experience), not both")
        try c.require(steps >= 1 && steps <= 100_000_000, .stepsPerExperience, "must be in 1...100000000, got \(steps)")
        return steps
    }

    /// `"flops_per_experience"` when given (nil otherwise): exclusive with both other budgets.
    private static func decodeFLOPs(_ c: KeyedDecodingContainer<CodingKeys>) throws -> Double? {
        guard c.contains(.flopsPerExperience) else { return nil }
        let flops: Double = try c.decode(.flopsPerExperience, default: 1)
        try c.require(!c.contains(.epochs) && !c.contains(.stepsPerExperience), .flopsPerExperience,
                      "give one training budget per experience: \"epochs\", \"steps_per_experience\" or \"flops_per_experience\"")
        try c.require(flops >= 1 && flops <= 1e18, .flopsPerExperience, "must be a number in 1...1e18 (FLOPs), got \(flops)")
        return flops
    }

    /// The non-null `"early_stopping"` object: patience and min_delta, or the windowed rule.
    private static func decodeEarlyStopping(_ c: KeyedDecodingContainer<CodingKeys>) throws -> EarlyStopping {
        let e = try c.superDecoder(forKey: .earlyStopping).strictContainer(keyedBy: EarlyStoppingKeys.self)
        let windowed = e.contains(.window) || e.contains(.tolerance)
        try e.require(!windowed || (!e.contains(.patience) && !e.contains(.minDelta)), windowed ? .window : .patience,
                      "give either {\"patience\", \"min_delta\"} or {\"window\", \"tolerance\"} (two stopping rules), not both")
        let patience: Int = try e.decode(.patience, default: 3)
        let minDelta: Double = try e.decode(.minDelta, default: 0)
        try e.require(patience >= 1, .patience, "must be ≥ 1, got \(patience)")
        try e.require(minDelta >= 0 && minDelta.isFinite, .minDelta, "must be a finite number ≥ 0, got \(minDelta)")
        guard windowed else { return EarlyStopping(patience: patience, minDelta: minDelta) }
        let window: Int = try e.decode(.window, default: 3)
        let tolerance: Double = try e.decode(.tolerance, default: 0)
        try e.require(window >= 1 && window <= 100_000, .window, "must be in 1...100000 (epochs), got \(window)")
        try e.require(tolerance >= 0 && tolerance.isFinite, .tolerance,
                      "must be a finite number ≥ 0 (nats per sample; 0 = never stop), got \(tolerance)")
        return EarlyStopping(window: window, tolerance: tolerance)
    }

    /// `"precision"` and its `"loss_scale"` (which needs a precision other than float32).
    private static func decodePrecision(_ c: KeyedDecodingContainer<CodingKeys>) throws -> TrainingPrecision {
        let format: NumericFormat = try c.decodeChoice(.precision, default: .float32)
        var scaling: LossScaling? = nil
        if c.contains(.lossScale) {
            try c.require(format != .float32, .lossScale, "applies only with \"precision\": \"float16\" or \"bfloat16\"")
            if let word = try? c.decode(String.self, forKey: .lossScale) {
                try c.require(word == "dynamic" || word == "none", .lossScale,
                              "must be \"dynamic\", \"none\", a number > 0 or {\"initial\", \"growth_interval\"}, got \"\(word)\"")
                scaling = word == "none" ? LossScaling.none : .dynamic()
            } else if let value = try? c.decode(Double.self, forKey: .lossScale) {
                try c.require(value > 0 && value <= 1e30, .lossScale, "a fixed scale must be in (0, 1e30], got \(value)")
                scaling = .fixed(Float(value))
            } else {
                let l = try c.superDecoder(forKey: .lossScale).strictContainer(keyedBy: LossScaleKeys.self)
                let initial: Double = try l.decode(.initial, default: 65536)
                let interval: Int = try l.decode(.growthInterval, default: 2000)
                try l.require(initial > 0 && initial <= 1e30, .initial, "must be in (0, 1e30], got \(initial)")
                try l.require(interval >= 1 && interval <= 1_000_000_000, .growthInterval, "must be in 1...1000000000 (steps), got \(interval)")
                scaling = .dynamic(initial: Float(initial), growthInterval: interval)
            }
        }
        return TrainingPrecision(format: format, lossScaling: scaling)
    }

    /// The `"lr_schedule"` object: its `type`, warm-up, and only the keys that type takes.
    private static func decodeSchedule(_ c: KeyedDecodingContainer<CodingKeys>) throws -> LearningRateSchedule {
        let l = try c.superDecoder(forKey: .learningRateSchedule).strictContainer(keyedBy: ScheduleKeys.self)
        guard l.contains(.type) else {
            throw DecodingError.keyNotFound(ScheduleKeys.type, .init(codingPath: l.codingPath,
                debugDescription: "required key is missing; allowed types: constant, step, cosine"))
        }
        let type: ScheduleType = try l.decodeChoice(.type, default: .constant)
        let warmup: Int = try l.decode(.warmupSteps, default: 0)
        try l.require(warmup >= 0 && warmup <= 1_000_000_000, .warmupSteps, "must be in 0...1000000000, got \(warmup)")
        let own: [ScheduleType: Set<ScheduleKeys>] = [.constant: [], .step: [.everyEpochs, .gamma], .cosine: [.minFactor]]
        for key in [ScheduleKeys.everyEpochs, .gamma, .minFactor] where l.contains(key) && !own[type]!.contains(key) {
            let takes = (own[type]!.map(\.stringValue).sorted() + ["type", "warmup_steps"]).joined(separator: ", ")
            try l.require(false, key, "\"\(key.stringValue)\" belongs to a \(key == .minFactor ? "cosine" : "step") schedule; "
                          + "a \(type.rawValue) schedule takes: \(takes)")
        }
        switch type {
        case .constant:
            return LearningRateSchedule(.constant, warmupSteps: warmup)
        case .step:
            let every: Int = try l.decode(.everyEpochs, default: 1)
            let gamma: Double = try l.decode(.gamma, default: 0.1)
            try l.require(every >= 1, .everyEpochs, "must be ≥ 1, got \(every)")
            try l.require(gamma > 0 && gamma <= 1, .gamma, "must be in (0, 1], got \(gamma)")
            return LearningRateSchedule(.step(everyEpochs: every, gamma: gamma), warmupSteps: warmup)
        case .cosine:
            let floor: Double = try l.decode(.minFactor, default: 0)
            try l.require(floor >= 0 && floor <= 1, .minFactor, "must be in [0, 1], got \(floor)")
            return LearningRateSchedule(.cosine(minimumFactor: floor), warmupSteps: warmup)
        }
    }

    /// All options; the prequential ones only in prequential mode, so batch runs keep the
    /// canonical JSON (and run ids) they had before the mode existed.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if let stepsPerExperience {
            try c.encode(stepsPerExperience, forKey: .stepsPerExperience)
        } else if let flopsPerExperience {
            try c.encode(flopsPerExperience, forKey: .flopsPerExperience)
        } else {
            try c.encode(epochs, forKey: .epochs)
        }
        try c.encode(batchSize, forKey: .batchSize)
        try c.encode(shuffle, forKey: .shuffle)
        try c.encode(resetOptimizer, forKey: .resetOptimizer)
        try c.encode(evalBatchSize, forKey: .evalBatchSize)
        if let divergenceLoss { try c.encode(divergenceLoss, forKey: .divergenceLoss) } else { try c.encodeNil(forKey: .divergenceLoss) }
        if let earlyStopping, earlyStopping.window == nil {
            var e = c.nestedContainer(keyedBy: EarlyStoppingKeys.self, forKey: .earlyStopping)
            try e.encode(earlyStopping.patience, forKey: .patience)
            try e.encode(earlyStopping.minDelta, forKey: .minDelta)
        }
        if let w = earlyStopping?.window, let earlyStopping {
            var e = c.nestedContainer(keyedBy: EarlyStoppingKeys.self, forKey: .earlyStopping)
            try e.encode(w, forKey: .window)
            try e.encode(earlyStopping.tolerance, forKey: .tolerance)
        }
        if precision.isMixed {
            try c.encode(precision.format, forKey: .precision)
            switch precision.lossScaling {
            case .none: try c.encode("none", forKey: .lossScale)
            case .fixed(let s): try c.encode(Double(s), forKey: .lossScale)
            case let .dynamic(initial, _, _, interval):
                var l = c.nestedContainer(keyedBy: LossScaleKeys.self, forKey: .lossScale)
                try l.encode(Double(initial), forKey: .initial)
                try l.encode(interval, forKey: .growthInterval)
            }
        }
        if activeOutputs != .all { try c.encode(activeOutputs, forKey: .activeOutputs) }
        if let schedule = learningRateSchedule {
            var l = c.nestedContainer(keyedBy: ScheduleKeys.self, forKey: .learningRateSchedule)
            switch schedule.shape {
            case .constant: try l.encode("constant", forKey: .type)
            case let .step(every, gamma):
                try l.encode("step", forKey: .type)
                try l.encode(every, forKey: .everyEpochs)
                try l.encode(gamma, forKey: .gamma)
            case .cosine(let floor):
                try l.encode("cosine", forKey: .type)
                try l.encode(floor, forKey: .minFactor)
            }
            try l.encode(schedule.warmupSteps, forKey: .warmupSteps)
        }
        if mode == .prequential {
            try c.encode(mode, forKey: .mode)
            try c.encode(window, forKey: .window)
            try c.encode(recordEvery, forKey: .recordEvery)
        }
    }

    /// Passes over the training data the budget amounts to, for estimates made before training:
    /// `epochs`; `steps_per_experience × batch_size` rows over `trainPerExperience` rows; or, for
    /// a FLOPs budget, the rows `flops_per_experience` pays for at `flopsPerRow` (the estimate's
    /// cost of one training row, forward and backward) over `trainPerExperience` rows. Replayed
    /// rows and penalty terms make a method's real steps under a FLOPs budget fewer, so this is
    /// an upper bound for them and exact for naive training up to the cost model's constant.
    public func epochsEquivalent(trainPerExperience: Double, flopsPerRow: Double) -> Double {
        if let flops = flopsPerExperience {
            return Double(flops) / max(flopsPerRow, 1) / max(trainPerExperience, 1)
        }
        guard let steps = stepsPerExperience else { return Double(epochs) }
        return Double(steps) * Double(batchSize) / max(trainPerExperience, 1)
    }

    public var options: TrainingOptions {
        var options = TrainingOptions(epochs: epochs, stepsPerExperience: stepsPerExperience, flopsPerExperience: flopsPerExperience,
                        batchSize: batchSize, shuffle: shuffle,
                        resetOptimizerPerExperience: resetOptimizer, evaluationBatchSize: evalBatchSize,
                        divergenceLoss: divergenceLoss, earlyStopping: earlyStopping, activeOutputs: activeOutputs,
                        learningRateSchedule: learningRateSchedule ?? LearningRateSchedule())
        options.precision = precision
        return options
    }
}
