import CContinualKernels

/// EWC's exact Fisher sums, per sample, the squared gradients of every label weighted by its
/// probability: one backward pass per label, each a zeroed gradient of the whole model and a pass
/// over it (`Elementwise.accumulateSquares`) — with a 100-class head, 100 passes over 478k
/// parameters per training sample. Here the labels' logit gradients go back through the layers
/// together ([labels × width] rows), and each layer's slots of the Fisher get every label's
/// weighted square of the outer product a ⊗ δ_y directly (`Elementwise.accumulateLabelSquares`).
///
/// Same bits as the per-label path: each row of a batched input gradient is the chain of a
/// count-1 one (the kernels' one-chain invariant), the ReLU masks select, the count-1 weight
/// gradient of an element is the one product a·δ, and each Fisher element adds its labels in the
/// same order with the same float64 operations (`LabelSquaresTests` compares the two bit for bit).
extension MLP {
    /// Whether `accumulateLabelSquares` runs on this model: a chain of dense ReLU or identity
    /// layers without low-rank factors (the dense-chain kernels' models).
    public var supportsLabelSquares: Bool { isDenseChain }

    /// The widest layer's input or output count (`accumulateLabelSquares`' scratch is
    /// 2 × labels × this).
    public var widestLayer: Int { layers.reduce(0) { max($0, $1.inputs, $1.outputs) } }

    /// For the sample of the last count-1 `forward` through `route` (its activations in `ws`):
    /// adds into `fisher` (length `parameterCount`), for each row y < `labels` of `logitGradients`
    /// ([labels × logitCount], ∂(−log p(y|x))/∂z, consumed as scratch) in order,
    /// `weights[y]`·g_y·g_y, where g_y is that row's count-1 `backward` gradient. Every weight
    /// must be > 0. `scratch` holds 2 × labels × `widestLayer` floats.
    public func accumulateLabelSquares(logitGradients: UnsafeMutablePointer<Float>, weights: UnsafePointer<Double>,
                                       labels: Int, route: Int, workspace ws: Workspace,
                                       scratch: UnsafeMutablePointer<Float>, fisher: UnsafeMutablePointer<Double>) {
        precondition(supportsLabelSquares, "accumulateLabelSquares needs a dense ReLU/identity chain")
        guard labels > 0 else { return }
        let widest = widestLayer
        var delta = logitGradients
        var (next, spare) = (scratch, scratch + labels * widest)
        var one: Float = 1
        parameters.withUnsafeBufferPointer { p in
            for l in stride(from: layers.count - 1, through: 0, by: -1) {
                let layer = layers[l], n = layer.inputs, m = layer.outputs
                if layer.activation == .relu {
                    let y = ws.activation(l + 1)
                    for row in 0..<labels { ck_relu_backward(y, delta + row * m, m) }
                }
                let w = layer.weightOffset(route: route), b = layer.biasOffset(route: route)
                Elementwise.accumulateLabelSquares(fisher + w, a: ws.activation(l), rows: n, delta: delta, labels: labels,
                                                   columns: m, weights: weights)
                Elementwise.accumulateLabelSquares(fisher + b, a: &one, rows: 1, delta: delta, labels: labels,
                                                   columns: m, weights: weights)
                if l > 0 {
                    ck_dense_input_gradient(delta, p.baseAddress! + w, next, labels, n, m)
                    delta = next
                    swap(&next, &spare)
                }
            }
        }
    }
}
