import CContinualKernels

/// Losses on logits and their gradients, numerically stable for large |logit|.
///
/// Binary: ℓ = softplus(z) − y·z = max(z, 0) − y·z + log1p(e^−|z|), ∂ℓ/∂z = σ(z) − y, with the
/// toolkit's own log1p (`ck_binary_logistic_loss`, ContinualLosses.h): loss values do not depend
/// on the C library's log1pf.
/// Multiclass: ℓ = logsumexp(z) − z_y, ∂ℓ/∂z = softmax(z) − onehot(y). Accumulated in float64.
///
/// A row labelled `Batch.noTaskLoss` (−1) contributes no loss and a zero gradient (rows a plugin
/// adds for its own loss term only, e.g. DER's logit replay). With `active` (multiclass only), the
/// softmax covers the active classes only ("active outputs", van de Ven et al. 2022): inactive
/// logits get zero gradient and never win a prediction.
public enum Loss {
    /// Returns Σ ℓ over the batch and overwrites `logits` with `scale` · ∂ℓ/∂z.
    public static func lossAndLogitGradient(head: OutputHead, logits: UnsafeMutablePointer<Float>,
                                            labels: UnsafePointer<Int32>, count: Int, scale: Float,
                                            active: UnsafePointer<Bool>? = nil) -> Double {
        var total = 0.0
        if let active, case .multiclass(let k) = head {
            return maskedMulticlass(k: k, logits: logits, labels: labels, count: count, scale: scale, active: active)
        }
        switch head {
        case .binary:
            // C: the log1p of the loss runs several lanes at a time and is the toolkit's own
            // (correctly rounded, the same on every C library; numerics version 3).
            return ck_binary_logistic_loss(logits, labels, count, scale)
        case .multiclass(let k):
            for i in 0..<count {
                let row = logits + i &* k
                // A label outside 0..<k (never from a file: Trainer.run rejects those) adds nothing
                // rather than indexing past the row.
                guard labels[i] >= 0, Int(labels[i]) < k else {
                    row.update(repeating: 0, count: k)
                    continue
                }
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

    /// log(1 + x) for x in [0, 1] as the binary loss computes it: float64, rounded once, so
    /// correctly rounded on every float there but one, and the same bits on any CPU or C library.
    public static func log1pUnit(_ x: Float) -> Float {
        var x = x, y: Float = 0
        ck_log1p_unit(&x, &y, 1)
        return y
    }

    /// The multiclass loss with the softmax restricted to the active classes (a label outside them
    /// is a caller's error: its loss is computed as if its logit were active).
    static func maskedMulticlass(k: Int, logits: UnsafeMutablePointer<Float>, labels: UnsafePointer<Int32>, count: Int,
                                 scale: Float, active: UnsafePointer<Bool>) -> Double {
        var total = 0.0
        for i in 0..<count {
            let row = logits + i &* k
            guard labels[i] >= 0, Int(labels[i]) < k else {
                row.update(repeating: 0, count: k)
                continue
            }
            let label = Int(labels[i])
            var m = row[label]
            for j in 0..<k where active[j] { m = max(m, row[j]) }
            let zLabel = row[label]
            var sum: Float = 0
            for j in 0..<k {
                if active[j] || j == label {
                    let e = _expf(row[j] - m)
                    row[j] = e
                    sum += e
                } else {
                    row[j] = 0
                }
            }
            total += Double(m - zLabel) + Double(_logf(sum))
            let inv = 1 / sum
            for j in 0..<k { row[j] = row[j] * inv * scale }
            row[label] -= scale
        }
        return total
    }

    /// Class predictions from logits (the best active class when `active` is given).
    public static func predictions(head: OutputHead, logits: UnsafePointer<Float>, count: Int,
                                   into out: UnsafeMutablePointer<Int32>, active: UnsafePointer<Bool>? = nil) {
        if let active, case .multiclass(let k) = head, let first = (0..<k).first(where: { active[$0] }) {
            for i in 0..<count {
                let row = logits + i &* k
                var best = first
                for j in (first + 1)..<max(k, first + 1) where active[j] && row[j] > row[best] { best = j }
                out[i] = Int32(best)
            }
            return
        }
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
