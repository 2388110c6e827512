import ContinualCore
@testable import ContinualStrategies
import Testing

@Suite("k-center core-set")
struct KCenterTests {
    /// All k-subsets of 0..<n.
    static func subsets(_ n: Int, _ k: Int) -> [[Int]] {
        if k == 0 { return [[]] }
        if n < k { return [] }
        return subsets(n - 1, k) + subsets(n - 1, k - 1).map { $0 + [n - 1] }
    }

    @Test("greedy radius ≤ 2 × brute-force optimum on small cases, from every first center", arguments: 0..<15)
    func withinTwiceOptimum(seed: Int) {
        let n = 10, d = 2, k = 3
        let points = ReplayTestSupport.gaussian(count: n, dimension: d, seed: UInt64(100 + seed))
        let optimum = Self.subsets(n, k).map { ReplayTestSupport.radius(points, count: n, dimension: d, centers: $0) }.min()!
        for first in 0..<n {
            let picks = KCenterPolicy.greedy(points, dimension: d, members: Array(0..<n), count: k, first: first)
            #expect(picks.count == k && Set(picks).count == k && picks[0] == first)
            let r = ReplayTestSupport.radius(points, count: n, dimension: d, centers: picks)
            #expect(r <= 2 * optimum + 1e-9, "greedy \(r) vs optimum \(optimum)")
        }
    }

    @Test("on clustered data the greedy radius is strictly smaller than random subsets'")
    func beatsRandomOnClusters() {
        let clusters = 6, per = 30, d = 3, k = 6
        var points: [Float] = []
        for c in 0..<clusters {
            let centre = [Double(c) * 10, Double(c % 2) * 10, 0]
            points += ReplayTestSupport.gaussian(count: per, dimension: d, seed: UInt64(c), scales: [0.1, 0.1, 0.1], offset: centre)
        }
        let n = clusters * per
        let picks = KCenterPolicy.greedy(points, dimension: d, members: Array(0..<n), count: k, first: 17)
        #expect(Set(picks.map { $0 / per }).count == clusters, "one center per cluster")
        let r = ReplayTestSupport.radius(points, count: n, dimension: d, centers: picks)
        var rng = RandomSource(seed: 3)
        var random: [Double] = []
        for _ in 0..<100 {
            var all = Array(0..<n)
            rng.shuffle(&all)
            random.append(ReplayTestSupport.radius(points, count: n, dimension: d, centers: Array(all.prefix(k))))
        }
        #expect(r < random.reduce(0, +) / Double(random.count), "greedy \(r)")
        #expect(r < 1.0)
        #expect(random.filter { r < $0 }.count >= 90)
    }

    @Test("experiences get equal shares and old ones keep a prefix of their greedy order")
    func rebalancing() {
        let d = 2
        var memory = ReplayMemory(layout: ReplayLayout(dimension: d, precision: .float32, classes: 2, routes: 1), capacity: 30)
        var policy = KCenterPolicy()
        var rng = RandomSource(seed: 4)
        for e in 0..<3 {
            let rows = 50
            let features = ReplayTestSupport.gaussian(count: rows, dimension: d, seed: UInt64(e))
            let c = SelectionCandidates(samples: Samples(dimension: d, features: features, labels: (0..<rows).map { Int32($0 % 2) }),
                                        routes: [Int32](repeating: 0, count: rows),
                                        origins: (0..<rows).map { SampleOrigin(experience: e, position: $0) })
            let before = memory
            policy.select(c, memory: &memory, rng: &rng)
            let share = 30 / (e + 1)
            for old in 0..<e {
                let kept = (0..<memory.count).filter { memory.origins[$0].experience == old }
                #expect(kept.count == share)
                #expect(kept.allSatisfy { memory.priorities[$0] < share })
                let previously = Set((0..<before.count).filter { before.origins[$0].experience == old && before.priorities[$0] < share }
                    .map { before.origins[$0] })
                #expect(Set(kept.map { memory.origins[$0] }) == previously)
            }
            #expect(memory.count == 30)
        }
    }
}
