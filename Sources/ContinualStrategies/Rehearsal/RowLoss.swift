import ContinualCore

/// Per-row losses on a model's logits, in float64, for batch-loss terms that *replace* the
/// loop's task loss on some rows (ER-ACE's asymmetric loss, iCaRL's sigmoid loss).
///
/// The loop gives each row with a label the gradient scale · (p − onehot(y)) on its logits, p the
/// softmax over the active classes (`BatchLossInput.activeClasses`, nil = all; binary heads: the
/// sigmoid). `loopCrossEntropy` recomputes exactly that p and the row's loss, so a term can remove
/// the loop's share and add its own: the result is the replaced objective whatever other terms
/// added before (their contributions are left alone).
enum RowLoss {
    /// Softmax over the classes where `included(c)` (others get probability 0) and the
    /// cross-entropy of `label`; binary heads (L = 1): the sigmoid and its two-class CE.
    static func crossEntropy(_ z: UnsafePointer<Float>, L: Int, label: Int, included: (Int) -> Bool) -> (loss: Double, p: [Double]) {
        if L == 1 {
            let x = Double(z[0]), y = label == 0 ? 0.0 : 1.0
            let p = x >= 0 ? 1 / (1 + _exp(-x)) : _exp(x) / (1 + _exp(x))
            return (max(x, 0) - y * x + _log1p(_exp(-abs(x))), [p])
        }
        var m = -Double.infinity
        for c in 0..<L where included(c) { m = max(m, Double(z[c])) }
        var p = [Double](repeating: 0, count: L)
        var s = 0.0
        for c in 0..<L where included(c) {
            p[c] = _exp(Double(z[c]) - m)
            s += p[c]
        }
        for c in 0..<L { p[c] /= s }
        return (m + _log(s) - Double(z[label]), p)
    }

    /// The loop's own loss on a row: softmax over the active classes.
    static func loopCrossEntropy(_ z: UnsafePointer<Float>, L: Int, label: Int, active: [Bool]?) -> (loss: Double, p: [Double]) {
        guard let active else { return crossEntropy(z, L: L, label: label) { _ in true } }
        return crossEntropy(z, L: L, label: label) { active[$0] }
    }

    /// Gradient of a CE with probabilities `p` and target class `label` (binary: p − y).
    static func ceGradient(_ p: [Double], label: Int) -> [Double] {
        var g = p
        if p.count == 1 { g[0] -= label == 0 ? 0 : 1 } else { g[label] -= 1 }
        return g
    }
}
