import ContinualCore

/// A reservoir buffer (Vitter 1985, Algorithm R) of samples, optionally with the logits the model
/// gave them when they were stored — the buffer of DER/DER++ and ER-ACE. Every offered sample
/// ends up stored with probability capacity / offered, from the plugin's own seeded stream.
struct LogitReservoir: Equatable {
    let dimension: Int
    let logitCount: Int
    let capacity: Int
    var features: [Float] = []
    var labels: [Int32] = []
    var routes: [Int32] = []
    /// `count × logitCount` logits at storage time (empty when not kept).
    var logits: [Float] = []
    /// Samples offered so far (Algorithm R's n).
    var offered = 0

    init(dimension: Int, logitCount: Int, capacity: Int) {
        self.dimension = dimension
        self.logitCount = logitCount
        self.capacity = capacity
    }

    var count: Int { labels.count }

    /// Bytes on the device: float32 features and logits, int32 label and route per sample.
    var bytes: Int { count * 4 * dimension + logits.count * 4 + count * 8 }

    /// Offers one sample (with its logits if the buffer keeps them).
    mutating func offer(features x: ArraySlice<Float>, label: Int32, route: Int32, logits z: UnsafePointer<Float>?,
                        rng: inout RandomSource) {
        offered += 1
        var slot = count
        if count >= capacity {
            let j = rng.uniformInt(below: offered)
            guard j < capacity else { return }
            slot = j
        }
        if slot == count {
            features.append(contentsOf: x)
            labels.append(label)
            routes.append(route)
            if let z { logits.append(contentsOf: UnsafeBufferPointer(start: z, count: logitCount)) }
        } else {
            features.replaceSubrange((slot * dimension)..<((slot + 1) * dimension), with: x)
            labels[slot] = label
            routes[slot] = route
            if let z {
                for c in 0..<logitCount { logits[slot * logitCount + c] = z[c] }
            }
        }
    }

    /// `n` distinct slots drawn uniformly (all when fewer are stored), in drawing order.
    func draw(_ n: Int, rng: inout RandomSource) -> [Int] {
        guard count > n else { return Array(0..<count) }
        var order = Array(0..<count)
        for i in 0..<n {
            let j = i + rng.uniformInt(below: count - i)
            order.swapAt(i, j)
        }
        return Array(order.prefix(n))
    }

    func row(_ slot: Int) -> ArraySlice<Float> { features[(slot * dimension)..<((slot + 1) * dimension)] }

    func state() -> PluginState {
        PluginState(floats: ["buffer.features": features, "buffer.logits": logits],
                    ints: ["buffer.labels": labels.map(Int64.init), "buffer.routes": routes.map(Int64.init),
                           "buffer.offered": [Int64(offered)]])
    }

    mutating func restore(_ s: PluginState) throws {
        guard let f = s.floats["buffer.features"], let z = s.floats["buffer.logits"], let l = s.ints["buffer.labels"],
              let r = s.ints["buffer.routes"], let o = s.ints["buffer.offered"]?.first,
              l.count == r.count, f.count == l.count * dimension, z.isEmpty || z.count == l.count * logitCount,
              l.count <= capacity else {
            throw CheckpointError.mismatch("the reservoir's state does not fit (dimension \(dimension), capacity \(capacity))")
        }
        (features, logits, offered) = (f, z, Int(o))
        labels = try PluginState.sampleIndices(l, "label", limit: max(logitCount, 2))
        routes = try PluginState.sampleIndices(r, "route")
    }
}

/// The two random streams of a reservoir plugin (DER, ER-ACE): which offered samples the
/// reservoir keeps (`buffer`) and which stored rows each batch replays (`batch`).
struct ReservoirStreams {
    var buffer = RandomSource(seed: 0)
    var batch = RandomSource(seed: 0)

    /// The plugin's streams `NAME.buffer` and `NAME.batch` of a run.
    init(_ context: RunContext, plugin: String) {
        buffer = context.randomSource(plugin + ".buffer")
        batch = context.randomSource(plugin + ".batch")
    }

    init() {}
}

extension LogitReservoir {
    /// The reservoir's checkpoint with its plugin's streams (`rng.buffer`, `rng.batch`).
    func state(with streams: ReservoirStreams) -> PluginState {
        var s = state()
        s.ints["rng.buffer"] = streams.buffer.state.map { Int64(bitPattern: $0) }
        s.ints["rng.batch"] = streams.batch.state.map { Int64(bitPattern: $0) }
        return s
    }

    /// Restores what `state(with:)` wrote and returns the streams; `plugin` names it in errors.
    mutating func restore(_ s: PluginState, plugin: String) throws -> ReservoirStreams {
        try restore(s)
        guard let a = s.ints["rng.buffer"], a.count == 4, let b = s.ints["rng.batch"], b.count == 4 else {
            throw CheckpointError.mismatch("\(plugin) state lacks its random streams")
        }
        var streams = ReservoirStreams()
        streams.buffer = RandomSource(state: a.map { UInt64(bitPattern: $0) })
        streams.batch = RandomSource(state: b.map { UInt64(bitPattern: $0) })
        return streams
    }
}
