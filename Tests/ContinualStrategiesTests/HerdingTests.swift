import ContinualCore
@testable import ContinualStrategies
import Testing

@Suite("Herding core-set")
struct HerdingTests {
    static let d = 5
    static let n = 300
    static let points = ReplayTestSupport.gaussian(count: n, dimension: d, seed: 42, scales: [3, 1, 0.5, 2, 1],
                                                   offset: [1, -2, 0, 4, 0])

    static func meanDistance(_ subset: [Int]) -> Double {
        var mu = [Double](repeating: 0, count: d), m = [Double](repeating: 0, count: d)
        for i in 0..<n { for f in 0..<d { mu[f] += Double(points[i * d + f]) / Double(n) } }
        for i in subset { for f in 0..<d { m[f] += Double(points[i * d + f]) / Double(subset.count) } }
        return zip(mu, m).map { ($0 - $1) * ($0 - $1) }.reduce(0, +).squareRoot()
    }

    @Test("the herded set's mean is closer to the class mean than random subsets'", arguments: [5, 10, 20, 40])
    func herdingBeatsRandom(size: Int) {
        let herded = HerdingPolicy.herd(Self.points, dimension: Self.d, members: Array(0..<Self.n), count: size)
        #expect(herded.count == size && Set(herded).count == size)
        let h = Self.meanDistance(herded)
        var rng = RandomSource(seed: 9)
        var random: [Double] = []
        for _ in 0..<200 {
            var all = Array(0..<Self.n)
            rng.shuffle(&all)
            random.append(Self.meanDistance(Array(all.prefix(size))))
        }
        let beaten = random.filter { h < $0 }.count
        #expect(h < random.reduce(0, +) / Double(random.count) / 4, "herding \(h)")
        #expect(beaten >= 195, "herding beats \(beaten) of 200 random subsets")
    }

    @Test("the first pick is the sample closest to the mean")
    func firstPickIsClosestToMean() {
        let herded = HerdingPolicy.herd(Self.points, dimension: Self.d, members: Array(0..<Self.n), count: 3)
        let closest = (0..<Self.n).min { Self.meanDistance([$0]) < Self.meanDistance([$1]) }!
        #expect(herded[0] == closest)
    }

    @Test("groups per (experience, class) get equal shares; old groups keep a prefix of their order")
    func rebalancingKeepsPrefix() {
        let layout = ReplayLayout(dimension: Self.d, precision: .float32, classes: 2, routes: 1)
        var memory = ReplayMemory(layout: layout, capacity: 40)
        var policy = HerdingPolicy()
        var rng = RandomSource(seed: 1)
        func candidates(experience: Int, offset: Int) -> SelectionCandidates {
            let rows = 100
            let features = Array(Self.points[(offset * Self.d)..<((offset + rows) * Self.d)])
            let labels = (0..<rows).map { Int32($0 % 2) }
            return SelectionCandidates(samples: Samples(dimension: Self.d, features: features, labels: labels),
                                       routes: [Int32](repeating: 0, count: rows),
                                       origins: (0..<rows).map { SampleOrigin(experience: experience, position: $0) })
        }
        policy.select(candidates(experience: 0, offset: 0), memory: &memory, rng: &rng)
        #expect(memory.classCounts(classes: 2) == [20, 20])
        let first = memory.origins.enumerated().filter { memory.priorities[$0.offset] < 10 }.map(\.element)
        policy.select(candidates(experience: 1, offset: 100), memory: &memory, rng: &rng)
        #expect(memory.count == 40)
        var groups: [CoresetGroup: Int] = [:]
        for s in 0..<memory.count { groups[CoresetGroup(experience: memory.origins[s].experience, label: memory.labels[s]), default: 0] += 1 }
        #expect(groups.values.allSatisfy { $0 == 10 } && groups.count == 4, "groups \(groups)")
        let kept = memory.origins.filter { $0.experience == 0 }
        #expect(Set(kept) == Set(first))
    }
}
