extension Optimizer {
    /// One Adafactor step (see `AdafactorOptions` for the rule and its choices); `steps` has
    /// already been incremented. √V̂ is computed as √(R_i/ΣR)·√C_j: with ε1 = 1e-30 the product
    /// R_i·C_j of a row and column without gradient underflows float32 to 0 (and U to ∞ or NaN). `second` holds the layout's R, C and v; `first` the momentum
    /// when β1 > 0.
    mutating func adafactorStep(_ o: AdafactorOptions, layout: AdafactorLayout, parameters: inout [Float],
                                gradient g: UnsafePointer<Float>, trainable: [Bool]?) {
        let b2 = o.beta2(step: steps)
        let c = AdafactorScalars(b2: b2, oneMinusB2: 1 - b2, e1: o.epsilon1, b1: o.beta1, d: o.clipThreshold, wd: o.weightDecay)
        let rho = o.relativeStep ? o.relativeRate(step: steps) : o.learningRate
        let all = [Bool]()
        let mask = trainable ?? all
        let masked = trainable != nil
        parameters.withUnsafeMutableBufferPointer { pp in
            second.withUnsafeMutableBufferPointer { sp in
                first.withUnsafeMutableBufferPointer { mp in
                    mask.withUnsafeBufferPointer { mk in
                        let p = pp.baseAddress!, s = sp.baseAddress!
                        let live = AdafactorLive(mask: masked ? mk.baseAddress : nil)
                        for tensor in layout.tensors {
                            let range = tensor.range
                            var k = 0
                            for i in range where live[i] { k += 1 }
                            if k == 0 { continue }
                            var alpha = rho
                            if o.relativeStep {
                                var sq: Float = 0
                                for i in range { sq += p[i] * p[i] }
                                alpha = max(o.epsilon2, (sq / Float(range.count)).squareRoot()) * rho
                            }
                            let t = AdafactorTensor(g: g, p: p, moment: mp.baseAddress, mask: live, liveCount: k, alpha: alpha)
                            switch tensor {
                            case .matrix(let m, let state): Optimizer.adafactorMatrix(m, R: s + state, C: s + state + m.rows, t, c)
                            case .vector(let r, let state): Optimizer.adafactorVector(r, v: s + state, t, c)
                            }
                        }
                    }
                }
            }
        }
    }

    /// A factored tensor's step: the row and column statistics R and C, then Û clipped by its
    /// RMS over the live entries.
    static func adafactorMatrix(_ m: ParameterMatrix, R: UnsafeMutablePointer<Float>, C: UnsafeMutablePointer<Float>,
                                _ t: AdafactorTensor, _ c: AdafactorScalars) {
        let rows = m.rows, cols = m.columns, g = t.g, live = t.mask
        withUnsafeTemporaryAllocation(of: Float.self, capacity: cols) { colSum in
            for j in 0..<cols { colSum[j] = 0 }
            for r in 0..<rows {
                var rowSum: Float = 0
                for j in 0..<cols {
                    let i = m.offset + r * cols + j
                    let x = (live[i] ? g[i] * g[i] : 0) + c.e1
                    rowSum += x
                    colSum[j] += x
                }
                R[r] = c.b2 * R[r] + c.oneMinusB2 * rowSum
            }
            for j in 0..<cols { C[j] = c.b2 * C[j] + c.oneMinusB2 * colSum[j] }
        }
        var sumR: Float = 0
        for r in 0..<rows { sumR += R[r] }
        var ssq: Float = 0
        for r in 0..<rows {
            for j in 0..<cols {
                let i = m.offset + r * cols + j
                guard live[i] else { continue }
                let u = g[i] / ((R[r] / sumR).squareRoot() * C[j].squareRoot())
                ssq += u * u
            }
        }
        let denom = max(1, (ssq / Float(t.liveCount)).squareRoot() / c.d)
        for r in 0..<rows {
            for j in 0..<cols {
                let i = m.offset + r * cols + j
                guard live[i] else { continue }
                let u = g[i] / ((R[r] / sumR).squareRoot() * C[j].squareRoot()) / denom
                Optimizer.adafactorApply(u, i, t.p, t.moment, c.b1, t.alpha, c.wd)
            }
        }
    }

    /// An unfactored tensor's step (biases): the second moment per entry, then Û clipped.
    static func adafactorVector(_ r: Range<Int>, v: UnsafeMutablePointer<Float>, _ t: AdafactorTensor, _ c: AdafactorScalars) {
        let lo = r.lowerBound, g = t.g, live = t.mask
        var ssq: Float = 0
        for i in r where live[i] {
            v[i - lo] = c.b2 * v[i - lo] + c.oneMinusB2 * (g[i] * g[i] + c.e1)
            let u = g[i] / v[i - lo].squareRoot()
            ssq += u * u
        }
        let denom = max(1, (ssq / Float(t.liveCount)).squareRoot() / c.d)
        for i in r where live[i] {
            let u = g[i] / v[i - lo].squareRoot() / denom
            Optimizer.adafactorApply(u, i, t.p, t.moment, c.b1, t.alpha, c.wd)
        }
    }

    /// θ ← θ − α·(λ·θ + step) with step = Û, or the momentum of Û when β1 > 0.
    @inline(__always)
    static func adafactorApply(_ u: Float, _ i: Int, _ p: UnsafeMutablePointer<Float>, _ m: UnsafeMutablePointer<Float>?,
                               _ b1: Float, _ alpha: Float, _ wd: Float) {
        var step = u
        if b1 > 0, let m {
            m[i] = b1 * m[i] + (1 - b1) * u
            step = m[i]
        }
        p[i] -= alpha * (wd * p[i] + step)
    }
}

/// The step's constants: β2 and 1 − β2, ε1, β1, the clipping threshold d, weight decay.
struct AdafactorScalars {
    let b2: Float, oneMinusB2: Float, e1: Float, b1: Float, d: Float, wd: Float
}

/// Which parameters train (all when `mask` is nil).
struct AdafactorLive {
    let mask: UnsafePointer<Bool>?
    @inline(__always) subscript(i: Int) -> Bool { mask.map { $0[i] } ?? true }
}

/// One tensor's inputs: gradient, parameters and momentum, the live entries and their count,
/// and the step size α.
struct AdafactorTensor {
    let g: UnsafePointer<Float>
    let p: UnsafeMutablePointer<Float>
    let moment: UnsafeMutablePointer<Float>?
    let mask: AdafactorLive
    let liveCount: Int
    let alpha: Float

}
