import ContinualCore

/// Rényi-DP accountant for the Poisson-subsampled Gaussian mechanism, the mechanism of one
/// DP-FedAvg round (each client takes part independently with probability q; the sum of clipped
/// updates gets Gaussian noise of σ times the clipping norm).
///
/// - RDP of one round at order α: log(A_α) / (α − 1), with A_α computed as in Mironov, Talwar and
///   Zhang 2019, "Rényi Differential Privacy of the Sampled Gaussian Mechanism": the finite
///   binomial sum for integer α (Sec. 3.2) and the two convergent series with erfc tails for
///   fractional α (Sec. 3.3; summed until both series decrease and their terms are e⁻³⁰ below the
///   total, at most 1,000 terms, else that order is dropped as +∞). Special cases: q = 0 gives 0;
///   σ = 0 gives +∞; q = 1 gives the Gaussian mechanism's α / (2σ²).
/// - Composition over rounds adds RDP order by order (Mironov 2017, Prop. 1).
/// - Conversion to (ε, δ): the improved bound of Balle et al. 2020, "Hypothesis testing
///   interpretations and Rényi DP" (Prop. 12; also Asoodeh et al. 2020, eq. 20):
///   ε = min over α > 1.01 of  rdp(α) + log(1 − 1/α) − log(δ·α)/(α − 1), floored at 0; an order
///   whose RDP already bounds δ through the KL divergence (δ² + e^{−rdp} > 1) gives ε = 0.
///
/// The default orders are those of Google's `dp-accounting` (1.1 … 10.9 in steps of 0.1, 11 … 63,
/// 128, 256, 512, 1024), so that its accountant and this one report the same ε; the Python test
/// `python/tests/test_privacy_accountant.py` checks that to 1e-6 relative on a grid of (q, σ,
/// rounds, δ). Precision: all arithmetic in `Double`, in log space; log erfc uses the C library's
/// `erfc` where it is normal and its asymptotic series beyond (x > 26).
public struct RDPAccountant: Sendable, Equatable {
    /// Rényi orders α (> 1) at which RDP is tracked.
    public let orders: [Double]
    /// Accumulated RDP at each order (same indices as `orders`).
    public private(set) var rdp: [Double]

    /// `dp-accounting`'s default orders.
    public static let defaultOrders: [Double] =
        (1..<100).map { 1 + Double($0) / 10 } + (11..<64).map(Double.init) + [128, 256, 512, 1024]

    public init(orders: [Double] = RDPAccountant.defaultOrders) {
        precondition(!orders.isEmpty && orders.allSatisfy { $0 > 1 && $0.isFinite }, "RDP orders must be finite and > 1")
        self.orders = orders
        self.rdp = [Double](repeating: 0, count: orders.count)
    }

    /// An accountant that has already accumulated `rdp` at `orders` (a checkpointed run);
    /// nil when the two differ in length or an entry is negative or NaN.
    public init?(orders: [Double] = RDPAccountant.defaultOrders, rdp: [Double]) {
        guard rdp.count == orders.count, rdp.allSatisfy({ $0 >= 0 }) else { return nil }
        self.init(orders: orders)
        self.rdp = rdp
    }

    /// Adds `rounds` rounds of the Poisson-subsampled Gaussian mechanism with sampling rate
    /// `samplingRate` (q ∈ [0, 1]) and noise multiplier `noiseMultiplier` (σ ≥ 0).
    public mutating func compose(samplingRate q: Double, noiseMultiplier sigma: Double, rounds: Int = 1) {
        precondition(q >= 0 && q <= 1, "sampling rate must be in [0, 1], got \(q)")
        precondition(sigma >= 0 && !sigma.isNaN, "noise multiplier must be ≥ 0, got \(sigma)")
        precondition(rounds >= 0, "rounds must be ≥ 0")
        guard rounds > 0 else { return }
        for (i, a) in orders.enumerated() {
            rdp[i] += Double(rounds) * Self.subsampledGaussianRDP(q: q, sigma: sigma, order: a)
        }
    }

    /// ε at `delta` (0 < δ < 1) and the order that attains it. δ = 0 gives +∞ unless no privacy
    /// has been spent.
    public func epsilon(delta: Double) -> (epsilon: Double, order: Double) {
        precondition(delta >= 0 && delta < 1, "delta must be in [0, 1), got \(delta)")
        if delta == 0 { return rdp.allSatisfy { $0 == 0 } ? (0, 0) : (.infinity, 0) }
        var best = Double.infinity, bestOrder = orders[0]
        for (a, r) in zip(orders, rdp) {
            let e: Double
            if r < 0 { e = 0 }
            else if delta * delta + _expm1(-r) > 0 { e = 0 }
            else if a > 1.01 { e = r + _log1p(-1 / a) - _log(delta * a) / (a - 1) }
            else { e = .infinity }
            if e < best { best = e; bestOrder = a }
        }
        return (max(0, best), bestOrder)
    }

    // MARK: - One round

    /// RDP at order α of one Poisson-subsampled Gaussian round.
    public static func subsampledGaussianRDP(q: Double, sigma: Double, order a: Double) -> Double {
        if q == 0 { return 0 }
        if a.isInfinite || sigma == 0 { return .infinity }
        if q == 1 { return a / (2 * sigma * sigma) }
        let logA = a == a.rounded() ? logAInteger(q: q, sigma: sigma, order: Int(a)) : logAFractional(q: q, sigma: sigma, order: a)
        return logA / (a - 1)
    }

    /// log A_α for integer α: log Σᵢ C(α, i) qⁱ (1−q)^{α−i} exp((i² − i) / (2σ²)).
    static func logAInteger(q: Double, sigma: Double, order a: Int) -> Double {
        var logA = -Double.infinity
        let lq = _log(q), l1q = _log1p(-q)
        for i in 0...a {
            let di = Double(i)
            let term = logBinomial(Double(a), di) + di * lq + Double(a - i) * l1q + (di * di - di) / (2 * sigma * sigma)
            logA = logAdd(logA, term)
        }
        return logA
    }

    /// log A_α for fractional α: the two series of Mironov et al. 2019, Sec. 3.3, split at
    /// z₀ = σ² log(1/q − 1) + 1/2.
    static func logAFractional(q: Double, sigma: Double, order a: Double) -> Double {
        var a0 = -Double.infinity, a1 = -Double.infinity
        let z0 = sigma * sigma * _log(1 / q - 1) + 0.5
        let lq = _log(q), l1q = _log1p(-q), s2 = 2.0.squareRoot() * sigma
        var last0 = -Double.infinity, last1 = -Double.infinity
        for i in 0..<1000 {
            let di = Double(i), j = a - di
            let coef = logBinomial(a, di)
            let t0 = coef + di * lq + j * l1q
            let t1 = coef + j * lq + di * l1q
            let e0 = _log(0.5) + logErfc((di - z0) / s2)
            let e1 = _log(0.5) + logErfc((z0 - j) / s2)
            let s0 = t0 + (di * di - di) / (2 * sigma * sigma) + e0
            let s1 = t1 + (j * j - j) / (2 * sigma * sigma) + e1
            a0 = logAdd(a0, s0)
            a1 = logAdd(a1, s1)
            let total = logAdd(a0, a1)
            if s0 < last0 && s1 < last1 && max(s0, s1) < total - 30 { return total }
            last0 = s0
            last1 = s1
        }
        return .infinity
    }

    /// log |C(n, k)| for real n, k via log-gamma (C(α, i) alternates in sign for fractional α
    /// and i > α; the series use its magnitude, as in the paper's bound).
    static func logBinomial(_ n: Double, _ k: Double) -> Double {
        _lgamma(n + 1) - _lgamma(k + 1) - _lgamma(n - k + 1)
    }

    /// log(eˣ + eʸ) without overflow.
    static func logAdd(_ x: Double, _ y: Double) -> Double {
        let lo = min(x, y), hi = max(x, y)
        if lo == -.infinity { return hi }
        return _log1p(_exp(lo - hi)) + hi
    }

    /// log erfc(x), accurate in the far tail where erfc underflows.
    static func logErfc(_ x: Double) -> Double {
        if x <= 26 { return _log(_erfc(x)) }
        // erfc(x) ~ exp(−x² − 1/(2x²) + 5/(8x⁴) − 37/(24x⁶) + 353/(64x⁸)) / (x√π)
        let x2 = x * x
        return -_log(Double.pi) / 2 - _log(x) - x2 - 0.5 / x2 + 0.625 / (x2 * x2)
            - 37.0 / 24.0 / (x2 * x2 * x2) + 353.0 / 64.0 / (x2 * x2 * x2 * x2)
    }
}
