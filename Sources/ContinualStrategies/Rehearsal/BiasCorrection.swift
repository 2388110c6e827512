import ContinualCore

/// BiC's bias correction layer (Wu et al., CVPR 2019, Sec. 4.2, Eq. 3): the logits z_c of the
/// classes in `corrected` become α·z_c + β; every other logit passes unchanged. α = 1, β = 0 is
/// the identity, bit for bit.
public struct BiasCorrection: Equatable, Sendable {
    public var alpha: Double = 1
    public var beta: Double = 0
    /// The classes whose logits are corrected (the newest classes); empty = identity.
    public var corrected: [Bool] = []

    public init(alpha: Double = 1, beta: Double = 0, corrected: [Bool] = []) {
        (self.alpha, self.beta, self.corrected) = (alpha, beta, corrected)
    }

    /// Corrects one row of `L` logits in place.
    public func apply(_ z: UnsafeMutablePointer<Float>, L: Int) {
        for c in 0..<min(L, corrected.count) where corrected[c] { z[c] = Float(alpha * Double(z[c]) + beta) }
    }

    /// The objective of stage 2 on frozen logits `z` ([n × L], row-major) with `labels`: the
    /// mean cross-entropy of the softmax over the classes in `over`, after the correction, plus
    /// `betaDecay`·β²/2. Returns the loss and its gradient (∂α, ∂β).
    func objective(_ z: [Float], labels: [Int32], L: Int, over: [Bool], betaDecay: Double) -> (loss: Double, g: (Double, Double)) {
        var loss = 0.0, ga = 0.0, gb = 0.0
        var u = [Double](repeating: 0, count: L)
        for r in 0..<labels.count {
            let y = Int(labels[r])
            var m = -Double.infinity
            for c in 0..<L where over[c] {
                u[c] = corrected[c] ? alpha * Double(z[r * L + c]) + beta : Double(z[r * L + c])
                m = max(m, u[c])
            }
            var s = 0.0
            for c in 0..<L where over[c] { s += _exp(u[c] - m) }
            loss += m + _log(s) - u[y]
            // With p the softmax and J_c = (z_c, 1) on corrected classes (0 elsewhere): g = Σ p_c J_c − J_y.
            for c in 0..<L where over[c] && corrected[c] {
                let p = _exp(u[c] - m) / s, zc = Double(z[r * L + c])
                ga += p * zc
                gb += p
            }
            if corrected[y] {
                ga -= Double(z[r * L + y])
                gb -= 1
            }
        }
        let n = Double(max(labels.count, 1))
        return (loss / n + betaDecay * beta * beta / 2, (ga / n, gb / n + betaDecay * beta))
    }

    /// Stage 2: from α = 1, β = 0, `epochs` steps of full-batch gradient descent with momentum
    /// 0.9 on `objective` (the validation split is one batch), at rate `lr` divided by 10 after a
    /// quarter, half and three quarters of the epochs: Avalanche's `BiCPlugin` schedule (SGD, lr
    /// 0.1, 200 epochs, milestones 50, 100, 150). The finite schedule matters: on a split that
    /// the correction can separate the objective has no minimum, and an exact solver would drive
    /// α, β without bound.
    mutating func fit(logits z: [Float], labels: [Int32], L: Int, over: [Bool], betaDecay: Double, epochs: Int, lr: Double) {
        (alpha, beta) = (1, 0)
        guard corrected.contains(true), !labels.isEmpty else { return }
        var (va, vb) = (0.0, 0.0)
        let decay = [1, 0.1, 0.01, 0.001]
        for e in 0..<epochs {
            let g = objective(z, labels: labels, L: L, over: over, betaDecay: betaDecay).g
            let rate = lr * decay[min(3, 4 * e / epochs)]
            // PyTorch's SGD momentum: v ← 0.9·v + g, θ ← θ − rate·v.
            (va, vb) = (0.9 * va + g.0, 0.9 * vb + g.1)
            (alpha, beta) = (alpha - rate * va, beta - rate * vb)
        }
    }
}
