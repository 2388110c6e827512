import ContinualCore
@testable import ContinualStrategies
import Testing

@Suite("Equal shares (water-filling)")
struct EqualSharesTests {
    @Test("small groups keep everything, the rest split within one, never above availability")
    func waterFilling() {
        #expect(EqualShares.split(10, available: [100, 100, 100]) == [4, 3, 3])
        #expect(EqualShares.split(30, available: [2, 100, 5, 100]) == [2, 12, 5, 11])
        #expect(EqualShares.split(30, available: [2, 3]) == [2, 3])
        #expect(EqualShares.split(0, available: [4, 4]) == [0, 0])
        var rng = ContinualCoreRNG(seed: 4)
        for _ in 0..<500 {
            let groups = 1 + rng.next(below: 8)
            let available = (0..<groups).map { _ in rng.next(below: 60) }
            let total = rng.next(below: 200)
            let shares = EqualShares.split(total, available: available)
            #expect(shares.reduce(0, +) == min(total, available.reduce(0, +)))
            #expect(zip(shares, available).allSatisfy { $0 <= $1 && $0 >= 0 })
            let uncapped = zip(shares, available).filter { $0 < $1 }.map(\.0)
            if let lo = uncapped.min() {
                // No group could gain from an uncapped one by more than one sample.
                #expect(shares.allSatisfy { $0 <= lo + 1 }, "\(available) → \(shares)")
            }
        }
    }
}

/// A tiny wrapper so the test reads clearly.
private struct ContinualCoreRNG {
    var source: RandomSource
    init(seed: UInt64) { source = RandomSource(seed: seed) }
    mutating func next(below n: Int) -> Int { source.uniformInt(below: n) }
}
