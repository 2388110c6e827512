import ContinualCore
@testable import ContinualStrategies
import Testing

/// Replaces the *last* slot when it accepts a sample: the classic biased reservoir that the
/// uniformity check must reject.
private struct LastSlotReservoir: BufferPolicy {
    var seen = 0
    mutating func offer(_ sample: BufferSample, memory: inout ReplayMemory, rng: inout RandomSource) {
        seen += 1
        if memory.count < memory.capacity {
            memory.append(features: sample.features, label: sample.label, route: sample.route, origin: sample.origin)
        } else if rng.uniformInt(below: seen) < memory.capacity {
            memory.replace(slot: memory.capacity - 1, features: sample.features, label: sample.label,
                           route: sample.route, origin: sample.origin)
        }
    }
}

/// Off-by-one reservoir: draws j in 0..<(n − 1) instead of 0..<n, a subtle bias (the first
/// `capacity` samples end up under-represented, later ones over-represented).
private struct OffByOneReservoir: BufferPolicy {
    var seen = 0
    mutating func offer(_ sample: BufferSample, memory: inout ReplayMemory, rng: inout RandomSource) {
        seen += 1
        if memory.count < memory.capacity {
            memory.append(features: sample.features, label: sample.label, route: sample.route, origin: sample.origin)
            return
        }
        let j = rng.uniformInt(below: seen - 1)
        if j < memory.capacity {
            memory.replace(slot: j, features: sample.features, label: sample.label, route: sample.route,
                           origin: sample.origin)
        }
    }
}

@Suite("Reservoir uniformity")
struct ReservoirUniformityTests {
    static let n = 60
    static let capacity = 12
    static let runs = 10_000
    /// χ² critical value at 0.999 with 60 degrees of freedom.
    static let chiSquareCritical = 99.61
    /// Largest per-position |z| allowed (a binomial bound; P(|z| > 4.5) ≈ 7e-6 per position).
    static let zCritical = 4.5

    /// How often each stream position ends in the buffer over `runs` seeded runs of `make()`.
    static func inclusionCounts<P: BufferPolicy>(_ make: () -> P) -> [Int] {
        var counts = [Int](repeating: 0, count: n)
        for run in 0..<runs {
            var policy = make()
            var memory = ReplayTestSupport.memory(dimension: 1, capacity: capacity)
            var rng = RandomSource(seed: UInt64(run), stream: "reservoir-test")
            for position in 0..<n {
                let row: [Float] = [Float(position)]
                policy.offer(BufferSample(features: row[...], label: 0, route: 0,
                                          origin: SampleOrigin(experience: 0, position: position)),
                             memory: &memory, rng: &rng)
            }
            for origin in memory.origins { counts[origin.position] += 1 }
        }
        return counts
    }

    /// (χ² statistic, largest |z|) of the counts against Binomial(runs, capacity/n) per position.
    static func statistics(_ counts: [Int]) -> (chiSquare: Double, maxZ: Double) {
        let p = Double(capacity) / Double(n)
        let mean = Double(runs) * p
        let variance = Double(runs) * p * (1 - p)
        var chi = 0.0, maxZ = 0.0
        for c in counts {
            let d = Double(c) - mean
            chi += d * d / variance
            maxZ = max(maxZ, abs(d) / variance.squareRoot())
        }
        return (chi, maxZ)
    }

    static func isUniform(_ counts: [Int]) -> Bool {
        let s = statistics(counts)
        return s.chiSquare < chiSquareCritical && s.maxZ < zCritical
    }

    @Test("Algorithm R: every position is kept with probability capacity/n")
    func reservoirIsUniform() {
        let counts = Self.inclusionCounts { ReservoirPolicy() }
        let s = Self.statistics(counts)
        #expect(counts.reduce(0, +) == Self.runs * Self.capacity)
        #expect(s.chiSquare < Self.chiSquareCritical, "χ² = \(s.chiSquare)")
        #expect(s.maxZ < Self.zCritical, "max |z| = \(s.maxZ)")
    }

    @Test("the same check rejects a reservoir that replaces the last slot")
    func lastSlotVariantFails() {
        let counts = Self.inclusionCounts { LastSlotReservoir() }
        #expect(!Self.isUniform(counts), "statistics \(Self.statistics(counts))")
        // The first capacity − 1 samples are never evicted.
        #expect(counts[0] == Self.runs)
    }

    @Test("the same check rejects an off-by-one reservoir")
    func offByOneVariantFails() {
        let counts = Self.inclusionCounts { OffByOneReservoir() }
        #expect(!Self.isUniform(counts), "statistics \(Self.statistics(counts))")
    }

    @Test("over a whole multi-experience stream, every experience gets about capacity/T slots")
    func reservoirSpansExperiences() throws {
        let stream = try ReplayTestSupport.stream(train: 400, test: 50)
        var options = Replay.Options(capacity: 100)
        options.storeIndices = true
        let (trainer, _) = try ReplayTestSupport.train([Replay(options: options)], on: stream, epochs: 3)
        let replay = try #require(trainer.plugins[0] as? Replay)
        #expect(replay.memory.count == 100)
        #expect(replay.offered == 5 * 400)  // first epoch only: epochs do not multiply the stream
        var perExperience = [Int](repeating: 0, count: 5)
        for o in replay.memory.origins { perExperience[o.experience] += 1 }
        // Binomial(100, 1/5) per experience: mean 20, sd 4; allow ±4.5 sd.
        for c in perExperience { #expect(abs(c - 20) <= 18, "per-experience counts \(perExperience)") }
        // Reported positions point at the very samples stored.
        for s in 0..<replay.memory.count {
            let o = replay.memory.origins[s]
            let train = stream.experiences[o.experience].train
            #expect(o.position >= 0)
            #expect(Array(train.row(o.position)) == replay.memory.features(s))
            #expect(train.labels[o.position] == replay.memory.labels[s])
        }
    }
}
