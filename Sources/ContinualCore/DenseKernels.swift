/// Hot loops of a dense layer over row-major buffers: x is [batch × inputs], w is
/// [inputs × outputs] (row k holds the weights from input k), y and dz are [batch × outputs].
///
/// Register-blocked `SIMD8<Float>` strips over the outputs with wrapping index arithmetic
/// (`&*`, `&+`) so that `-O` vectorises without bounds or overflow checks (see ENGINEERING.md).
/// Precision: float32 accumulation in a fixed order, so results are bit-reproducible for a given
/// build and CPU; they are not bit-identical to a BLAS call.
@usableFromInline
enum DenseKernels {
    @inline(__always)
    static func load8(_ p: UnsafePointer<Float>) -> SIMD8<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float>.self)
    }

    @inline(__always)
    static func store8(_ v: SIMD8<Float>, _ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD8<Float>.self)
    }

    /// y[s, j] = b[j] + Σ_k x[s, k] · w[k, j]
    @inline(__always)
    static func forward(
        x: UnsafePointer<Float>, w: UnsafePointer<Float>, b: UnsafePointer<Float>,
        y: UnsafeMutablePointer<Float>, batch: Int, inputs: Int, outputs: Int
    ) {
        let strips = outputs / 8
        for strip in 0..<strips {
            let j0 = strip &* 8
            let bias = load8(b + j0)
            var s = 0
            while s &+ 4 <= batch {
                var a0 = bias, a1 = bias, a2 = bias, a3 = bias
                let x0 = x + s &* inputs
                let x1 = x0 + inputs, x2 = x1 + inputs, x3 = x2 + inputs
                var wp = w + j0
                for k in 0..<inputs {
                    let wv = load8(wp)
                    a0 += wv * x0[k]
                    a1 += wv * x1[k]
                    a2 += wv * x2[k]
                    a3 += wv * x3[k]
                    wp += outputs
                }
                let yp = y + (s &* outputs &+ j0)
                store8(a0, yp)
                store8(a1, yp + outputs)
                store8(a2, yp + (outputs &* 2))
                store8(a3, yp + (outputs &* 3))
                s &+= 4
            }
            while s < batch {
                var a = bias
                let xr = x + s &* inputs
                var wp = w + j0
                for k in 0..<inputs {
                    a += load8(wp) * xr[k]
                    wp += outputs
                }
                store8(a, y + (s &* outputs &+ j0))
                s &+= 1
            }
        }
        let tail = strips &* 8
        if tail < outputs {
            for s in 0..<batch {
                let xr = x + s &* inputs
                for j in tail..<outputs {
                    var acc = b[j]
                    for k in 0..<inputs { acc += xr[k] * w[k &* outputs &+ j] }
                    y[s &* outputs &+ j] = acc
                }
            }
        }
    }

    /// dw[k, j] += Σ_s x[s, k] · dz[s, j] and db[j] += Σ_s dz[s, j] (accumulates).
    @inline(__always)
    static func parameterGradient(
        x: UnsafePointer<Float>, dz: UnsafePointer<Float>,
        dw: UnsafeMutablePointer<Float>, db: UnsafeMutablePointer<Float>,
        batch: Int, inputs: Int, outputs: Int
    ) {
        let strips = outputs / 8
        for strip in 0..<strips {
            let j0 = strip &* 8
            var k = 0
            while k &+ 4 <= inputs {
                var a0 = SIMD8<Float>(), a1 = SIMD8<Float>(), a2 = SIMD8<Float>(), a3 = SIMD8<Float>()
                var xp = x + k
                var dp = dz + j0
                for _ in 0..<batch {
                    let dv = load8(dp)
                    a0 += dv * xp[0]
                    a1 += dv * xp[1]
                    a2 += dv * xp[2]
                    a3 += dv * xp[3]
                    xp += inputs
                    dp += outputs
                }
                let wp = dw + (k &* outputs &+ j0)
                store8(load8(wp) + a0, wp)
                store8(load8(wp + outputs) + a1, wp + outputs)
                store8(load8(wp + (outputs &* 2)) + a2, wp + (outputs &* 2))
                store8(load8(wp + (outputs &* 3)) + a3, wp + (outputs &* 3))
                k &+= 4
            }
            while k < inputs {
                var a = SIMD8<Float>()
                var xp = x + k
                var dp = dz + j0
                for _ in 0..<batch {
                    a += load8(dp) * xp[0]
                    xp += inputs
                    dp += outputs
                }
                let wp = dw + (k &* outputs &+ j0)
                store8(load8(wp) + a, wp)
                k &+= 1
            }
            var bias = SIMD8<Float>()
            var dp = dz + j0
            for _ in 0..<batch {
                bias += load8(dp)
                dp += outputs
            }
            store8(load8(db + j0) + bias, db + j0)
        }
        let tail = strips &* 8
        if tail < outputs {
            for s in 0..<batch {
                let xr = x + s &* inputs
                for j in tail..<outputs {
                    let d = dz[s &* outputs &+ j]
                    for k in 0..<inputs { dw[k &* outputs &+ j] += xr[k] * d }
                    db[j] += d
                }
            }
        }
    }

    /// dx[s, k] = Σ_j dz[s, j] · w[k, j] (overwrites dx).
    @inline(__always)
    static func inputGradient(
        dz: UnsafePointer<Float>, w: UnsafePointer<Float>, dx: UnsafeMutablePointer<Float>,
        batch: Int, inputs: Int, outputs: Int
    ) {
        let strips = outputs / 8
        let tail = strips &* 8
        for s in 0..<batch {
            let dr = dz + s &* outputs
            for k in 0..<inputs {
                let wr = w + k &* outputs
                var acc = SIMD8<Float>()
                for strip in 0..<strips {
                    let j0 = strip &* 8
                    acc += load8(dr + j0) * load8(wr + j0)
                }
                var sum = acc.sum()
                if tail < outputs {
                    for j in tail..<outputs { sum += dr[j] * wr[j] }
                }
                dx[s &* inputs &+ k] = sum
            }
        }
    }
}
