/// The Drift Detection Method (Gama, Medas, Castillo & Rodrigues 2004) over a stream of errors
/// (1: the prediction was wrong, 0: right). With p the error rate so far and s = √(p(1 − p)/n), it
/// remembers p_min and s_min where p + s was smallest; warning when p + s > p_min + w·s_min, drift
/// when p + s > p_min + d·s_min (w = 2, d = 3: ≈ 95 % and 99 % confidence). Follows river's
/// `drift.binary.DDM`: no test until more than `warmStart` values, and (river's choice, kept)
/// p_min/s_min are updated when p + s is *at most* the minimum, ties included.
public struct DDM: DriftDetector {
    public var warmStart: Int
    public var warningThreshold: Double
    public var driftThreshold: Double

    private var errorRate = RunningMean()
    private var pMin = 0.0
    private var sMin = 0.0
    private var psMin = Double.infinity
    private var drifted = false

    public init(warmStart: Int = 30, warningThreshold: Double = 2, driftThreshold: Double = 3) {
        self.warmStart = warmStart
        self.warningThreshold = warningThreshold
        self.driftThreshold = driftThreshold
    }

    public mutating func update(_ value: Double) -> DriftSignal {
        if drifted { self = DDM(warmStart: warmStart, warningThreshold: warningThreshold, driftThreshold: driftThreshold) }
        errorRate.add(value)
        let p = errorRate.mean
        let n = errorRate.n
        let s = (p * (1 - p) / n).squareRoot()
        guard n > Double(warmStart) else { return .stable }
        if p + s <= psMin {
            pMin = p
            sMin = s
            psMin = pMin + sMin
        }
        if p + s > pMin + driftThreshold * sMin {
            drifted = true
            return .drift
        }
        return p + s > pMin + warningThreshold * sMin ? .warning : .stable
    }
}
