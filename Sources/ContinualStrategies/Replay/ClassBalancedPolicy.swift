import ContinualCore

/// Reservoir sampling per class with equal shares (class-balancing reservoir sampling, CBRS,
/// Chrysakis & Moens 2020): useful when labels are imbalanced, as habit completion often is.
///
/// While the buffer has room every sample is stored. Once it is full, a class becomes *full*
/// when it is (one of) the largest; a sample of a class that is not full replaces a uniformly
/// drawn sample of a largest class (so a newly appearing class gains slots at once), and a
/// sample of a full class c replaces a random slot of its own class with probability
/// stored_c / seen_c (Algorithm R within the class). Once every class has seen enough samples,
/// the shares end within one sample of equal.
public struct ClassBalancedPolicy: BufferPolicy {
    /// Samples offered so far per class label.
    public private(set) var seenPerClass: [Int] = []
    /// Classes that have been the largest while the buffer was full (they sample within themselves).
    public private(set) var full: [Bool] = []

    public init() {}

    public mutating func offer(_ sample: BufferSample, memory: inout ReplayMemory, rng: inout RandomSource) {
        let c = Int(max(sample.label, 0))
        if c >= seenPerClass.count { seenPerClass.append(contentsOf: repeatElement(0, count: c + 1 - seenPerClass.count)) }
        if c >= full.count { full.append(contentsOf: repeatElement(false, count: c + 1 - full.count)) }
        seenPerClass[c] += 1
        guard memory.capacity > 0 else { return }
        if memory.count < memory.capacity {
            memory.append(features: sample.features, label: sample.label, route: sample.route, origin: sample.origin)
            return
        }
        let counts = memory.classCounts(classes: seenPerClass.count)
        let largest = counts.max() ?? 0
        if counts[c] == largest { full[c] = true }
        let victim: Int
        if !full[c] {
            // Evict a uniformly drawn sample among those of the largest classes.
            let pool = counts.reduce(0) { $0 + ($1 == largest ? $1 : 0) }
            victim = nthSlot(rng.uniformInt(below: pool), in: memory) { counts[Int($0)] == largest }
        } else {
            let j = rng.uniformInt(below: seenPerClass[c])
            guard j < counts[c] else { return }
            victim = nthSlot(j, in: memory) { Int($0) == c }
        }
        let evicted = Int(memory.labels[victim])
        memory.replace(slot: victim, features: sample.features, label: sample.label, route: sample.route,
                       origin: sample.origin)
        if !full[c] {
            var after = counts
            after[evicted] -= 1
            after[c] += 1
            if after[c] == after.max() { full[c] = true }
        }
    }

    /// The slot of the n-th stored sample (in slot order) whose label satisfies `matches`.
    private func nthSlot(_ n: Int, in memory: ReplayMemory, _ matches: (Int32) -> Bool) -> Int {
        var k = n
        for (slot, y) in memory.labels.enumerated() where y >= 0 && matches(y) {
            if k == 0 { return slot }
            k -= 1
        }
        preconditionFailure("no such slot")
    }
}

extension ClassBalancedPolicy {
    /// [classes, seen per class…, full per class (0/1)…].
    public func checkpointCounters() -> [Int64] {
        [Int64(seenPerClass.count)] + seenPerClass.map(Int64.init) + full.map { $0 ? 1 : 0 }
    }

    public mutating func restoreCounters(_ counters: [Int64]) throws {
        guard let k = counters.first.map(Int.init), k >= 0, k <= counters.count, counters.count == 1 + 2 * k else {
            throw CheckpointError.mismatch("class-balanced policy state has an inconsistent length")
        }
        let seen = counters.dropFirst().prefix(k)      // (a range 1...k would trap for k = 0)
        guard seen.allSatisfy({ $0 >= 0 }) else {
            throw CheckpointError.mismatch("class-balanced policy state has a negative count")
        }
        seenPerClass = seen.map(Int.init)
        full = counters[(k + 1)...].map { $0 != 0 }
    }
}
