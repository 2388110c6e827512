import ContinualCore

extension XDER {
    /// `{"type": "xder", "alpha": 0.3, "beta": 0.8, "gamma": 0.85, "capacity": 200, "replay_per_batch": 32}`.
    public struct Options: PluginOptions {
        public static let typeName = "xder"
        public static let summary = "X-DER (Boschini 2022): DER++ on a class-balanced buffer whose stored logits are rewritten as classes are learned"
        public static let storesSamples = true
        public static let strengthKey: String? = "capacity"
        /// Weight of the MSE on stored logits and of the CE on stored labels (Mammoth's
        /// seq-cifar100 buffer-500 configuration: 0.3 and 0.8).
        public var alpha = 0.3
        public var beta = 0.8
        /// γ of the logit update (Mammoth's default 0.85).
        public var gamma = 0.85
        /// Buffer entries in all classes together, and stored rows per replay draw.
        public var capacity = 200
        public var replayPerBatch = 32
        /// The two updates of stored logits (both on in the paper; both off: DER++'s terms on
        /// X-DER's buffer).
        public var futureUpdate = true
        public var pastUpdate = true

        enum Keys: String, CodingKey, CaseIterable {
            case alpha, beta, gamma, capacity
            case replayPerBatch = "replay_per_batch"
            case futureUpdate = "future_update"
            case pastUpdate = "past_update"
        }

        public init(alpha: Double = 0.3, beta: Double = 0.8, gamma: Double = 0.85, capacity: Int = 200,
                    replayPerBatch: Int = 32, futureUpdate: Bool = true, pastUpdate: Bool = true) {
            (self.alpha, self.beta, self.gamma, self.capacity) = (alpha, beta, gamma, capacity)
            (self.replayPerBatch, self.futureUpdate, self.pastUpdate) = (replayPerBatch, futureUpdate, pastUpdate)
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            alpha = try c.decode(.alpha, default: 0.3)
            try c.require(alpha >= 0 && alpha.isFinite, .alpha, "alpha must be a finite number ≥ 0, got \(alpha)")
            beta = try c.decode(.beta, default: 0.8)
            try c.require(beta >= 0 && beta.isFinite, .beta, "beta must be a finite number ≥ 0, got \(beta)")
            gamma = try c.decode(.gamma, default: 0.85)
            try c.require(gamma > 0 && gamma <= 1, .gamma, "gamma must be in (0, 1], got \(gamma)")
            capacity = try c.decode(.capacity, default: 200)
            try c.require((0...10_000_000).contains(capacity), .capacity, "capacity must be in 0...10000000, got \(capacity)")
            replayPerBatch = try c.decode(.replayPerBatch, default: 32)
            try c.require((0...100_000).contains(replayPerBatch), .replayPerBatch,
                          "replay_per_batch must be in 0...100000, got \(replayPerBatch)")
            futureUpdate = try c.decode(.futureUpdate, default: true)
            pastUpdate = try c.decode(.pastUpdate, default: true)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(alpha, forKey: .alpha)
            try c.encode(beta, forKey: .beta)
            try c.encode(gamma, forKey: .gamma)
            try c.encode(capacity, forKey: .capacity)
            try c.encode(replayPerBatch, forKey: .replayPerBatch)
            try c.encode(futureUpdate, forKey: .futureUpdate)
            try c.encode(pastUpdate, forKey: .pastUpdate)
        }

        public func makePlugin() -> any StrategyPlugin { XDER(options: self) }

        /// The buffer of `capacity` samples with their logits, and two draws of
        /// `replay_per_batch` rows per batch.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(Double(capacity) * shape.sampleBytes(logits: shape.outputs), key: Keys.capacity.path)],
                             extraRowsPerBatch: Double(2 * replayPerBatch))
        }
    }
}
