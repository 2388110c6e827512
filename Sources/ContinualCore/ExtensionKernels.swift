/// Forward and backward passes of the parameter-efficient extensions (bottleneck adapters and
/// LoRA updates) over row-major buffers, kept apart from `DenseKernels` (the dense hot path).
///
/// The matrices are small (bottleneck / rank ≤ a few dozen), so plain loops with wrapping index
/// arithmetic are used; the inner loops run over contiguous rows and vectorise at `-O`.
@usableFromInline
enum ExtensionKernels {
    /// y (+)= scale · x·w, x [batch × inputs], w [inputs × outputs].
    @inline(__always)
    static func multiply(x: UnsafePointer<Float>, w: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>,
                         batch: Int, inputs: Int, outputs: Int, scale: Float = 1, accumulate: Bool) {
        for s in 0..<batch {
            let yr = y + s &* outputs
            if !accumulate { yr.update(repeating: 0, count: outputs) }
            let xr = x + s &* inputs
            for k in 0..<inputs {
                let xv = scale * xr[k]
                let wr = w + k &* outputs
                for j in 0..<outputs { yr[j] += xv * wr[j] }
            }
        }
    }

    /// dx (+)= dz·wᵀ, dz [batch × outputs], w [inputs × outputs], dx [batch × inputs].
    @inline(__always)
    static func multiplyTransposed(dz: UnsafePointer<Float>, w: UnsafePointer<Float>, dx: UnsafeMutablePointer<Float>,
                                   batch: Int, inputs: Int, outputs: Int, accumulate: Bool) {
        for s in 0..<batch {
            let dr = dz + s &* outputs
            let xr = dx + s &* inputs
            for k in 0..<inputs {
                let wr = w + k &* outputs
                var acc: Float = 0
                for j in 0..<outputs { acc += dr[j] * wr[j] }
                xr[k] = accumulate ? xr[k] + acc : acc
            }
        }
    }

    /// dw += xᵀ·dz (x [batch × inputs], dz [batch × outputs]) and, if given, db += Σ_s dz[s, ·].
    @inline(__always)
    static func accumulateGradient(x: UnsafePointer<Float>, dz: UnsafePointer<Float>, dw: UnsafeMutablePointer<Float>,
                                   db: UnsafeMutablePointer<Float>?, batch: Int, inputs: Int, outputs: Int) {
        for s in 0..<batch {
            let xr = x + s &* inputs
            let dr = dz + s &* outputs
            for k in 0..<inputs {
                let xv = xr[k]
                let wr = dw + k &* outputs
                for j in 0..<outputs { wr[j] += xv * dr[j] }
            }
            if let db { for j in 0..<outputs { db[j] += dr[j] } }
        }
    }

    /// Adds b [width] to every row of y [batch × width].
    @inline(__always)
    static func addBias(_ b: UnsafePointer<Float>, to y: UnsafeMutablePointer<Float>, batch: Int, width: Int) {
        for s in 0..<batch {
            let yr = y + s &* width
            for j in 0..<width { yr[j] += b[j] }
        }
    }

    // MARK: adapter

    /// a = act(x·W_down + b_down) (kept for backward); y = x + a·W_up + b_up.
    static func adapterForward(layer: Layer, route: Int, base: UnsafePointer<Float>, x: UnsafePointer<Float>,
                               y: UnsafeMutablePointer<Float>, a: UnsafeMutablePointer<Float>, batch: Int) {
        guard case .adapter(let r, let act) = layer.kind else { return }
        let h = layer.inputs
        let o = layer.adapterOffsets(route: route)
        multiply(x: x, w: base + o.wDown, y: a, batch: batch, inputs: h, outputs: r, accumulate: false)
        addBias(base + o.bDown, to: a, batch: batch, width: r)
        act.apply(a, count: batch &* r)
        y.update(from: x, count: batch &* h)
        multiply(x: UnsafePointer(a), w: base + o.wUp, y: y, batch: batch, inputs: r, outputs: h, accumulate: true)
        addBias(base + o.bUp, to: y, batch: batch, width: h)
    }

    /// Adds the adapter's parameter gradients and writes dx = dy + (dy·W_upᵀ ⊙ act′)·W_downᵀ.
    static func adapterBackward(layer: Layer, route: Int, base: UnsafePointer<Float>, x: UnsafePointer<Float>,
                                dy: UnsafePointer<Float>, a: UnsafePointer<Float>, dx: UnsafeMutablePointer<Float>,
                                scratchInner da: UnsafeMutablePointer<Float>, batch: Int,
                                gradient: UnsafeMutablePointer<Float>) {
        guard case .adapter(let r, let act) = layer.kind else { return }
        let h = layer.inputs
        let o = layer.adapterOffsets(route: route)
        accumulateGradient(x: a, dz: dy, dw: gradient + o.wUp, db: gradient + o.bUp, batch: batch, inputs: r, outputs: h)
        multiplyTransposed(dz: dy, w: base + o.wUp, dx: da, batch: batch, inputs: r, outputs: h, accumulate: false)
        act.backward(outputs: a, gradient: da, count: batch &* r)
        accumulateGradient(x: x, dz: UnsafePointer(da), dw: gradient + o.wDown, db: gradient + o.bDown,
                           batch: batch, inputs: h, outputs: r)
        dx.update(from: dy, count: batch &* h)
        multiplyTransposed(dz: UnsafePointer(da), w: base + o.wDown, dx: dx, batch: batch, inputs: h, outputs: r,
                           accumulate: true)
    }

    // MARK: LoRA

    /// u = x·A (kept for backward); y += scale · u·B (before the layer's activation).
    static func lowRankForward(layer: Layer, route: Int, base: UnsafePointer<Float>, x: UnsafePointer<Float>,
                               y: UnsafeMutablePointer<Float>, u: UnsafeMutablePointer<Float>, batch: Int) {
        let lr = layer.lowRank!
        let o = layer.lowRankOffsets(route: route)
        multiply(x: x, w: base + o.a, y: u, batch: batch, inputs: layer.inputs, outputs: lr.rank, accumulate: false)
        multiply(x: UnsafePointer(u), w: base + o.b, y: y, batch: batch, inputs: lr.rank, outputs: layer.outputs,
                 scale: lr.scale, accumulate: true)
    }

    /// Given dz (gradient at the pre-activation), adds ∂A, ∂B and, if `dx` is given, dz·(s·A·B)ᵀ into dx.
    static func lowRankBackward(layer: Layer, route: Int, base: UnsafePointer<Float>, x: UnsafePointer<Float>,
                                dz: UnsafePointer<Float>, u: UnsafePointer<Float>, dx: UnsafeMutablePointer<Float>?,
                                scratchOut sdz: UnsafeMutablePointer<Float>, scratchInner du: UnsafeMutablePointer<Float>,
                                batch: Int, gradient: UnsafeMutablePointer<Float>) {
        let lr = layer.lowRank!
        let o = layer.lowRankOffsets(route: route)
        let n = batch &* layer.outputs
        for i in 0..<n { sdz[i] = lr.scale * dz[i] }
        accumulateGradient(x: u, dz: UnsafePointer(sdz), dw: gradient + o.b, db: nil, batch: batch,
                           inputs: lr.rank, outputs: layer.outputs)
        multiplyTransposed(dz: UnsafePointer(sdz), w: base + o.b, dx: du, batch: batch, inputs: lr.rank,
                           outputs: layer.outputs, accumulate: false)
        accumulateGradient(x: x, dz: UnsafePointer(du), dw: gradient + o.a, db: nil, batch: batch,
                           inputs: layer.inputs, outputs: lr.rank)
        if let dx {
            multiplyTransposed(dz: UnsafePointer(du), w: base + o.a, dx: dx, batch: batch, inputs: layer.inputs,
                               outputs: lr.rank, accumulate: true)
        }
    }
}
