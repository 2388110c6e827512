/// KSWIN, Kolmogorov–Smirnov windowing (Raab, Heusinger & Schleif 2020): a sliding window of the
/// last `windowSize` values; once full, `statSize` values drawn at random from its older part are
/// compared with its newest `statSize` values by the two-sample KS test, and a drift is signalled
/// when p ≤ α and D > 0.1.
///
/// Follows river's `drift.KSWIN`, including how it draws: CPython's `random.Random(seed)`
/// (`PythonRandom`), `sample(range(windowSize − statSize), statSize)` at every full window, and
/// the exact KS p-value SciPy's `ks_2samp` computes for equal sample sizes (`KolmogorovSmirnov`).
/// After a drift it restarts with an empty window and its generator reseeded (river's `_reset`),
/// so the same seed draws the same indices again. The seed is required here (river's default,
/// `None`, draws from the operating system), default 1 — runs must be reproducible.
public struct KSWIN: DriftDetector {
    /// α: the significance level of the KS test.
    public var alpha: Double
    public var windowSize: Int
    /// Values in each of the two samples compared (at most half the window).
    public var statSize: Int
    public var seed: UInt64

    private var window: [Double] = []
    private var random: PythonRandom
    private var drifted = false

    public init(alpha: Double = 0.005, windowSize: Int = 100, statSize: Int = 30, seed: UInt64 = 1) {
        precondition(windowSize >= 2 * statSize && statSize > 0, "KSWIN needs 0 < stat_size ≤ window_size / 2")
        self.alpha = alpha
        self.windowSize = windowSize
        self.statSize = statSize
        self.seed = seed
        random = PythonRandom(seed: seed)
    }

    public mutating func update(_ value: Double) -> DriftSignal {
        if drifted { self = KSWIN(alpha: alpha, windowSize: windowSize, statSize: statSize, seed: seed) }
        window.append(value)
        if window.count > windowSize { window.removeFirst(window.count - windowSize) }
        guard window.count >= windowSize else { return .stable }
        let reference = random.sample(rangeOf: windowSize - statSize, count: statSize).map { window[$0] }
        let recent = Array(window[(windowSize - statSize)...])
        let (d, p) = KolmogorovSmirnov.twoSample(reference, recent)
        drifted = p <= alpha && d > 0.1
        return drifted ? .drift : .stable
    }
}
