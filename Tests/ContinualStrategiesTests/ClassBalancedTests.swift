import ContinualCore
@testable import ContinualStrategies
import Testing

@Suite("Class-balanced buffer")
struct ClassBalancedTests {
    /// Offers a stream whose label at position i is `label(i, rng)` to a class-balanced policy.
    static func fill(capacity: Int, count: Int, seed: UInt64, label: (Int, inout RandomSource) -> Int32) -> ReplayMemory {
        var policy = ClassBalancedPolicy()
        var memory = ReplayTestSupport.memory(dimension: 2, capacity: capacity, classes: 4)
        var rng = RandomSource(seed: seed, stream: "policy")
        var data = RandomSource(seed: seed, stream: "data")
        for i in 0..<count {
            let y = label(i, &data)
            let row: [Float] = [Float(i), Float(y)]
            policy.offer(BufferSample(features: row[...], label: y, route: 0, origin: SampleOrigin(experience: 0, position: i)),
                         memory: &memory, rng: &rng)
        }
        return memory
    }

    @Test("imbalanced labels (75/20/5 %): shares within one sample of equal", arguments: 0..<10)
    func imbalancedSharesAreEqual(seed: Int) {
        let memory = Self.fill(capacity: 60, count: 3000, seed: UInt64(seed)) { _, rng in
            let u = rng.uniform()
            return u < 0.75 ? 0 : (u < 0.95 ? 1 : 2)
        }
        let counts = memory.classCounts(classes: 3)
        #expect(memory.count == 60)
        #expect(counts.max()! - counts.min()! <= 1, "counts \(counts)")
    }

    @Test("a class that appears late gets its equal share", arguments: 0..<10)
    func newClassRebalances(seed: Int) {
        let memory = Self.fill(capacity: 60, count: 3000, seed: UInt64(seed)) { i, rng in
            let u = rng.uniform()
            if i >= 2500 && u < 0.3 { return 3 }   // ≈150 samples of class 3, only at the end
            return u < 0.7 ? 0 : (u < 0.9 ? 1 : 2)
        }
        let counts = memory.classCounts(classes: 4)
        #expect(counts.reduce(0, +) == 60)
        #expect(counts.max()! - counts.min()! <= 1, "counts \(counts)")
    }

    @Test("a plain reservoir on the same stream is not balanced (the test can fail)")
    func reservoirIsNotBalanced() {
        var policy = ReservoirPolicy()
        var memory = ReplayTestSupport.memory(dimension: 2, capacity: 60, classes: 4)
        var rng = RandomSource(seed: 1, stream: "policy")
        var data = RandomSource(seed: 1, stream: "data")
        for i in 0..<3000 {
            let u = data.uniform()
            let y: Int32 = u < 0.75 ? 0 : (u < 0.95 ? 1 : 2)
            let row: [Float] = [Float(i), Float(y)]
            policy.offer(BufferSample(features: row[...], label: y, route: 0, origin: SampleOrigin(experience: 0, position: i)),
                         memory: &memory, rng: &rng)
        }
        let counts = memory.classCounts(classes: 3)
        #expect(counts.max()! - counts.min()! > 1)
    }

    @Test("a class with fewer samples than its share keeps all of them")
    func rareClassKeepsEverything() {
        let memory = Self.fill(capacity: 60, count: 3000, seed: 5) { i, rng in
            i % 500 == 7 ? 2 : (rng.bernoulli(0.5) ? 0 : 1)   // class 2: 6 samples only
        }
        let counts = memory.classCounts(classes: 3)
        #expect(counts[2] == 6)
        #expect(abs(counts[0] - counts[1]) <= 1, "counts \(counts)")
    }

    @Test("within each class the buffer samples the whole stream, not its end (4 classes, capacity 30)")
    func withinClassUniform() {
        let buckets = 10, n = 400, runs = 1000
        var mass = [Int](repeating: 0, count: buckets)
        for run in 0..<runs {
            let memory = Self.fill(capacity: 30, count: n, seed: UInt64(1000 + run)) { _, rng in Int32(rng.uniformInt(below: 4)) }
            #expect(memory.count == 30)
            for o in memory.origins { mass[o.position * buckets / n] += 1 }
        }
        let expected = Double(runs * 30) / Double(buckets)
        for m in mass { #expect(abs(Double(m) - expected) < 0.15 * expected, "per-bucket mass \(mass)") }
    }
}
