import ContinualCore

extension Replay {
    /// `{"type": "replay", ...}` — see docs/strategies.md (Replay buffers) for every option, its default and range.
    ///
    /// Exactly one of `capacity` / `capacity_bytes` (default: `capacity` 200) and at most one of
    /// `replay_per_batch` / `replay_ratio` (default: `replay_ratio` 1, as many as the batch size).
    public struct Options: PluginOptions {
        public static let typeName = "replay"
        public static let storesSamples = true
        public static let summary = "experience replay from a bounded buffer (reservoir, class-balanced, herding, k-center)"

        /// Capacity in samples (nil when `capacityBytes` is given).
        public var capacity: Int?
        /// Capacity as a byte budget (nil when `capacity` is given).
        public var capacityBytes: Int?
        /// Stored samples appended to every batch (nil when `replayRatio` is given).
        public var replayPerBatch: Int?
        /// Stored samples per batch as a fraction of the batch size.
        public var replayRatio: Double?
        public var update: ReplayUpdate
        public var precision: StoragePrecision
        public var policy: BufferPolicyKind
        public var features: ReplayFeatureSpace
        public var storeIndices: Bool

        public init(capacity: Int? = nil, capacityBytes: Int? = nil, replayPerBatch: Int? = nil,
                    replayRatio: Double? = nil, update: ReplayUpdate? = nil, precision: StoragePrecision = .float32,
                    policy: BufferPolicyKind = .reservoir, features: ReplayFeatureSpace = .input,
                    storeIndices: Bool = false) {
            self.capacity = capacity ?? (capacityBytes == nil ? 200 : nil)
            self.capacityBytes = capacityBytes
            self.replayPerBatch = replayPerBatch
            self.replayRatio = replayRatio ?? (replayPerBatch == nil ? 1 : nil)
            self.update = update ?? (policy.isStreaming ? .stream : .experienceEnd)
            self.precision = precision
            self.policy = policy
            self.features = features
            self.storeIndices = storeIndices
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case capacity, capacityBytes = "capacity_bytes", replayPerBatch = "replay_per_batch"
            case replayRatio = "replay_ratio", update, precision, policy, features
            case storeIndices = "store_indices"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            try c.require(!(c.contains(.capacity) && c.contains(.capacityBytes)), .capacityBytes,
                          "give either capacity (samples) or capacity_bytes, not both")
            try c.require(!(c.contains(.replayPerBatch) && c.contains(.replayRatio)), .replayRatio,
                          "give either replay_per_batch or replay_ratio, not both")
            let capacity = try c.decodeIfPresent(Int.self, forKey: .capacity)
            let capacityBytes = try c.decodeIfPresent(Int.self, forKey: .capacityBytes)
            let perBatch = try c.decodeIfPresent(Int.self, forKey: .replayPerBatch)
            let ratio = try c.decodeIfPresent(Double.self, forKey: .replayRatio)
            let policy = try c.decodeChoice(.policy, default: BufferPolicyKind.reservoir)
            let update: ReplayUpdate? = c.contains(.update) ? try c.decodeChoice(.update, default: ReplayUpdate.stream) : nil
            self.init(capacity: capacity, capacityBytes: capacityBytes, replayPerBatch: perBatch, replayRatio: ratio,
                      update: update, precision: try c.decodeChoice(.precision, default: StoragePrecision.float32),
                      policy: policy, features: try c.decodeChoice(.features, default: ReplayFeatureSpace.input),
                      storeIndices: try c.decode(.storeIndices, default: false))
            if let capacity { try c.require(capacity >= 0 && capacity <= 10_000_000, .capacity, "must be in 0...10000000, got \(capacity)") }
            if let capacityBytes {
                try c.require(capacityBytes >= 1 && capacityBytes <= 1 << 34, .capacityBytes,
                              "must be in 1...\(1 << 34) bytes, got \(capacityBytes)")
            }
            if let perBatch { try c.require(perBatch >= 0 && perBatch <= 1_000_000, .replayPerBatch, "must be in 0...1000000, got \(perBatch)") }
            if let ratio { try c.require(ratio >= 0 && ratio <= 100 && ratio.isFinite, .replayRatio, "must be in 0...100, got \(ratio)") }
            try c.require(policy.isStreaming || self.update == .experienceEnd, .update,
                          "policy \"\(policy.rawValue)\" selects at the end of an experience; use \"experience_end\"")
            try c.require(!policy.isStreaming || features == .input, .features,
                          "\"features\" applies to the core-set policies only (coreset_herding, coreset_kcenter)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeIfPresent(capacity, forKey: .capacity)
            try c.encodeIfPresent(capacityBytes, forKey: .capacityBytes)
            try c.encodeIfPresent(replayPerBatch, forKey: .replayPerBatch)
            try c.encodeIfPresent(replayRatio, forKey: .replayRatio)
            try c.encode(update, forKey: .update)
            try c.encode(precision, forKey: .precision)
            try c.encode(policy, forKey: .policy)
            try c.encode(features, forKey: .features)
            try c.encode(storeIndices, forKey: .storeIndices)
        }

        public func makePlugin() -> any StrategyPlugin { Replay(options: self) }

        /// The buffer (`capacity` samples with room for stored logits, or `capacity_bytes`) and the
        /// replayed rows per batch (`replay_per_batch`, or `replay_ratio` × the batch size).
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            var planned = PlannedResources()
            if let capacity {
                planned.memory.append(.init(Double(capacity) * shape.sampleBytes(logits: shape.outputs), key: CodingKeys.capacity.path))
            }
            if let capacityBytes { planned.memory.append(.init(Double(capacityBytes), key: CodingKeys.capacityBytes.path)) }
            planned.extraRowsPerBatch = replayPerBatch.map(Double.init) ?? (replayRatio ?? 0) * shape.batchSize
            return planned
        }
    }
}
