/// The two-sample Kolmogorov–Smirnov test for two samples of equal size n, two-sided, with the
/// exact p-value: the statistic D = max |F₁ − F₂| of the empirical distribution functions and
/// P(D ≥ d) under the null, by the reflection formula
///
///     P = 2 · Σₖ (−1)^(k+1) · C(2n, n − k·h) / C(2n, n),   h = n·d,
///
/// evaluated as SciPy does (`scipy.stats.ks_2samp`, method "exact", `_compute_prob_outside_square`:
/// each ratio of binomials as a product of h simple factors, then a Horner-like nesting, which
/// avoids the cancellation of the alternating sum), so that p-values agree with SciPy's to the
/// last bit and KSWIN's threshold decisions with river's.
enum KolmogorovSmirnov {
    /// (D, p) for two samples of the same size (> 0); both NaN when a value is NaN.
    static func twoSample(_ a: [Double], _ b: [Double]) -> (statistic: Double, pValue: Double) {
        precondition(a.count == b.count && !a.isEmpty, "equal, non-empty samples")
        let n = a.count
        // NaN has no place in an order: SciPy propagates it (statistic and p NaN, so KSWIN never
        // fires), and the merge below would never advance past it.
        guard !a.contains(where: \.isNaN), !b.contains(where: \.isNaN) else { return (.nan, .nan) }
        let x = a.sorted(), y = b.sorted()
        // max |#{x ≤ t} − #{y ≤ t}| over every t in either sample (ties: `searchsorted` right).
        var i = 0, j = 0, h = 0
        while i < n || j < n {
            let t = j >= n || (i < n && x[i] <= y[j]) ? x[i] : y[j]
            while i < n && x[i] <= t { i += 1 }
            while j < n && y[j] <= t { j += 1 }
            h = max(h, abs(i - j))
        }
        let statistic = Double(h) / Double(n)
        guard h > 0 else { return (statistic, 1) }
        return (statistic, min(max(probabilityOutsideSquare(n: n, h: h), 0), 1))
    }

    /// SciPy's `_compute_prob_outside_square(n, h)`: P(D_{n,n} ≥ h/n), in its operation order.
    static func probabilityOutsideSquare(n: Int, h: Int) -> Double {
        var p = 0.0
        var k = n / h
        while k >= 0 {
            var term = 1.0
            for j in 0..<h {
                term = Double(n - k * h - j) * term / Double(n + k * h + j + 1)
            }
            p = term * (1 - p)
            k -= 1
        }
        return 2 * p
    }
}
