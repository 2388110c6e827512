/// A detector of change in a stream of numbers — on a phone, the signals the model already has:
/// whether each prediction was wrong (0/1), its loss, or a feature's value.
///
/// `update` takes the next value and says whether the detector signals a drift (or, for the
/// detectors that have one, a warning) at that value. After a drift the detector starts afresh
/// with the next value, as river does (river 0.26: `if self.drift_detected: self._reset()` at the
/// top of every `update`), so the indices it reports are comparable with river's.
///
/// Precision: every detector computes in `Double`, in the operation order of its reference (the
/// papers' pseudo-code as river implements it), so detection indices equal river's on the same
/// input (checked by `python/tests/test_drift_detectors.py`).
public protocol DriftDetector: Sendable {
    /// Feeds the next value; returns the detector's state after it.
    mutating func update(_ value: Double) -> DriftSignal
}

/// What a detector says after a value.
public enum DriftSignal: String, Sendable, Equatable, Codable {
    /// No change.
    case stable
    /// The change statistic is between its warning and drift levels (DDM, EDDM only).
    case warning
    /// A change: the detector restarts with the next value.
    case drift
}

extension DriftDetector {
    /// The signals of a whole stream, one per value.
    public mutating func signals<S: Sequence>(_ values: S) -> [DriftSignal] where S.Element == Double {
        values.map { update($0) }
    }
}

/// river's `stats.Mean`: an incremental mean updated as `mean += (1 / n) · (x − mean)`, the
/// order of operations the detectors' thresholds depend on.
struct RunningMean: Sendable {
    private(set) var n: Double = 0
    private(set) var mean: Double = 0

    mutating func add(_ x: Double) {
        n += 1
        mean += (1 / n) * (x - mean)
    }
}

/// river's `stats.Var` (ddof = 1), Welford's update: `S += (x − mean_old) · (x − mean_new)`.
struct RunningVariance: Sendable {
    private(set) var mean = RunningMean()
    private var sumOfSquares: Double = 0

    mutating func add(_ x: Double) {
        let old = mean.mean
        mean.add(x)
        sumOfSquares += (x - old) * (x - mean.mean)
    }

    /// The sample variance (divisor n − 1); 0 with fewer than two values.
    var variance: Double { mean.n > 1 ? sumOfSquares / (mean.n - 1) : 0 }
}
