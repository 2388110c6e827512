/// Losses on logits and their gradients, numerically stable for large |logit|.
///
/// Binary: ℓ = softplus(z) − y·z = max(z, 0) − y·z + log1p(e^−|z|), ∂ℓ/∂z = σ(z) − y.
/// Multiclass: ℓ = logsumexp(z) − z_y, ∂ℓ/∂z = softmax(z) − onehot(y). Accumulated in float64.
public enum Loss {
    /// Returns Σ ℓ over the batch and overwrites `logits` with `scale` · ∂ℓ/∂z.
    public static func lossAndLogitGradient(head: OutputHead, logits: UnsafeMutablePointer<Float>,
                                            labels: UnsafePointer<Int32>, count: Int, scale: Float) -> Double {
        var total = 0.0
        switch head {
        case .binary:
            for i in 0..<count {
                let z = logits[i]
                let y: Float = labels[i] == 0 ? 0 : 1
                let e = _expf(-abs(z))               // one exponential serves loss and sigmoid
                total += Double(max(z, 0) - y * z + _log1pf(e))
                let sigma = z >= 0 ? 1 / (1 + e) : e / (1 + e)
                logits[i] = (sigma - y) * scale
            }
        case .multiclass(let k):
            for i in 0..<count {
                let row = logits + i &* k
                var m = row[0]
                for j in 1..<k { m = max(m, row[j]) }
                let label = Int(labels[i])
                let zLabel = row[label]
                var sum: Float = 0
                for j in 0..<k {
                    let e = _expf(row[j] - m)
                    row[j] = e
                    sum += e
                }
                // ℓ = logsumexp(z) − z_y = (m − z_y) + log Σ e^(z−m): exact even when p_y underflows.
                total += Double(m - zLabel) + Double(_logf(sum))
                let inv = 1 / sum
                for j in 0..<k { row[j] = row[j] * inv * scale }
                row[label] -= scale
            }
        }
        return total
    }

    /// Class predictions from logits.
    public static func predictions(head: OutputHead, logits: UnsafePointer<Float>, count: Int,
                                   into out: UnsafeMutablePointer<Int32>) {
        switch head {
        case .binary:
            for i in 0..<count { out[i] = logits[i] > 0 ? 1 : 0 }
        case .multiclass(let k):
            for i in 0..<count {
                let row = logits + i &* k
                var best = 0
                for j in 1..<k where row[j] > row[best] { best = j }
                out[i] = Int32(best)
            }
        }
    }

    /// Predictive class probabilities of one sample's logits (length `head.classCount`).
    public static func probabilities(head: OutputHead, logits: UnsafePointer<Float>) -> [Double] {
        switch head {
        case .binary:
            let p = Double(Activation.sigmoid(logits[0]))
            return [1 - p, p]
        case .multiclass(let k):
            var m = Double(logits[0])
            for j in 1..<k { m = max(m, Double(logits[j])) }
            var e = (0..<k).map { _exp(Double(logits[$0]) - m) }
            let s = e.reduce(0, +)
            for j in 0..<k { e[j] /= s }
            return e
        }
    }
}
