import ContinualCore

/// The supervised contrastive loss (Khosla et al., NeurIPS 2020, L^sup_out, the form SCR uses)
/// with its gradient, the L2 normalisation in front of it, and SCR's second view of a row.
enum SupConLoss {
    /// For R unit rows z_i (row-major, `width` wide) with labels y_i and s_ik = z_i·z_k / τ:
    ///
    ///     L = (1/R) Σ_i −(1/|P(i)|) Σ_{p∈P(i)} [ s_ip − log Σ_{a≠i} exp(s_ia) ],
    ///
    /// P(i) = {p ≠ i : y_p = y_i} (the anchor is never its own positive; every other row, of any
    /// class, is in the denominator). An anchor without a positive adds 0 and still counts in R
    /// (Khosla's code divides by |P(i)| = 0 there, giving NaN). Adds ∂L/∂z into `gradient`.
    static func loss(_ z: UnsafePointer<Double>, labels: [Int32], width w: Int, temperature tau: Double,
                     gradient dz: UnsafeMutablePointer<Double>) -> Double {
        let r = labels.count
        guard r > 1 else { return 0 }
        var s = [Double](repeating: 0, count: r * r)
        for i in 0..<r {
            for k in i..<r {
                var dot = 0.0
                for j in 0..<w { dot += z[i * w + j] * z[k * w + j] }
                s[i * r + k] = dot / tau
                s[k * r + i] = dot / tau
            }
        }
        // g[i][k] = ∂L/∂s_ik = (softmax_{a≠i}(s_i·)_k − 1[k ∈ P(i)] / |P(i)|) / R.
        var g = [Double](repeating: 0, count: r * r)
        var total = 0.0
        for i in 0..<r {
            var positives = 0
            for k in 0..<r where k != i && labels[k] == labels[i] { positives += 1 }
            guard positives > 0 else { continue }
            var top = -Double.infinity
            for k in 0..<r where k != i { top = max(top, s[i * r + k]) }
            var sum = 0.0, positiveSum = 0.0
            for k in 0..<r where k != i {
                sum += _exp(s[i * r + k] - top)
                if labels[k] == labels[i] { positiveSum += s[i * r + k] }
            }
            let lse = top + _log(sum)
            total -= positiveSum / Double(positives) - lse
            for k in 0..<r where k != i {
                let target = labels[k] == labels[i] ? 1 / Double(positives) : 0
                g[i * r + k] = (_exp(s[i * r + k] - lse) - target) / Double(r)
            }
        }
        // s_ik depends on z_i and z_k: ∂L/∂z_i = (1/τ) Σ_k (g_ik + g_ki) z_k.
        for i in 0..<r {
            for k in 0..<r where k != i {
                let c = (g[i * r + k] + g[k * r + i]) / tau
                guard c != 0 else { continue }
                for j in 0..<w { dz[i * w + j] += c * z[k * w + j] }
            }
        }
        return total / Double(r)
    }

    /// Smallest norm divided by (PyTorch's `F.normalize`): z = p / max(‖p‖, ε).
    static let epsilon = 1e-12

    /// Unit rows z = p / max(‖p‖, ε) in float64, and the norms.
    static func normalise(_ p: UnsafePointer<Float>, rows: Int, width w: Int) -> (z: [Double], norms: [Double]) {
        var z = [Double](repeating: 0, count: rows * w), norms = [Double](repeating: 0, count: rows)
        for i in 0..<rows {
            var n = 0.0
            for j in 0..<w { n += Double(p[i * w + j]) * Double(p[i * w + j]) }
            norms[i] = n.squareRoot()
            let d = max(norms[i], epsilon)
            for j in 0..<w { z[i * w + j] = Double(p[i * w + j]) / d }
        }
        return (z, norms)
    }

    /// ∂L/∂p from ∂L/∂z: (dz − z (z·dz)) / ‖p‖ where ‖p‖ > ε, dz / ε otherwise.
    static func normaliseBackward(z: [Double], norms: [Double], dz: [Double], width w: Int) -> [Float] {
        var dp = [Float](repeating: 0, count: z.count)
        for i in norms.indices {
            let n = norms[i]
            guard n > epsilon else {
                for j in 0..<w { dp[i * w + j] = Float(dz[i * w + j] / epsilon) }
                continue
            }
            var dot = 0.0
            for j in 0..<w { dot += z[i * w + j] * dz[i * w + j] }
            for j in 0..<w { dp[i * w + j] = Float((dz[i * w + j] - z[i * w + j] * dot) / n) }
        }
        return dp
    }

    /// SCR's second view of rows of vectors (the paper's image augmentations have no meaning
    /// here). Per row of `dimension` values, in order: when `shift` > 0 the row moves by s
    /// positions, s uniform in −shift…shift (one draw; vacated positions 0, values shifted past
    /// an end dropped: a translation of a signal, as MNIST-1D's are generated); when `scale` > 0
    /// it is multiplied by a factor uniform in [1 − scale, 1 + scale] (one draw); then per value
    /// x + σ·N(0, 1) (a normal draw when σ > 0) and zeroed with probability `drop` (a uniform draw
    /// when drop > 0). With shift = scale = 0 the draws are those of the noise and dropout alone.
    static func augment(_ x: inout [Float], dimension: Int, noiseStd sigma: Double, drop: Double, shift: Int = 0,
                        scale: Double = 0, rng: inout RandomSource) {
        guard sigma > 0 || drop > 0 || shift > 0 || scale > 0, dimension > 0 else { return }
        var row = [Float](repeating: 0, count: dimension)
        for start in stride(from: 0, to: x.count, by: dimension) {
            let end = min(start + dimension, x.count)
            if shift > 0 {
                let s = rng.uniformInt(below: 2 * shift + 1) - shift
                for i in 0..<(end - start) {
                    let from = i - s
                    row[i] = from >= 0 && from < end - start ? x[start + from] : 0
                }
                for i in 0..<(end - start) { x[start + i] = row[i] }
            }
            if scale > 0 {
                let factor = Float(rng.uniform(1 - scale, 1 + scale))
                for i in start..<end { x[i] *= factor }
            }
            for i in start..<end {
                if sigma > 0 { x[i] += Float(sigma * rng.normal()) }
                if drop > 0 && rng.uniform() < drop { x[i] = 0 }
            }
        }
    }
}
