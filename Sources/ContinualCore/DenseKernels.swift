import CContinualKernels

/// The three products of a dense layer over row-major buffers: x is [batch × inputs], w is
/// [inputs × outputs] (row k holds the weights from input k), y and dz are [batch × outputs].
///
/// The arithmetic is in the C target `CContinualKernels` (register-tiled, cache-blocked, clang
/// vector extensions, one kernel path chosen at run time: see `Kernels`). Every output element is
/// one multiply-add chain in a fixed order, so neither the tiling nor the number of threads
/// (`Kernels.threads`) changes a bit; wide products are split over threads by columns.
@usableFromInline
enum DenseKernels {
    /// y[s, j] = b[j] + Σ_k x[s, k] · w[k, j]
    @inline(__always)
    static func forward(
        x: UnsafePointer<Float>, w: UnsafePointer<Float>, b: UnsafePointer<Float>,
        y: UnsafeMutablePointer<Float>, batch: Int, inputs: Int, outputs: Int
    ) {
        ck_dense_forward(x, w, b, y, batch, inputs, outputs)
    }

    /// dw[k, j] += Σ_s x[s, k] · dz[s, j] and db[j] += Σ_s dz[s, j] (accumulates).
    @inline(__always)
    static func parameterGradient(
        x: UnsafePointer<Float>, dz: UnsafePointer<Float>,
        dw: UnsafeMutablePointer<Float>, db: UnsafeMutablePointer<Float>,
        batch: Int, inputs: Int, outputs: Int
    ) {
        ck_dense_weight_gradient(x, dz, dw, db, batch, inputs, outputs)
    }

    /// dx[s, k] = Σ_j dz[s, j] · w[k, j] (overwrites dx).
    @inline(__always)
    static func inputGradient(
        dz: UnsafePointer<Float>, w: UnsafePointer<Float>, dx: UnsafeMutablePointer<Float>,
        batch: Int, inputs: Int, outputs: Int
    ) {
        ck_dense_input_gradient(dz, w, dx, batch, inputs, outputs)
    }
}
