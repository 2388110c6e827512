import ContinualCore

/// The stored samples of a replay buffer, encoded at the buffer's storage precision.
///
/// Policies decide *which* samples live here (append, replace, keep); the memory owns *how* they
/// are stored. int8 uses a symmetric per-feature scale s_f = m_f / 127 with codes in −127…127.
/// The range m_f starts at the first non-zero |x_f| stored and doubles whenever a stored value
/// exceeds it; existing codes of that feature are then re-quantised (code ← round(code / 2^k)).
/// Error bound: a sample stored since the last doubling is within s_f / 2 of its input; in
/// general the error stays below s_f (final scale), because the rounding errors of successive
/// doublings form a geometric series s_f/2 + s_f/4 + …. float16 is within max(|x|·2⁻¹¹, 2⁻²⁵).
public struct ReplayMemory: Sendable, Equatable {
    public let layout: ReplayLayout
    /// Most samples the memory may hold.
    public let capacity: Int
    public private(set) var labels: [Int32] = []
    public private(set) var routes: [Int32] = []
    public private(set) var origins: [SampleOrigin] = []
    /// Policy-defined order within a group (selection rank for core-sets; unused by reservoirs).
    public private(set) var priorities: [Int] = []
    /// int8 only: the per-feature range m_f (scale = m_f / 127); zero until a non-zero value is stored.
    public private(set) var ranges: [Float]

    private var float32: [Float] = []
    private var float16: [UInt16] = []
    private var int8: [Int8] = []

    public init(layout: ReplayLayout, capacity: Int) {
        precondition(capacity >= 0, "capacity must be ≥ 0")
        self.layout = layout
        self.capacity = capacity
        ranges = [Float](repeating: 0, count: layout.precision == .int8 ? layout.dimension : 0)
    }

    public var count: Int { labels.count }
    public var isEmpty: Bool { labels.isEmpty }
    public var isFull: Bool { labels.count >= capacity }
    public var dimension: Int { layout.dimension }
    /// Bytes the stored samples use under the layout's accounting (never above the budget).
    public var bytesUsed: Int { layout.bytesUsed(count: count) }

    /// The int8 scale of feature `f` (value of code 1).
    public func scale(_ f: Int) -> Float { ranges[f] / 127 }

    /// Stores a new sample at the end. Precondition: not full.
    public mutating func append<C: Collection>(features row: C, label: Int32, route: Int32, origin: SampleOrigin,
                                               priority: Int = 0) where C.Element == Float {
        precondition(count < capacity, "replay memory is full (capacity \(capacity))")
        precondition(row.count == dimension, "feature row has \(row.count) values, expected \(dimension)")
        labels.append(label)
        routes.append(route)
        origins.append(origin)
        priorities.append(priority)
        switch layout.precision {
        case .float32: float32.append(contentsOf: row)
        case .float16: float16.append(contentsOf: repeatElement(0, count: dimension))
        case .int8: int8.append(contentsOf: repeatElement(0, count: dimension))
        }
        encode(row, into: count - 1)
    }

    /// Overwrites slot `slot` with a new sample.
    public mutating func replace<C: Collection>(slot: Int, features row: C, label: Int32, route: Int32,
                                                origin: SampleOrigin, priority: Int = 0) where C.Element == Float {
        precondition(row.count == dimension, "feature row has \(row.count) values, expected \(dimension)")
        labels[slot] = label
        routes[slot] = route
        origins[slot] = origin
        priorities[slot] = priority
        if layout.precision == .float32 {
            var j = slot &* dimension
            for v in row { float32[j] = v; j &+= 1 }
        } else {
            encode(row, into: slot)
        }
    }

    /// Keeps the slots for which `keep(slot)` is true, in their order; removes the others.
    public mutating func retain(where keep: (Int) -> Bool) {
        let d = dimension
        var out = 0
        for s in 0..<count where keep(s) {
            if out != s {
                labels[out] = labels[s]
                routes[out] = routes[s]
                origins[out] = origins[s]
                priorities[out] = priorities[s]
                for f in 0..<d {
                    switch layout.precision {
                    case .float32: float32[out &* d &+ f] = float32[s &* d &+ f]
                    case .float16: float16[out &* d &+ f] = float16[s &* d &+ f]
                    case .int8: int8[out &* d &+ f] = int8[s &* d &+ f]
                    }
                }
            }
            out += 1
        }
        labels.removeLast(count - out)
        routes.removeLast(routes.count - out)
        origins.removeLast(origins.count - out)
        priorities.removeLast(priorities.count - out)
        switch layout.precision {
        case .float32: float32.removeLast(float32.count - out * d)
        case .float16: float16.removeLast(float16.count - out * d)
        case .int8: int8.removeLast(int8.count - out * d)
        }
    }

    /// Decodes slot `slot`'s features into `row` (length `dimension`).
    @inline(__always)
    public func decode(_ slot: Int, into row: inout [Float]) {
        let base = slot &* dimension
        switch layout.precision {
        case .float32:
            for f in 0..<dimension { row[f] = float32[base &+ f] }
        case .float16:
            for f in 0..<dimension { row[f] = HalfPrecision.decode(float16[base &+ f]) }
        case .int8:
            for f in 0..<dimension { row[f] = Float(int8[base &+ f]) * (ranges[f] / 127) }
        }
    }

    /// Slot `slot`'s decoded features.
    public func features(_ slot: Int) -> [Float] {
        var row = [Float](repeating: 0, count: dimension)
        decode(slot, into: &row)
        return row
    }

    /// Number of stored samples per class (labels outside `0..<classes` are not counted).
    public func classCounts(classes: Int) -> [Int] {
        var counts = [Int](repeating: 0, count: classes)
        for y in labels where y >= 0 && Int(y) < classes { counts[Int(y)] += 1 }
        return counts
    }

    /// Writes `row` into slot `slot` at the storage precision (int8: growing ranges first).
    private mutating func encode<C: Collection>(_ row: C, into slot: Int) where C.Element == Float {
        let base = slot &* dimension
        switch layout.precision {
        case .float32:
            var j = base
            for v in row { float32[j] = v; j &+= 1 }
        case .float16:
            var j = base
            for v in row { float16[j] = HalfPrecision.encode(v); j &+= 1 }
        case .int8:
            var f = 0
            for v in row {
                let a = abs(v)
                if a.isFinite && a > ranges[f] { growRange(f, toCover: a) }
                let m = ranges[f]
                let code = m > 0 ? (v * (127 / m)).rounded() : 0
                int8[base &+ f] = Int8(max(-127, min(127, code.isFinite ? code : 0)))
                f += 1
            }
        }
    }

    /// Raises m_f to cover `a`: the first non-zero value sets it exactly, later ones double it
    /// (re-quantising the feature's existing codes, so the error bound stays one step).
    private mutating func growRange(_ f: Int, toCover a: Float) {
        if ranges[f] == 0 {
            ranges[f] = a
            return
        }
        var k = 0
        while ranges[f] < a {
            ranges[f] *= 2
            k += 1
        }
        let divisor = Float(1 << min(k, 30))
        var j = f
        for _ in 0..<count {
            int8[j] = Int8((Float(int8[j]) / divisor).rounded())
            j &+= dimension
        }
    }
}

extension ReplayMemory {
    /// The stored samples for a checkpoint, under names prefixed with `prefix`.
    func checkpoint(into state: inout PluginState, prefix: String) {
        state.ints[prefix + "labels"] = labels.map(Int64.init)
        state.ints[prefix + "routes"] = routes.map(Int64.init)
        state.ints[prefix + "origins"] = origins.flatMap { [Int64($0.experience), Int64($0.position)] }
        state.ints[prefix + "priorities"] = priorities.map(Int64.init)
        state.floats[prefix + "ranges"] = ranges
        state.floats[prefix + "float32"] = float32
        state.ints[prefix + "float16"] = float16.map(Int64.init)
        state.ints[prefix + "int8"] = int8.map(Int64.init)
    }

    /// Replaces the contents with a checkpoint's (same layout and capacity as when saved).
    mutating func restore(from state: PluginState, prefix: String) throws {
        func ints(_ name: String) throws -> [Int64] {
            guard let v = state.ints[prefix + name] else { throw CheckpointError.mismatch("replay state lacks \(prefix + name)") }
            return v
        }
        func floats(_ name: String) throws -> [Float] {
            guard let v = state.floats[prefix + name] else { throw CheckpointError.mismatch("replay state lacks \(prefix + name)") }
            return v
        }
        let labels = try ints("labels"), routes = try ints("routes"), origins = try ints("origins")
        let priorities = try ints("priorities"), ranges = try floats("ranges"), f32 = try floats("float32")
        let f16 = try ints("float16"), i8 = try ints("int8")
        let n = labels.count
        let stored = layout.precision == .float32 ? f32.count : layout.precision == .float16 ? f16.count : i8.count
        guard n <= capacity, routes.count == n, origins.count == 2 * n, priorities.count == n,
              ranges.count == self.ranges.count, stored == n * dimension else {
            throw CheckpointError.mismatch("replay memory state does not fit the buffer (\(n) samples, capacity \(capacity))")
        }
        self.labels = try PluginState.sampleIndices(labels, "label", limit: layout.classes)
        self.routes = try PluginState.sampleIndices(routes, "route")
        self.origins = (0..<n).map { SampleOrigin(experience: Int(origins[2 * $0]), position: Int(origins[2 * $0 + 1])) }
        self.priorities = priorities.map(Int.init)
        self.ranges = ranges
        float32 = f32
        float16 = f16.map { UInt16(truncatingIfNeeded: $0) }
        int8 = i8.map { Int8(truncatingIfNeeded: $0) }
    }
}
