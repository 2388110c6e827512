import ContinualCore

/// Experience replay: a bounded buffer of past samples, mixed into every training batch.
///
/// A `BufferPolicy` decides what the buffer keeps (reservoir, class-balanced, herding, k-center);
/// `ReplayMemory` stores it at float32/float16/int8 within a sample or byte capacity. Each
/// batch gets `replay_per_batch` stored samples drawn uniformly without replacement (a separate
/// random stream from the buffer's, so the batch mix never changes what is stored). Stored
/// samples keep their route, so multi-head models replay old tasks through their own heads.
public struct Replay: StrategyPlugin {
    /// The buffer's bytes at its storage precision, and the rows replayed per batch.
    public var resources: PluginResources {
        PluginResources(storedSampleBytes: memory.bytesUsed, extraRowsPerBatch: replayCount)
    }

    public var name: String { Options.typeName }
    public let options: Options
    public private(set) var policy: any BufferPolicy
    public private(set) var memory: ReplayMemory
    /// Stored samples appended per batch (resolved in `prepare`).
    public private(set) var replayCount = 0
    /// Samples offered to the policy so far.
    public private(set) var offered = 0

    private var bufferRNG = RandomSource(seed: 0)
    private var batchRNG = RandomSource(seed: 0)
    private var classes = 2
    private var trainSet = Samples(dimension: 0)
    private var streamRemaining = 0
    private var positions: [UInt64: [Int]] = [:]
    private var slots: [Int] = []
    private var row: [Float] = []
    /// One decoded sample; appended through `Batch.append(from:index:route:)`, which is compiled
    /// in Core for `Samples` (the generic `append(features:)` is not specialised across modules).
    private var scratch = Samples(dimension: 0)
    private var classCountsAfter: [[Int]] = []
    private var bytesAfter: [Int] = []
    private var dimension = 0
    private var configuredRoutes = 1

    public init(options: Options = Options()) {
        self.options = options
        self.policy = options.policy.make()
        self.memory = ReplayMemory(layout: ReplayLayout(dimension: 0, precision: options.precision, classes: 2, routes: 1),
                                   capacity: 0)
    }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        classes = context.head.classCount
        dimension = context.dimension
        try configureMemory(routes: model.routeCount)
        if policy.usesEmbedding && options.features == .penultimate && model.layers.count < 2 {
            throw TrainingError.invalidOption(key: Options.CodingKeys.features.path,
                                              message: "replay: \"features\": \"penultimate\" needs a model with a hidden layer")
        }
        replayCount = options.replayPerBatch ?? Int(((options.replayRatio ?? 1) * Double(context.training.batchSize)).rounded())
        bufferRNG = context.randomSource("replay.buffer")
        batchRNG = context.randomSource("replay.batch")
        row = [Float](repeating: 0, count: context.dimension)
        scratch = Samples(dimension: context.dimension, features: row, labels: [0], routes: [0])
        offered = 0
        classCountsAfter = []
        bytesAfter = []
    }

    /// A plugin listed after replay may extend the model in its own `prepare` (e.g. per-context
    /// LoRA adds routes); before anything is stored, size the memory for the final route count so
    /// that the byte budget counts the route byte whatever the plugin order.
    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        if context.index == 0 && model.routeCount != configuredRoutes {
            try configureMemory(routes: model.routeCount)
        }
    }

    /// Re-sizes the memory for a checkpoint's route count (see `restore(from:)`).
    fileprivate mutating func configureMemoryForRestore(routes: Int) throws {
        try configureMemory(routes: routes)
    }

    /// Builds the (empty) memory for `routes` routes within the configured capacity or budget.
    private mutating func configureMemory(routes: Int) throws {
        configuredRoutes = routes
        let layout = ReplayLayout(dimension: dimension, precision: options.precision, classes: classes,
                                  routes: routes)
        let capacity: Int
        if let budget = options.capacityBytes {
            capacity = layout.capacity(forBytes: budget)
            if capacity == 0 {
                throw TrainingError.invalidOption(key: Options.CodingKeys.capacityBytes.path, message: "replay: capacity_bytes \(budget) holds no sample (one costs \(layout.bytesPerSample) B"
                                            + (layout.fixedBytes > 0 ? " plus \(layout.fixedBytes) B of int8 scales)" : ")"))
            }
        } else {
            capacity = options.capacity ?? 200
        }
        memory = ReplayMemory(layout: layout, capacity: capacity)
    }

    public mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        trainSet = samples
        streamRemaining = options.update == .stream ? samples.count : 0
        positions = [:]
        if options.update == .stream && options.storeIndices {
            for i in stride(from: samples.count - 1, through: 0, by: -1) {
                positions[Replay.key(samples.row(i), samples.labels[i]), default: []].append(i)
            }
        }
    }

    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        let own = batch.ownCount
        if replayCount > 0 && !memory.isEmpty {
            if slots.count != memory.count { slots = Array(0..<memory.count) }
            let n = slots.count
            for t in 0..<min(replayCount, n) {
                slots.swapAt(t, t + batchRNG.uniformInt(below: n - t))
                let s = slots[t]
                memory.decode(s, into: &scratch.features)
                scratch.labels[0] = memory.labels[s]
                scratch.routes![0] = memory.routes[s]
                batch.append(from: scratch, index: 0, route: memory.routes[s])
            }
        }
        if streamRemaining > 0 {
            let n = min(own, streamRemaining)
            for r in 0..<n {
                let features = batch.row(r)
                let label = batch.labels[r]
                var position = -1
                if options.storeIndices {
                    let k = Replay.key(features, label)
                    if let p = positions[k]?.popLast() { position = p }
                }
                let sample = BufferSample(features: features, label: label, route: batch.routes[r],
                                          origin: SampleOrigin(experience: context.index, position: position))
                policy.offer(sample, memory: &memory, rng: &bufferRNG)
            }
            offered += n
            streamRemaining -= n
        }
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        if options.update == .experienceEnd && !trainSet.isEmpty {
            let n = trainSet.count
            var candidates = SelectionCandidates(
                samples: trainSet, routes: trainSet.routes ?? [Int32](repeating: context.route, count: n),
                origins: (0..<n).map { SampleOrigin(experience: context.index, position: $0) })
            if policy.usesEmbedding && options.features == .penultimate {
                let (embedding, width) = Replay.penultimate(model: model, samples: trainSet, route: Int(context.route),
                                                            workspace: workspace)
                candidates.embedding = embedding
                candidates.embeddingDimension = width
            }
            policy.select(candidates, memory: &memory, rng: &bufferRNG)
            offered += n
        }
        precondition(memory.count <= memory.capacity && memory.bytesUsed <= (options.capacityBytes ?? Int.max),
                     "replay buffer exceeded its capacity")
        classCountsAfter.append(memory.classCounts(classes: classes))
        bytesAfter.append(memory.bytesUsed)
        trainSet = Samples(dimension: 0)
        positions = [:]
    }

    public func report() -> PluginReport {
        let T = classCountsAfter.count
        var attributes: [String: PluginReport.Value] = [
            "policy": .string(options.policy.rawValue),
            "precision": .string(options.precision.rawValue),
            "update": .string(options.update.rawValue),
            "features": .string(options.features.rawValue),
            "capacity_samples": .int(Int64(memory.capacity)),
            "capacity_bytes": .int(Int64(memory.layout.bytesUsed(count: memory.capacity))),
            "bytes_per_sample": .int(Int64(memory.layout.bytesPerSample)),
            "fixed_bytes": .int(Int64(memory.layout.fixedBytes)),
            "buffer_bytes": .int(Int64(memory.bytesUsed)),
            "buffer_count": .int(Int64(memory.count)),
            "replay_per_batch": .int(Int64(replayCount)),
            "samples_offered": .int(Int64(offered)),
            "byte_accounting": .string("per sample: features × (4|2|1 B for float32|float16|int8) + label (1 B ≤ 256 classes) + route (0 B single-head, else 1 B); int8 adds 4 B per feature once (scales)"),
        ]
        if let budget = options.capacityBytes { attributes["budget_bytes"] = .int(Int64(budget)) }
        var arrays: [String: PluginReport.Array] = [
            "class_counts": .init(values: classCountsAfter.flatMap { $0.map(Double.init) }, shape: [T, classes],
                                  attributes: ["meaning": .string("samples of each class (column) in the buffer after training on experience i (row)")]),
            "bytes_used": .init(values: bytesAfter.map(Double.init), shape: [T],
                                attributes: ["meaning": .string("bytes the buffer uses after experience i"), "units": .string("bytes")]),
        ]
        var origin = [Double](repeating: 0, count: max(T, 1) * classes)
        for s in 0..<memory.count {
            let e = memory.origins[s].experience, y = Int(memory.labels[s])
            if e < max(T, 1) && y >= 0 && y < classes { origin[e * classes + y] += 1 }
        }
        arrays["origin_class_counts"] = .init(values: origin, shape: [max(T, 1), classes], attributes: [
            "meaning": .string("final buffer: samples from experience i (row) of class c (column)")])
        if options.storeIndices && !memory.isEmpty {
            arrays["stored_indices"] = .init(
                values: memory.origins.flatMap { [Double($0.experience), Double($0.position)] }, shape: [memory.count, 2],
                attributes: ["meaning": .string("final buffer, slot by slot: [experience, position in that experience's training set as the plugin saw it]")])
        }
        return PluginReport(attributes: attributes, arrays: arrays)
    }

    /// Penultimate activations of `samples` ([count × width]) through the current model.
    static func penultimate(model: MLP, samples: Samples, route: Int, workspace ws: Workspace) -> ([Float], Int) {
        let layer = model.layers.count - 2
        let width = model.layers[layer].outputs
        var out = [Float](repeating: 0, count: samples.count * width)
        let chunk = max(ws.capacity, 1)
        samples.features.withUnsafeBufferPointer { xs in
            var start = 0
            while start < samples.count {
                let m = min(chunk, samples.count - start)
                model.forward(xs.baseAddress! + start * samples.dimension, count: m, route: route, workspace: ws)
                let h = ws.hiddenActivations(layer)
                for k in 0..<(m * width) { out[start * width + k] = h[k] }
                start += m
            }
        }
        return (out, width)
    }

    /// Stable key of a sample's exact feature bits and label (to find its training-set position).
    static func key(_ features: ArraySlice<Float>, _ label: Int32) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for v in features {
            hash ^= UInt64(v.bitPattern)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        hash ^= UInt64(UInt32(bitPattern: label))
        return hash &* 0x0000_0100_0000_01b3
    }
}

extension Replay {
    /// Everything replay carries between experiences: memory contents, the policy's counters,
    /// both random streams, the batch-sampling permutation and the per-experience summaries.
    public func checkpointState() -> PluginState {
        var state = PluginState()
        memory.checkpoint(into: &state, prefix: "memory.")
        state.ints["policy"] = policy.checkpointCounters()
        state.ints["rng.buffer"] = bufferRNG.state.map { Int64(bitPattern: $0) }
        state.ints["rng.batch"] = batchRNG.state.map { Int64(bitPattern: $0) }
        state.ints["slots"] = slots.map(Int64.init)
        state.ints["counters"] = [Int64(offered), Int64(configuredRoutes), Int64(classes)]
        state.ints["class_counts_after"] = classCountsAfter.flatMap { $0.map(Int64.init) }
        state.ints["class_counts_width"] = [Int64(classCountsAfter.first?.count ?? 0)]
        state.ints["bytes_after"] = bytesAfter.map(Int64.init)
        return state
    }

    public mutating func restore(from state: PluginState) throws {
        guard let counters = state.ints["counters"], counters.count == 3,
              let buffer = state.ints["rng.buffer"], buffer.count == 4, let batch = state.ints["rng.batch"], batch.count == 4,
              let slots = state.ints["slots"], let policyState = state.ints["policy"],
              let counts = state.ints["class_counts_after"], let width = state.ints["class_counts_width"]?.first,
              let bytes = state.ints["bytes_after"] else {
            throw CheckpointError.mismatch("replay state is incomplete")
        }
        guard width >= 0, width == 0 ? counts.isEmpty : counts.count % Int(width) == 0 else {
            throw CheckpointError.mismatch("replay class counts (\(counts.count) values) do not fill rows of \(width)")
        }
        if Int(counters[1]) != configuredRoutes { try configureMemoryForRestore(routes: Int(counters[1])) }
        try memory.restore(from: state, prefix: "memory.")
        // The batch-sampling permutation indexes the memory: every slot must be one of its samples.
        guard slots.allSatisfy({ $0 >= 0 && $0 < Int64(memory.count) }) else {
            throw CheckpointError.mismatch("replay batch slots point outside the \(memory.count) stored samples")
        }
        try policy.restoreCounters(policyState)
        bufferRNG = RandomSource(state: buffer.map { UInt64(bitPattern: $0) })
        batchRNG = RandomSource(state: batch.map { UInt64(bitPattern: $0) })
        self.slots = slots.map(Int.init)
        offered = Int(counters[0])
        let w = Int(width)
        classCountsAfter = w == 0 ? [] : stride(from: 0, to: counts.count, by: w).map { counts[$0..<($0 + w)].map(Int.init) }
        bytesAfter = bytes.map(Int.init)
    }
}
