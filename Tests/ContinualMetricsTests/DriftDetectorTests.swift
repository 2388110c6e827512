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
