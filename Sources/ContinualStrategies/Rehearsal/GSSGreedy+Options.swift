import ContinualCore

extension GSSGreedy {
    /// Stored samples; their scores and the parameter copy. Per experience (its first epoch): n ×
    /// `memory_subset` one-sample gradients per batch, and per training row its gradient and n
    /// cosines.
    public var resources: PluginResources {
        let p = current?.parameterCount ?? 0, train = current?.flopsPerTrainingSample ?? 0
        let size = min(options.memorySubset, max(buffer.count, 1))
        let n = buffer.count == 0 ? 0 : max(1, min(options.memoryGradients, buffer.count / size))
        let rows = counts.experienceRows, batches = (rows + max(batchSize, 1) - 1) / max(batchSize, 1)
        return PluginResources(storedSampleBytes: buffer.bytes, stateBytes: 4 * scores.count + 4 * p,
                               extraRowsPerBatch: min(buffer.count, options.replayPerBatch),
                               extraFLOPsPerExperience: n > 0 ? batches * (n * size * train + 6 * n * p) + rows * (train + 6 * n * p) : 0)
    }

    public func checkpointState() -> PluginState {
        var s = buffer.state(with: streams)
        s.floats["scores"] = scores
        s.ints["counts"] = counts.values
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        streams = try buffer.restore(state, plugin: "gss")
        guard let c = state.floats["scores"], c.count == buffer.count, c.allSatisfy({ $0 >= 0 && $0 <= 2.1 }),
              let k = state.ints["counts"], k.count == 5, k.allSatisfy({ $0 >= 0 }) else {
            throw CheckpointError.mismatch("gss state lacks one score in 0...2.1 per stored sample or its counts")
        }
        scores = c
        counts = Counts(appended: Int(k[0]), replaced: Int(k[1]), gated: Int(k[2]), declined: Int(k[3]), experienceRows: Int(k[4]))
    }

    public func report() -> PluginReport {
        var classes = [Int](repeating: 0, count: max(buffer.logitCount, 2))
        for y in buffer.labels where y >= 0 && Int(y) < classes.count { classes[Int(y)] += 1 }
        return PluginReport(attributes: [
            "buffer_class_counts": .string(classes.map(String.init).joined(separator: ",")),
            "capacity": .int(Int64(options.capacity)), "replay_per_batch": .int(Int64(options.replayPerBatch)),
            "memory_gradients": .int(Int64(options.memoryGradients)), "memory_subset": .int(Int64(options.memorySubset)),
            "gate": .string(options.gate.rawValue),
            "buffer_samples": .int(Int64(buffer.count)), "offered": .int(Int64(buffer.offered)),
            "appended": .int(Int64(counts.appended)), "replaced": .int(Int64(counts.replaced)),
            "gated": .int(Int64(counts.gated)), "declined": .int(Int64(counts.declined)),
            "mean_score": .double(scores.isEmpty ? .nan : scores.reduce(0.0) { $0 + Double($1) } / Double(scores.count)),
            "criterion": .string("c = max_i cos(grad of the row, G_i) + 1, G_i mean gradients of random stored subsets; full buffer: "
                + "an eligible row (gate) draws slot i with p ∝ C_i and replaces it with p = C_i / (C_i + c)"),
        ])
    }
}

extension GSSGreedy {
    /// `{"type": "gss", "capacity": 200, "memory_gradients": 10, "memory_subset": 10, "gate": "batch"}`.
    public struct Options: PluginOptions {
        public static let typeName = "gss"
        public static let summary = "GSS-greedy (Aljundi 2019): replay from a buffer that admits rows whose gradients oppose the stored ones'"
        public static let storesSamples = true
        /// Which rows of a full buffer's batch may replace a stored sample.
        public enum Gate: String, Codable, Sendable, CaseIterable {
            /// Rows whose own score is below 1 (Algorithm 2).
            case sample
            /// Every row, when the batch's mean gradient scores below 1 (the authors' code).
            case batch
        }
        public var capacity = 200
        /// n: gradient vectors the rows are compared with (the authors' `memory_strength`, 10).
        public var memoryGradients = 10
        /// Stored samples averaged into each vector (the authors' `n_constraints`, 10; 1 = Algorithm 2).
        public var memorySubset = 10
        public var gate = Gate.batch
        /// Stored samples replayed per step (the authors' `n_constraints`, 10).
        public var replayPerBatch = 10

        enum Keys: String, CodingKey, CaseIterable {
            case capacity, gate
            case memoryGradients = "memory_gradients"
            case memorySubset = "memory_subset"
            case replayPerBatch = "replay_per_batch"
        }

        public init(capacity: Int = 200, memoryGradients: Int = 10, memorySubset: Int = 10, gate: Gate = .batch,
                    replayPerBatch: Int = 10) {
            (self.capacity, self.memoryGradients, self.memorySubset) = (capacity, memoryGradients, memorySubset)
            (self.gate, self.replayPerBatch) = (gate, replayPerBatch)
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            capacity = try c.decode(.capacity, default: 200)
            try c.require((1...10_000_000).contains(capacity), .capacity, "capacity must be in 1...10000000, got \(capacity)")
            memoryGradients = try c.decode(.memoryGradients, default: 10)
            try c.require((1...10_000).contains(memoryGradients), .memoryGradients,
                          "memory_gradients must be in 1...10000, got \(memoryGradients)")
            memorySubset = try c.decode(.memorySubset, default: 10)
            try c.require((1...10_000).contains(memorySubset), .memorySubset, "memory_subset must be in 1...10000, got \(memorySubset)")
            gate = try c.decodeChoice(.gate, default: Gate.batch)
            replayPerBatch = try c.decode(.replayPerBatch, default: 10)
            try c.require((0...100_000).contains(replayPerBatch), .replayPerBatch,
                          "replay_per_batch must be in 0...100000, got \(replayPerBatch)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(capacity, forKey: .capacity)
            try c.encode(memoryGradients, forKey: .memoryGradients)
            try c.encode(memorySubset, forKey: .memorySubset)
            try c.encode(gate, forKey: .gate)
            try c.encode(replayPerBatch, forKey: .replayPerBatch)
        }

        public func makePlugin() -> any StrategyPlugin { GSSGreedy(options: self) }

        /// The buffer of `capacity` samples (with a score each) and `replay_per_batch` rows per batch.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(Double(capacity) * (shape.sampleBytes() + 4), key: Keys.capacity.path)],
                             extraRowsPerBatch: Double(replayPerBatch))
        }
    }
}
