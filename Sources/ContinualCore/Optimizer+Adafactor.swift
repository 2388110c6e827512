extension Optimizer {
    /// One Adafactor step (see `AdafactorOptions` for the rule and its choices); `steps` has
    /// already been incremented. √V̂ is computed as √(R_i/ΣR)·√C_j: with ε1 = 1e-30 the product
    /// R_i·C_j of a row and column without gradient underflows float32 to 0 (and U to ∞ or NaN). `second` holds the layout's R, C and v; `first` the momentum
    /// when β1 > 0.
    mutating func adafactorStep(_ o: AdafactorOptions, layout: AdafactorLayout, parameters: inout [Float],
                                gradient g: UnsafePointer<Float>, trainable: [Bool]?) {
        let b2 = o.beta2(step: steps), oneMinusB2 = 1 - b2
        let rho = o.relativeStep ? o.relativeRate(step: steps) : o.learningRate
        let e1 = o.epsilon1, b1 = o.beta1, d = o.clipThreshold, wd = o.weightDecay
        let all = [Bool]()
        let mask = trainable ?? all
        let masked = trainable != nil
        parameters.withUnsafeMutableBufferPointer { pp in
            second.withUnsafeMutableBufferPointer { sp in
                first.withUnsafeMutableBufferPointer { mp in
                    mask.withUnsafeBufferPointer { mk in
                        let p = pp.baseAddress!, s = sp.baseAddress!
                        @inline(__always) func live(_ i: Int) -> Bool { !masked || mk[i] }
                        for tensor in layout.tensors {
                            let range = tensor.range
                            var k = 0
                            for i in range where live(i) { k += 1 }
                            if k == 0 { continue }
                            var alpha = rho
                            if o.relativeStep {
                                var sq: Float = 0
                                for i in range { sq += p[i] * p[i] }
                                alpha = max(o.epsilon2, (sq / Float(range.count)).squareRoot()) * rho
                            }
                            switch tensor {
                            case .matrix(let m, let state):
                                let rows = m.rows, cols = m.columns
                                let R = s + state, C = s + state + rows
                                withUnsafeTemporaryAllocation(of: Float.self, capacity: cols) { colSum in
                                    for j in 0..<cols { colSum[j] = 0 }
                                    for r in 0..<rows {
                                        var rowSum: Float = 0
                                        for j in 0..<cols {
                                            let i = m.offset + r * cols + j
                                            let x = (live(i) ? g[i] * g[i] : 0) + e1
                                            rowSum += x
                                            colSum[j] += x
                                        }
                                        R[r] = b2 * R[r] + oneMinusB2 * rowSum
                                    }
                                    for j in 0..<cols { C[j] = b2 * C[j] + oneMinusB2 * colSum[j] }
                                }
                                var sumR: Float = 0
                                for r in 0..<rows { sumR += R[r] }
                                var ssq: Float = 0
                                for r in 0..<rows {
                                    for j in 0..<cols {
                                        let i = m.offset + r * cols + j
                                        guard live(i) else { continue }
                                        let u = g[i] / ((R[r] / sumR).squareRoot() * C[j].squareRoot())
                                        ssq += u * u
                                    }
                                }
                                let denom = max(1, (ssq / Float(k)).squareRoot() / d)
                                for r in 0..<rows {
                                    for j in 0..<cols {
                                        let i = m.offset + r * cols + j
                                        guard live(i) else { continue }
                                        let u = g[i] / ((R[r] / sumR).squareRoot() * C[j].squareRoot()) / denom
                                        Optimizer.adafactorApply(u, i, p, mp.baseAddress, b1, alpha, wd)
                                    }
                                }
                            case .vector(let r, let state):
                                let v = s + state, lo = r.lowerBound
                                var ssq: Float = 0
                                for i in r where live(i) {
                                    v[i - lo] = b2 * v[i - lo] + oneMinusB2 * (g[i] * g[i] + e1)
                                    let u = g[i] / v[i - lo].squareRoot()
                                    ssq += u * u
                                }
                                let denom = max(1, (ssq / Float(k)).squareRoot() / d)
                                for i in r where live(i) {
                                    let u = g[i] / v[i - lo].squareRoot() / denom
                                    Optimizer.adafactorApply(u, i, p, mp.baseAddress, b1, alpha, wd)
                                }
                            }
                        }
                    }
                }
            }
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
