/// One metric summarised over the seeds of a configuration: n, mean, sample standard deviation and
/// a two-sided 95 % confidence interval for the mean.
///
/// Definitions (the ones pandas and `scipy.stats.t.interval` use, so the Python package agrees):
/// - `std` is the sample standard deviation with Bessel's correction (divisor n − 1);
/// - the interval is mean ± t(0.975, n − 1) · std / √n (Student's t, seeds treated as independent
///   draws of a normally distributed run metric — with 3–5 seeds this is the honest interval;
///   a normal z of 1.96 would be 2–6× too narrow at n = 2–3).
///
/// Precision: inputs are `Double`; NaN inputs are skipped (a run whose metric is undefined, e.g.
/// FWT with one experience, does not count towards n). With n = 0 every field but `n` is NaN;
/// with n = 1, `std` and the interval are NaN (one seed has no spread). Huge values follow
/// IEEE arithmetic (an infinite input gives an infinite or NaN mean, never a trap).
public struct SeedStatistics: Sendable, Equatable {
    /// Finite-or-infinite (non-NaN) values summarised.
    public var n: Int
    public var mean: Double
    /// Sample standard deviation (n − 1); NaN when n < 2.
    public var std: Double
    /// Half-width of the 95 % interval, t(0.975, n − 1) · std / √n; NaN when n < 2.
    public var ciHalfWidth: Double

    public var ciLow: Double { mean - ciHalfWidth }
    public var ciHigh: Double { mean + ciHalfWidth }

    public init<C: Collection>(_ values: C) where C.Element == Double {
        let xs = values.filter { !$0.isNaN }
        n = xs.count
        guard n > 0 else { mean = .nan; std = .nan; ciHalfWidth = .nan; return }
        // Two-pass mean and sum of squares (stable for the small n of seed sets).
        let m = xs.reduce(0, +) / Double(n)
        mean = m
        guard n > 1 else { std = .nan; ciHalfWidth = .nan; return }
        let ss = xs.reduce(0) { $0 + ($1 - m) * ($1 - m) }
        std = (ss / Double(n - 1)).squareRoot()
        ciHalfWidth = StudentT.quantile975(degreesOfFreedom: n - 1) * std / Double(n).squareRoot()
    }
}

/// Quantiles of Student's t distribution needed for confidence intervals over seeds.
public enum StudentT {
    /// t(0.975, ν) for ν = 1…30, as `scipy.stats.t.ppf(0.975, ν)` gives them (full double precision).
    static let table975: [Double] = [
        12.706204736174694, 4.302652729749462, 3.1824463052837078, 2.7764451051977934,
        2.5705818356363146, 2.4469118511449786, 2.364624251592784, 2.306004135204166,
        2.262157162798205, 2.228138851986274, 2.200985160091639, 2.1788128296672284,
        2.1603686564627913, 2.144786687917804, 2.131449545559776, 2.1199052992212546,
        2.1098155778333156, 2.1009220402410382, 2.0930240544083087, 2.085963447265864,
        2.0796138447276795, 2.0738730679040254, 2.0686576104190486, 2.0638985616280245,
        2.0595385527532972, 2.0555294386428735, 2.0518305164802846, 2.0484071417952454,
        2.045229642132703, 2.0422724563012378,
    ]

    /// The 0.975 quantile of Student's t with `degreesOfFreedom` ν ≥ 1 (the two-sided 95 % critical
    /// value). ν ≤ 30 comes from the table; above it the Cornish–Fisher expansion around the normal
    /// quantile z = 1.959964 (Abramowitz & Stegun 26.7.5), whose error is below 3e-8 for ν > 30 (and shrinks as ν⁻⁵).
    /// ν ≤ 0 returns NaN.
    public static func quantile975(degreesOfFreedom nu: Int) -> Double {
        guard nu >= 1 else { return .nan }
        if nu <= table975.count { return table975[nu - 1] }
        let z = 1.959963984540054, v = Double(nu)
        let z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z, z9 = z7 * z * z
        let g1 = (z3 + z) / 4
        let g2 = (5 * z5 + 16 * z3 + 3 * z) / 96
        let g3 = (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / 384
        let g4 = (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / 92160
        return z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v)
    }
}
