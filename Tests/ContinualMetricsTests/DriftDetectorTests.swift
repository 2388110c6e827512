import Testing
@testable import ContinualMetrics

/// The drift detectors (issue 32). Parity with river on many streams is checked in
/// python/tests/test_drift_detectors.py; these are the properties and edge cases.
@Suite struct DriftDetectorTests {
    /// Every detector, with its defaults.
    static let all: [DriftDetectorSpec] = DriftDetectorSpec.Kind.allCases.map { try! DriftDetectorSpec(type: $0.rawValue) }

    /// A deterministic 0/1 stream: error rate `p` (a fixed pattern, no randomness).
    func errors(_ n: Int, every k: Int) -> [Double] { (0..<n).map { $0 % k == 0 ? 1 : 0 } }

    @Test(arguments: all) func aConstantStreamNeverDrifts(spec: DriftDetectorSpec) {
        var d = spec.makeDetector()
        #expect(d.signals([Double](repeating: 0, count: 5000)).allSatisfy { $0 == .stable })
    }

    @Test(arguments: all) func anEmptyStreamAndNonFiniteValuesNeitherCrashNorHang(spec: DriftDetectorSpec) {
        var d = spec.makeDetector()
        #expect(d.signals([Double]()).isEmpty)
        // NaN compares false with every threshold: no signal is the documented outcome.
        let s = d.signals([Double](repeating: .nan, count: 200))
        #expect(s.count == 200)
    }

    @Test func ddmFindsAJumpInTheErrorRateAndWarnsFirst() {
        var d = DDM()
        let before = errors(1000, every: 10)    // 10 % errors
        let after = errors(1000, every: 2)      // 50 % errors
        let s = d.signals(before + after)
        let firstDrift = try! #require(s.firstIndex(of: .drift))
        let firstWarning = try! #require(s.firstIndex(of: .warning))
        #expect(firstDrift >= 1000 && firstDrift < 1100)
        #expect(firstWarning >= 1000 && firstWarning < firstDrift)
    }

    @Test func pageHinkleyModesSeeOnlyTheirDirection() {
        let down = [Double](repeating: 5, count: 500) + [Double](repeating: 0, count: 500)
        var up = PageHinkley(mode: .up), dn = PageHinkley(mode: .down)
        #expect(!up.signals(down).contains(.drift))
        #expect(dn.signals(down).contains(.drift))
    }

    @Test func adwinCutsAShiftedMeanAndRestarts() {
        var d = ADWIN()
        let s = d.signals([Double](repeating: 0, count: 1000) + [Double](repeating: 1, count: 1000))
        let first = try! #require(s.firstIndex(of: .drift))
        #expect(first >= 1000 && first < 1100)
        // After a drift the window restarts (river's behaviour): it holds only values after it.
        #expect(d.windowLength <= 2000 - first)
    }

    @Test func adwinHistogramKeepsTheWindowSumExactly() {
        // Integers: every sum is exact, so the bucket bookkeeping must give the plain mean.
        var d = ADWIN(clock: 1_000_000)   // never checks, so nothing is dropped
        let values = (0..<777).map { Double($0 % 13) }
        _ = d.signals(values)
        #expect(d.windowLength == 777)
        #expect(d.estimate == values.reduce(0, +) / 777)
    }

    @Test func scoreByHand() {
        // Drifts at 100 and 300. Detections: 50 (before any drift: false alarm), 120 (drift 1,
        // delay 20), 150 (second in segment: false alarm), 500 (drift 2, delay 200).
        let s = DriftScore(detections: [500, 150, 50, 120], drifts: [300, 100])
        #expect(s.delays == [20, 200])
        #expect(s.falseAlarms == 2)
        #expect(s.meanDelay == 110)
        // With an acceptable delay of 100, 500 is too late: drift 2 missed, one more false alarm.
        let late = DriftScore(detections: [500, 150, 50, 120], drifts: [300, 100], maxDelay: 100)
        #expect(late.delays == [20, nil])
        #expect(late.missed == 1 && late.falseAlarms == 3)
        #expect(DriftScore(detections: [], drifts: []).meanDelay == nil)
    }

    @Test func specsRefuseUnknownNamesAndValuesWithTheParameter() {
        #expect(throws: DriftDetectorSpec.Invalid.self) { try DriftDetectorSpec(type: "kswin2") }
        do {
            _ = try DriftDetectorSpec(type: "adwin", parameters: ["clock": 0])
            Issue.record("clock 0 accepted")
        } catch { #expect(error.description.contains("adwin.clock")) }
        do {
            _ = try DriftDetectorSpec(type: "ddm", parameters: ["warning_threshold": 3, "drift_threshold": 2])
            Issue.record("drift below warning accepted")
        } catch { #expect(error.description.contains("ddm.drift_threshold")) }
    }
}

extension DriftDetectorSpec: CustomTestStringConvertible {
    public var testDescription: String { kind.rawValue }
}

/// KSWIN's two ingredients, against values printed by CPython 3.11 and SciPy 1.17 (the commands
/// are in the comments): the generator that draws its reference sample, and the exact KS p-value.
@Suite struct KSWINIngredientTests {
    @Test func pythonRandomDrawsWhatCPythonDraws() {
        // python3 -c "import random; r = random.Random(1); print([r.getrandbits(32) for _ in range(3)])"
        var r = PythonRandom(seed: 1)
        #expect([r.next32(), r.next32(), r.next32()] == [577_090_037, 2_444_712_010, 3_639_700_191])
        // A seed of two 32-bit words: random.Random(2**40 + 7)
        var big = PythonRandom(seed: (1 << 40) + 7)
        #expect([big.next32(), big.next32()] == [2_635_837_658, 3_209_733_218])
        // random.Random(5).sample(range(70), 30): the pool branch KSWIN uses.
        var s = PythonRandom(seed: 5)
        #expect(s.sample(rangeOf: 70, count: 30) == [32, 45, 67, 3, 59, 31, 6, 57, 10, 7, 23, 30, 55, 15, 24, 34, 63, 36,
                                                      56, 0, 46, 13, 26, 17, 11, 62, 61, 4, 8, 39])
        // random.Random(5).sample(range(1000), 10): the set branch.
        var t = PythonRandom(seed: 5)
        #expect(t.sample(rangeOf: 1000, count: 10) == [637, 261, 759, 367, 814, 707, 965, 861, 757, 667])
    }

    @Test func exactPValuesEqualSciPys() {
        // from scipy.stats._stats_py import _compute_prob_outside_square as f; f(n, h)
        #expect(KolmogorovSmirnov.probabilityOutsideSquare(n: 30, h: 18) == 2.366488472641374e-05)
        #expect(KolmogorovSmirnov.probabilityOutsideSquare(n: 30, h: 1) == 1.0000000000000004)
        #expect(KolmogorovSmirnov.probabilityOutsideSquare(n: 30, h: 30) == 1.6911233892144742e-17)
        #expect(KolmogorovSmirnov.probabilityOutsideSquare(n: 10, h: 3) == 0.7869297884777761)
        #expect(KolmogorovSmirnov.probabilityOutsideSquare(n: 100, h: 17) == 0.11119526053829192)
        // ks_2samp([1, 2, 2, 3], [2, 2, 5, 6]): ties counted as searchsorted(side="right") does.
        let (d, p) = KolmogorovSmirnov.twoSample([1, 2, 2, 3], [2, 2, 5, 6])
        #expect(d == 0.5 && p == 0.7714285714285716)
        // Identical samples: D = 0, p = 1; p is clipped to [0, 1] (the n = 30, h = 1 value above exceeds 1).
        #expect(KolmogorovSmirnov.twoSample([3, 1, 2], [1, 2, 3]) == (0, 1))
        // NaN propagates (SciPy's default) instead of stalling the merge of the two orders.
        let withNaN = KolmogorovSmirnov.twoSample([1, .nan, 3], [1, 2, 3])
        #expect(withNaN.statistic.isNaN && withNaN.pValue.isNaN)
    }
}
