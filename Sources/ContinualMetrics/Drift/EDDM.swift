import ContinualCore

/// The Early Drift Detection Method (Baena-García et al. 2006) over a stream of errors (1 wrong,
/// 0 right): it watches the distance between consecutive errors. With p′ the mean and s′ the
/// standard deviation of those distances, it keeps the maximum of p′ + 2s′; when the ratio of the
/// current p′ + 2s′ to that maximum falls below β a drift is signalled, below α a warning.
/// Follows river's `drift.binary.EDDM`: tested only at errors, after more than `warmStart` values
/// and more than `warmStart` errors; the maximum is only raised, never tested, at the error that
/// raises it; a warning persists until the next tested error.
public struct EDDM: DriftDetector {
    public var warmStart: Int
    /// α: the warning level (0.95).
    public var alpha: Double
    /// β: the drift level (0.9); must not exceed α.
    public var beta: Double

    private var distances = RunningVariance()
    private var n = 0
    private var lastError = 0
    private var errors = 0
    private var maxLevel = -1.0
    private var warning = false
    private var drifted = false

    public init(warmStart: Int = 30, alpha: Double = 0.95, beta: Double = 0.9) {
        self.warmStart = warmStart
        self.alpha = alpha
        self.beta = beta
    }

    public mutating func update(_ value: Double) -> DriftSignal {
        if drifted { self = EDDM(warmStart: warmStart, alpha: alpha, beta: beta) }
        n += 1
        if value == 1 {
            errors += 1
            distances.add(Double(n - lastError))
            if n > warmStart {
                let mean = distances.mean.mean
                let deviation = distances.variance.squareRoot()   // river: `** 0.5` (C pow); equal on every parity-test stream
                let level = mean + 2 * deviation
                if level > maxLevel {
                    maxLevel = level
                } else if errors > warmStart {
                    let ratio = level / maxLevel
                    if ratio < beta {
                        drifted = true
                    } else {
                        warning = ratio < alpha
                    }
                }
            }
            lastError = n
        }
        if drifted { return .drift }
        return warning ? .warning : .stable
    }
}
