import Testing
@testable import ContinualExperiments

/// The sweep ETA: weighted by expected cost, corrected per strategy family, right early in a
/// sweep whose cheap runs come first (where a count-based ETA is badly wrong).
@Suite struct EstimatedTimeLeftTests {
    /// A simulated sweep: 800 runs, costs growing 1…64× along the sweep (cheap runs first, as a
    /// grid over model size × epochs lays them out), two strategy families of which one takes 3×
    /// its analytic estimate, ±20 % noise on each run's time, 2 runs in flight, and a serial
    /// 5 ms per run (the results writer) that dominates the cheap runs.
    @Test func withinAQuarterOfTheTruthFromTheFirstTenthOn() {
        var rng = SystemRandomNumberGeneratorStub(seed: 42)
        let n = 800
        let costs = (0..<n).map { i in Double(1 << (i * 7 / n)) }             // 1, 2, 4, …, 64
        let families = (0..<n).map { $0 % 2 == 0 ? "naive" : "ewc" }
        let seconds = (0..<n).map { i in costs[i] * (families[i] == "ewc" ? 3 : 1) * 0.01 * rng.uniform(0.8, 1.2) }
        var eta = EstimatedTimeLeft(costs: costs, families: families, jobs: 2)
        var elapsed = 0.0
        let total = seconds.reduce(0, +) / 2                                  // two in flight, plus the writer
        let serial = 0.005
        let total2 = total + serial * Double(n)
        for i in 0..<n {
            eta.finished(i, wallSeconds: seconds[i])
            elapsed += seconds[i] / 2 + serial
            let truth = total2 - elapsed
            if i + 1 >= n / 10 && i + 1 < n * 9 / 10 {
                let guess = eta.secondsLeft(elapsedSeconds: elapsed)
                #expect(abs(guess - truth) <= 0.25 * truth, "after \(i + 1) runs: \(guess) s vs \(truth) s")
            }
            if i + 1 == n / 10 {
                // The count-based ETA (mean pace × runs left) is wrong by far more here.
                let countBased = elapsed / Double(i + 1) * Double(n - i - 1)
                #expect(countBased < 0.5 * truth)
            }
        }
        #expect(eta.secondsLeft(elapsedSeconds: elapsed) == 0)
    }

    /// Long equal runs on 2 jobs, the second of each pair finishing just after the first: at
    /// every first-of-a-pair, the other run has run as long as it. Counting that run's time
    /// keeps the ETA at the truth; leaving it out charged it to the serial part and about
    /// doubled the ETA at the first result (the pfl_400 sweep's 12 h 36 min, then 6 h 13 min).
    @Test func runsInFlightCountWithTheTimeTheyHaveRun() {
        let n = 52, d = 900.0
        var eta = EstimatedTimeLeft(costs: Array(repeating: 1, count: n), families: Array(repeating: "fed", count: n), jobs: 2)
        var blind = eta
        for pair in 0..<(n / 2) {
            let first = 2 * pair, elapsed = d * Double(pair + 1)
            eta.finished(first, wallSeconds: d)
            blind.finished(first, wallSeconds: d)
            let truth = d * Double(n / 2 - pair - 1)                  // its partner is done now too
            let guess = eta.secondsLeft(elapsedSeconds: elapsed, inFlight: [first + 1: d])
            #expect(abs(guess - truth) <= 0.01 * d + 1e-9, "after run \(first + 1): \(guess) s vs \(truth) s")
            if pair == 0 { #expect(blind.secondsLeft(elapsedSeconds: elapsed) > 1.9 * truth) }
            eta.finished(first + 1, wallSeconds: d)
            blind.finished(first + 1, wallSeconds: d)
        }
    }

    @Test func noEstimateBeforeTheFirstRun() {
        let eta = EstimatedTimeLeft(costs: [1, 2], families: ["a", "a"], jobs: 1)
        #expect(eta.secondsLeft(elapsedSeconds: 0).isNaN)
    }

    @Test func theTailIsNeverShorterThanItsLongestRun() {
        var eta = EstimatedTimeLeft(costs: [1, 1, 100], families: ["a", "a", "a"], jobs: 8)
        eta.finished(0, wallSeconds: 1)
        eta.finished(1, wallSeconds: 1)
        // 8 jobs but one run left: it takes its own 100 s, not 100/8.
        #expect(eta.secondsLeft(elapsedSeconds: 0.25) >= 100)
    }
}

/// A tiny deterministic generator (SplitMix64) so the simulated sweep is the same every time.
struct SystemRandomNumberGeneratorStub {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func uniform(_ a: Double, _ b: Double) -> Double { a + (b - a) * Double(next() >> 11) / Double(1 << 53) }
}
