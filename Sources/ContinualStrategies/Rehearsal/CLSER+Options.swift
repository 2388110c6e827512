import ContinualCore

extension CLSER {
    public func checkpointState() -> PluginState {
        var s = buffer.state(with: streams)
        s.floats["plastic"] = plastic?.parameters ?? []
        s.floats["stable"] = stable?.parameters ?? []
        s.ints["rng.ema"] = emaRNG.state.map { Int64(bitPattern: $0) }
        s.ints["steps"] = [Int64(globalStep), Int64(plasticUpdates), Int64(stableUpdates), Int64(stableTargets), Int64(targets)]
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        streams = try buffer.restore(state, plugin: "cls_er")
        guard let p = state.floats["plastic"], p.count == plastic?.parameterCount, let s = state.floats["stable"], s.count == p.count,
              let r = state.ints["rng.ema"], r.count == 4, let n = state.ints["steps"], n.count == 5, n.allSatisfy({ $0 >= 0 }) else {
            throw CheckpointError.mismatch("cls_er state lacks its memories, random stream or step counts, or they do not fit the model")
        }
        plastic?.parameters = p
        stable?.parameters = s
        emaRNG = RandomSource(state: r.map { UInt64(bitPattern: $0) })
        (globalStep, plasticUpdates, stableUpdates, stableTargets, targets) = (Int(n[0]), Int(n[1]), Int(n[2]), Int(n[3]), Int(n[4]))
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "capacity": .int(Int64(options.capacity)), "replay_per_batch": .int(Int64(options.replayPerBatch)),
            "reg_weight": .double(options.regWeight),
            "plastic_update_frequency": .double(options.plasticUpdateFrequency), "plastic_alpha": .double(options.plasticAlpha),
            "stable_update_frequency": .double(options.stableUpdateFrequency), "stable_alpha": .double(options.stableAlpha),
            "inference": .string(options.inference.rawValue),
            "buffer_samples": .int(Int64(buffer.count)), "offered": .int(Int64(buffer.offered)),
            "steps": .int(Int64(globalStep)), "plastic_updates": .int(Int64(plasticUpdates)), "stable_updates": .int(Int64(stableUpdates)),
            "stable_target_fraction": .double(targets > 0 ? Double(stableTargets) / Double(targets) : .nan),
            "objective": .string("mean CE(own + replayed rows) + reg_weight · mean over replayed rows and logits of (z − Z)², "
                + "Z the logits of the stable memory where it gives the true label more probability than the plastic one, else the plastic's"),
        ], arrays: [
            "stable_parameters": PluginReport.Array(values: (stable?.parameters ?? []).map(Double.init), shape: [stable?.parameterCount ?? 0],
                                                    attributes: ["meaning": .string("the stable memory θ_S at the end (the model that predicts when inference is \"stable\")")]),
        ])
    }

    /// `{"type": "cls_er", "capacity": 200, "replay_per_batch": 32, "reg_weight": 0.1, ...}`.
    public struct Options: PluginOptions {
        public static let typeName = "cls_er"
        public static let summary = "CLS-ER (Arani 2022): replay with plastic and stable EMA memories and a consistency loss"
        public static let storesSamples = true
        public static let composition = PluginComposition.soleRehearsal

        /// Which network predicts at evaluation.
        public enum Inference: String, CaseIterable, Sendable, Codable { case stable, plastic, working }

        public var capacity = 200
        /// Replayed rows per step (the authors' `minibatch_size`).
        public var replayPerBatch = 32
        /// λ of the consistency term (the authors' default 0.1).
        public var regWeight = 0.1
        /// r_P, α_P, r_S, α_S (the authors' defaults 0.9, 0.999, 0.7, 0.999).
        public var plasticUpdateFrequency = 0.9
        public var plasticAlpha = 0.999
        public var stableUpdateFrequency = 0.7
        public var stableAlpha = 0.999
        public var inference = Inference.stable

        enum Keys: String, CodingKey, CaseIterable {
            case capacity, inference
            case replayPerBatch = "replay_per_batch", regWeight = "reg_weight"
            case plasticUpdateFrequency = "plastic_update_frequency", plasticAlpha = "plastic_alpha"
            case stableUpdateFrequency = "stable_update_frequency", stableAlpha = "stable_alpha"
        }

        public init() {}

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            capacity = try c.decode(.capacity, default: 200)
            try c.require((1...10_000_000).contains(capacity), .capacity, "capacity must be in 1...10000000, got \(capacity)")
            replayPerBatch = try c.decode(.replayPerBatch, default: 32)
            try c.require((1...100_000).contains(replayPerBatch), .replayPerBatch, "replay_per_batch must be in 1...100000, got \(replayPerBatch)")
            regWeight = try c.decode(.regWeight, default: 0.1)
            try c.require(regWeight >= 0 && regWeight.isFinite, .regWeight, "reg_weight must be a finite number ≥ 0, got \(regWeight)")
            for (key, value) in [(Keys.plasticUpdateFrequency, \Options.plasticUpdateFrequency), (.stableUpdateFrequency, \.stableUpdateFrequency)] {
                self[keyPath: value] = try c.decode(key, default: self[keyPath: value])
                try c.require((0...1).contains(self[keyPath: value]), key, "\(key.rawValue) must be a probability in [0, 1], got \(self[keyPath: value])")
            }
            for (key, value) in [(Keys.plasticAlpha, \Options.plasticAlpha), (.stableAlpha, \.stableAlpha)] {
                self[keyPath: value] = try c.decode(key, default: self[keyPath: value])
                try c.require((0...1).contains(self[keyPath: value]), key, "\(key.rawValue) must be in [0, 1] (the EMA decay), got \(self[keyPath: value])")
            }
            inference = try c.decodeChoice(.inference, default: .stable)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(capacity, forKey: .capacity)
            try c.encode(replayPerBatch, forKey: .replayPerBatch)
            try c.encode(regWeight, forKey: .regWeight)
            try c.encode(plasticUpdateFrequency, forKey: .plasticUpdateFrequency)
            try c.encode(plasticAlpha, forKey: .plasticAlpha)
            try c.encode(stableUpdateFrequency, forKey: .stableUpdateFrequency)
            try c.encode(stableAlpha, forKey: .stableAlpha)
            try c.encode(inference.rawValue, forKey: .inference)
        }

        public func makePlugin() -> any StrategyPlugin { CLSER(options: self) }

        /// The buffer of `capacity` samples, the two memories and `replay_per_batch` rows per batch.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(Double(capacity) * shape.sampleBytes(), key: Keys.capacity.path),
                                      .init(8 * shape.parameters, key: Keys.regWeight.path)],
                             extraRowsPerBatch: Double(replayPerBatch))
        }
    }
}
