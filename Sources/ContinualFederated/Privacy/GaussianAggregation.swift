import ContinualCore

/// Client-level DP-FedAvg's server step (McMahan et al. 2018, "Learning Differentially Private
/// Recurrent Language Models", Algorithm 1 with the fixed-denominator estimator):
///
///     Δ = ( Σₖ clip(Δₖ, C) + N(0, σ²C² I) ) / (q·N)
///
/// Every client's update is clipped to L2 norm `clipNorm` (C) and weighted equally, the sum gets
/// Gaussian noise of standard deviation `noiseMultiplier`·C per coordinate, and the result is
/// divided by the *expected* number of participants q·N, not the realised one, so the
/// sensitivity of the average is C / (q·N) whatever the sample. With Poisson client sampling at
/// rate q each round is the subsampled Gaussian mechanism that `RDPAccountant` accounts for.
///
/// Noise is drawn from `random` (Box–Muller on the toolkit's xoshiro256**), one value per
/// coordinate in coordinate order, so the result is fixed by the seed.
public struct GaussianAggregation: Sendable, Equatable {
    /// C: the L2 bound of every client's update.
    public var clipNorm: Double
    /// σ: noise standard deviation in units of C (z in the paper).
    public var noiseMultiplier: Double

    public init(clipNorm: Double, noiseMultiplier: Double) {
        precondition(clipNorm.isFinite && clipNorm > 0, "clipNorm must be finite and > 0")
        precondition(noiseMultiplier.isFinite && noiseMultiplier >= 0, "noiseMultiplier must be finite and ≥ 0")
        self.clipNorm = clipNorm
        self.noiseMultiplier = noiseMultiplier
    }

    /// Clips each update, sums them in client order, adds the noise and divides by
    /// `expectedClients` (q·N, > 0). The updates' `samples` are ignored (equal weights).
    public func aggregate(_ updates: [ClientUpdate], expectedClients: Double,
                          random: inout RandomSource) throws(AggregationError) -> [Float] {
        guard !updates.isEmpty else { throw .empty }
        guard expectedClients.isFinite, expectedClients > 0 else {
            throw .invalidRule("expected clients per round must be > 0, got \(expectedClients)")
        }
        try AggregationRule.checkDeltas(updates)
        var sum = [Double](repeating: 0, count: updates[0].delta.count)
        for u in updates {
            var d = u.delta
            clipToNorm(&d, bound: clipNorm)
            for (j, v) in d.enumerated() { sum[j] += Double(v) }
        }
        let sd = noiseMultiplier * clipNorm
        return sum.map { s in
            let noise = sd > 0 ? sd * random.normal() : 0
            return Float((s + noise) / expectedClients)
        }
    }
}
