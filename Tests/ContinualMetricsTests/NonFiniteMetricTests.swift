import Testing
import ContinualMetrics

/// Every metric on matrices holding NaN and ±∞ (a diverged run, an empty test set): it ends, a
/// NaN it reads makes it NaN (never silently dropped), an ∞ it reads makes it non-finite, entries
/// it does not read do not change it, and finite inputs give a finite value. (−∞ inside a
/// maximum — Chaudhry's and Mammoth's forgetting — is absorbed by any larger value, as it should.)
@Suite struct NonFiniteMetricTests {
    /// One metric and the entries (i, j) of R — and b[j] for the baseline — that it reads.
    struct Metric: Sendable {
        var name: String
        var value: @Sendable (AccuracyMatrix, [Double]) -> Double
        var reads: @Sendable (Int) -> (cells: Set<[Int]>, baseline: Set<Int>)
        var usesMax: Bool { name.hasPrefix("forgetting") && name != "forgetting_last" }
    }

    static let metrics: [Metric] = [
        Metric(name: "acc", value: { r, _ in r.acc }, reads: { t in (Set((0..<t).map { [t - 1, $0] }), []) }),
        Metric(name: "bwt", value: { r, _ in r.bwt },
               reads: { t in (Set((0..<(t - 1)).flatMap { [[t - 1, $0], [$0, $0]] }), []) }),
        Metric(name: "fwt", value: { r, b in r.fwt(baseline: b) },
               reads: { t in (Set((1..<t).map { [$0 - 1, $0] }), Set(1..<t)) }),
        Metric(name: "fwt_init", value: { r, b in r.fwtInit(initial: b) },
               reads: { t in (Set((1..<t).map { [$0 - 1, $0] }), Set(1..<t)) }),
        Metric(name: "forgetting", value: { r, _ in r.forgetting },
               reads: { t in (Set((0..<(t - 1)).flatMap { j in (0..<t).map { [$0, j] } }), []) }),
        Metric(name: "forgetting_last", value: { r, _ in r.forgettingLast },
               reads: { t in (Set((0..<(t - 1)).flatMap { [[t - 1, $0], [$0, $0]] }), []) }),
        Metric(name: "forgetting_max_all_rows", value: { r, _ in r.forgettingMaxAllRows },
               reads: { t in (Set((0..<(t - 1)).flatMap { j in (0..<t).map { [$0, j] } }), []) }),
        Metric(name: "bwt_all_pairs", value: { r, _ in r.bwtAllPairs },
               reads: { t in (Set((1..<t).flatMap { i in (0..<i).flatMap { [[i, $0], [$0, $0]] } }), []) }),
        Metric(name: "learning_accuracy", value: { r, _ in r.learningAccuracy },
               reads: { t in (Set((0..<t).map { [$0, $0] }), []) }),
    ]

    /// A small deterministic generator (the test must not depend on the system's random source).
    struct Draw {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        mutating func unit() -> Double { Double(next() % 1000) / 1000 }
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func oneNonFiniteEntryReachesExactlyTheMetricsThatReadIt(_ poison: Double) {
        var draw = Draw(state: poison.isNaN ? 1 : poison > 0 ? 2 : 3)
        for t in 2...5 {
            let base = (0..<t).map { _ in (0..<t).map { _ in draw.unit() } }
            let baseline = (0..<t).map { _ in draw.unit() }
            for metric in Self.metrics {
                let clean = metric.value(AccuracyMatrix(base), baseline)
                #expect(clean.isFinite, "\(metric.name) of a finite matrix (T = \(t)) is \(clean)")
                let reads = metric.reads(t)
                for i in 0..<t {
                    for j in 0..<t {
                        var r = base
                        r[i][j] = poison
                        let v = metric.value(AccuracyMatrix(r), baseline)
                        if reads.cells.contains([i, j]) {
                            if poison.isNaN {
                                #expect(v.isNaN, "\(metric.name): NaN at R[\(i)][\(j)] (T = \(t)) gave \(v)")
                            } else if poison > 0 || !metric.usesMax {
                                #expect(!v.isFinite, "\(metric.name): \(poison) at R[\(i)][\(j)] (T = \(t)) gave \(v)")
                            }
                        } else {
                            #expect(v == clean, "\(metric.name) changed when unread R[\(i)][\(j)] became \(poison)")
                        }
                    }
                }
                for j in 0..<t {
                    var b = baseline
                    b[j] = poison
                    let v = metric.value(AccuracyMatrix(base), b)
                    if reads.baseline.contains(j) {
                        #expect(poison.isNaN ? v.isNaN : !v.isFinite, "\(metric.name): \(poison) at b[\(j)] gave \(v)")
                    } else {
                        #expect(v == clean, "\(metric.name) changed when unread b[\(j)] became \(poison)")
                    }
                }
            }
        }
    }

    @Test func matricesFullOfNonFiniteValuesNeverTrapAndMetricSetAgrees() {
        var draw = Draw(state: 42)
        let pool: [Double] = [.nan, .infinity, -.infinity, 0, 1, 0.5]
        for trial in 0..<300 {
            let t = 1 + trial % 5
            let r = (0..<t).map { _ in (0..<t).map { _ in pool[Int(draw.next() % 6)] } }
            let b = (0..<t).map { _ in pool[Int(draw.next() % 6)] }
            let m = AccuracyMatrix(r)
            let set = MetricSet(matrix: m, randomBaseline: b, initialBaseline: b)
            #expect(set.acc.bitPattern == m.acc.bitPattern || (set.acc.isNaN && m.acc.isNaN))
            #expect(set.forgetting.isNaN == m.forgetting.isNaN)
            if t == 1 {
                #expect(set.bwt.isNaN && set.fwt.isNaN && set.forgetting.isNaN)
            }
            for metric in Self.metrics where t > 1 || ["acc", "learning_accuracy"].contains(metric.name) {
                let v = metric.value(m, b)
                let reads = metric.reads(t)
                let inputs = reads.cells.map { r[$0[0]][$0[1]] } + reads.baseline.map { b[$0] }
                if inputs.contains(where: \.isNaN) { #expect(v.isNaN, "\(metric.name) of \(r) is \(v)") }
                if inputs.allSatisfy(\.isFinite) { #expect(v.isFinite, "\(metric.name) of \(r) is \(v)") }
                if inputs.contains(.infinity) || (!metric.usesMax && inputs.contains(-.infinity)) {
                    #expect(!v.isFinite, "\(metric.name) of \(r) is \(v)")
                }
            }
        }
    }

    @Test func seedStatisticsSkipNaNAndPropagateInfinity() {
        let s = SeedStatistics([0.5, .nan, 0.7])
        #expect(s.n == 2 && abs(s.mean - 0.6) < 1e-15)
        let all = SeedStatistics([Double.nan, .nan])
        #expect(all.n == 0 && all.mean.isNaN && all.std.isNaN && all.ciHalfWidth.isNaN)
        let inf = SeedStatistics([0.5, .infinity])
        #expect(!inf.mean.isFinite && !inf.std.isFinite)
    }
}
