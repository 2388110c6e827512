import ContinualCore

extension FeedbackGenerator {
    static let halfLogTwoPi = 0.5 * _log(2 * Double.pi)

    /// Row `i`'s KL estimate log q(z|x) − log Σ_c π_c N(z; m_c, diag e^{s_c}) (modes with π_c = 0
    /// left out); adds `scale` × its gradient into `dz`, `dlv` (∂/∂ log σ², through log q only: z
    /// is held) and `dPrior` (means, then log variances). `e` holds [μ | log σ²] rows.
    func klEstimate(row i: Int, z: [Float], e: UnsafeMutablePointer<Float>, noise: [Float], pi: ArraySlice<Float>,
                    scale: Double, dz: inout [Double], dlv: inout [Double], dPrior: inout [Double]) -> Double {
        let Z = latent, range = VariationalAutoencoder.logVarianceRange
        var logQ = 0.0
        for j in 0..<Z {
            let lv = Double(min(max(e[i * 2 * Z + Z + j], range.lowerBound), range.upperBound))
            let eps = Double(noise[i * Z + j])
            // z = μ + σε, so (z − μ)²/σ² = ε² exactly: log q depends on log σ² alone.
            logQ += -Self.halfLogTwoPi - 0.5 * lv - 0.5 * eps * eps
            dlv[i * Z + j] += scale * -0.5
        }
        var a: [(mode: Int, value: Double)] = []
        for (c, p) in zip(0..<pi.count, pi) where p > 0 {
            var v = _log(Double(p))
            for j in 0..<Z {
                let m = Double(priorMeans[c * Z + j]), s = Double(priorLogVariances[c * Z + j])
                let d = Double(z[i * Z + j]) - m
                v += -Self.halfLogTwoPi - 0.5 * s - 0.5 * d * d * _exp(-s)
            }
            a.append((c, v))
        }
        guard let top = a.map(\.value).max() else { return logQ }
        let lse = top + _log(a.reduce(0) { $0 + _exp($1.value - top) })
        for (c, v) in a {
            let r = _exp(v - lse)
            for j in 0..<Z {
                let m = Double(priorMeans[c * Z + j]), s = Double(priorLogVariances[c * Z + j])
                let d = Double(z[i * Z + j]) - m, inv = _exp(-s)
                dz[i * Z + j] += scale * r * d * inv
                dPrior[c * Z + j] -= scale * r * d * inv
                dPrior[modes * Z + c * Z + j] -= scale * r * (-0.5 + 0.5 * d * d * inv)
            }
        }
        return logQ - lse
    }

    /// `count` replayed rows: a class drawn uniformly from `classes`, z from its prior mode (N(0, I)
    /// when not conditional), decoded through the class's gates; the decoder's mean (sigmoid of the
    /// logits, or the Gaussian mean), as the authors replay. Returns the rows and their classes.
    func generate(classes: [Int], classCount C: Int, count: Int, rng: inout RandomSource) -> (rows: [Float], classes: [Int]) {
        guard count > 0, !classes.isEmpty else { return ([], []) }
        let Z = latent
        var z = [Float](repeating: 0, count: count * Z), pi = [Float](repeating: 0, count: count * C), drawn: [Int] = []
        for k in 0..<count {
            let c = classes[rng.uniformInt(below: classes.count)]
            drawn.append(c)
            pi[k * C + c] = 1
            for j in 0..<Z {
                let eps = Float(rng.normal())
                z[k * Z + j] = conditional
                    ? priorMeans[c * Z + j] + Float(_exp(0.5 * Double(priorLogVariances[c * Z + j]))) * eps : eps
            }
        }
        var out = decode(z, pi: pi, count: count).logits
        if reconstruction == .bernoulli {
            for k in out.indices {
                let l = Double(out[k])
                out[k] = Float(l >= 0 ? 1 / (1 + _exp(-l)) : _exp(l) / (1 + _exp(l)))
            }
        }
        return (out, drawn)
    }

    /// The distillation term T²·(−Σ_c t_c log softmax(z/T)_c) over the `active` logits (nil: all)
    /// of one row, targets `t` (zero outside the previous model's classes); returns the loss and
    /// its gradient T·(softmax(z/T) − t) on the active logits (0 elsewhere).
    static func distillation(logits z: UnsafePointer<Float>, targets t: [Double], active: [Bool]?,
                             temperature T: Double) -> (loss: Double, gradient: [Double]) {
        let L = t.count
        let on = (0..<L).filter { active?[$0] ?? true }
        let top = on.map { Double(z[$0]) / T }.max() ?? 0
        let lse = top + _log(on.reduce(0) { $0 + _exp(Double(z[$1]) / T - top) })
        var loss = 0.0, g = [Double](repeating: 0, count: L)
        for c in on {
            let logq = Double(z[c]) / T - lse
            loss -= t[c] * logq
            g[c] = T * (_exp(logq) - t[c])
        }
        return (T * T * loss, g)
    }

    /// softmax(z/T) over the classes marked in `seen`, 0 elsewhere (the previous model's soft targets).
    static func softTargets(logits z: UnsafePointer<Float>, seen: [Bool], temperature T: Double) -> [Double] {
        let on = seen.indices.filter { seen[$0] }
        let top = on.map { Double(z[$0]) / T }.max() ?? 0
        var t = [Double](repeating: 0, count: seen.count)
        var sum = 0.0
        for c in on {
            t[c] = _exp(Double(z[c]) / T - top)
            sum += t[c]
        }
        for c in on { t[c] /= sum }
        return t
    }
}
