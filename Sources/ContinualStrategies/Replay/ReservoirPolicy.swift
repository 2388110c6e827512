import ContinualCore

/// Vitter's Algorithm R (1985) over the whole stream: after n samples, every one of them is in
/// the buffer with probability capacity / n, whatever the experience it came from.
///
/// The n-th sample is appended while the buffer is not full; afterwards j is drawn uniformly in
/// 0..<n and the sample replaces slot j if j < capacity.
public struct ReservoirPolicy: BufferPolicy {
    /// Samples offered so far (n).
    public private(set) var seen = 0

    public init() {}

    public mutating func offer(_ sample: BufferSample, memory: inout ReplayMemory, rng: inout RandomSource) {
        seen += 1
        if memory.count < memory.capacity {
            memory.append(features: sample.features, label: sample.label, route: sample.route, origin: sample.origin)
            return
        }
        let j = rng.uniformInt(below: seen)
        if j < memory.capacity {
            memory.replace(slot: j, features: sample.features, label: sample.label, route: sample.route,
                           origin: sample.origin)
        }
    }
}

extension ReservoirPolicy {
    public func checkpointCounters() -> [Int64] { [Int64(seen)] }

    public mutating func restoreCounters(_ counters: [Int64]) throws {
        guard counters.count == 1 else { throw CheckpointError.mismatch("reservoir policy state has \(counters.count) values, expected 1") }
        guard counters[0] >= 0 else { throw CheckpointError.mismatch("reservoir policy has seen \(counters[0]) samples") }
        seen = Int(counters[0])
    }
}
