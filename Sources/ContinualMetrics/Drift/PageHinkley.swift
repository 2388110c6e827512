/// The Page-Hinkley test (Page 1954): a cumulative sum of each value's deviation from the running
/// mean, less a tolerance δ, with a forgetting factor α; a drift when the sum rises more than λ
/// above its minimum (an increase of the mean) or falls more than λ below its maximum (a
/// decrease). Follows river's `drift.PageHinkley` (two-sided by default; `mode` chooses).
///
/// No warning level. The running mean includes the current value (as in river).
public struct PageHinkley: DriftDetector {
    /// Which changes of the mean count.
    public enum Mode: String, Sendable, CaseIterable, Codable { case up, down, both }

    /// Values seen before a drift can be signalled.
    public var minInstances: Int
    /// δ: the magnitude of change tolerated.
    public var delta: Double
    /// λ: the detection threshold.
    public var threshold: Double
    /// α: the forgetting factor of the cumulative sums (1 − 10⁻⁴ by default).
    public var alpha: Double
    public var mode: Mode

    private var mean = RunningMean()
    private var sumIncrease = 0.0
    private var sumDecrease = 0.0
    private var minIncrease = Double.infinity
    private var maxDecrease = -1.0
    private var drifted = false

    public init(minInstances: Int = 30, delta: Double = 0.005, threshold: Double = 50, alpha: Double = 1 - 0.0001,
                mode: Mode = .both) {
        self.minInstances = minInstances
        self.delta = delta
        self.threshold = threshold
        self.alpha = alpha
        self.mode = mode
    }

    public mutating func update(_ value: Double) -> DriftSignal {
        if drifted { self = PageHinkley(minInstances: minInstances, delta: delta, threshold: threshold, alpha: alpha, mode: mode) }
        mean.add(value)
        let deviation = value - mean.mean
        sumIncrease = alpha * sumIncrease + deviation - delta
        sumDecrease = alpha * sumDecrease + deviation + delta
        if sumIncrease < minIncrease { minIncrease = sumIncrease }
        if sumDecrease > maxDecrease { maxDecrease = sumDecrease }
        guard mean.n >= Double(minInstances) else { return .stable }
        let increase = sumIncrease - minIncrease
        let decrease = maxDecrease - sumDecrease
        switch mode {
        case .up: drifted = increase > threshold
        case .down: drifted = decrease > threshold
        case .both: drifted = increase > threshold || decrease > threshold
        }
        return drifted ? .drift : .stable
    }
}
