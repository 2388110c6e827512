/// The forward and backward passes of mixed-precision training (`TrainingPrecision`): the same
/// kernels, in the same order, as `MLP.forward` and `MLP.backward`, with the stored tensors
/// rounded to `format` at the points listed on `TrainingPrecision` (input, each layer's output,
/// each layer's gradient after the activation derivative, each input gradient). The model's own
/// parameters must already be the rounded copy of the master weights. Gates and column networks
/// are not supported here (the Trainer refuses them with a mixed precision).
extension MLP {
    /// Forward of `count` rows with every stored tensor rounded to `format`; the logits are in
    /// `workspace.logits`, rounded.
    func lowPrecisionForward(_ input: UnsafePointer<Float>, count: Int, route: Int, workspace ws: Workspace,
                             format: NumericFormat) {
        ws.reserve(rows: count)
        ws.activation(0).update(from: input, count: count * spec.inputs)
        format.round(ws.activation(0), count: count * spec.inputs)
        parameters.withUnsafeBufferPointer { p in
            let base = p.baseAddress!
            for (l, layer) in layers.enumerated() {
                forwardLayer(l, route: route, base: base, count: count, workspace: ws)
                format.round(ws.activation(l + 1), count: count &* layer.outputs)
            }
        }
    }

    /// Backward from `logitGradient` (already scaled and rounded by the caller; consumed as
    /// scratch) through the last `lowPrecisionForward`, *adding* the parameter gradients into
    /// `gradient` in float32 (the caller rounds the batch's gradient once it is complete).
    func lowPrecisionBackward(logitGradient: UnsafeMutablePointer<Float>, count: Int, route: Int,
                              workspace ws: Workspace, gradient: UnsafeMutablePointer<Float>, format: NumericFormat) {
        parameters.withUnsafeBufferPointer { p in
            let base = p.baseAddress!
            var (bufA, bufB) = ws.deltas
            var delta = logitGradient
            for l in stride(from: layers.count - 1, through: 0, by: -1) {
                let layer = layers[l]
                let y = UnsafePointer(ws.activation(l + 1))
                layer.activation.backward(outputs: y, gradient: delta, count: count &* layer.outputs)
                format.round(delta, count: count &* layer.outputs)
                backwardLayer(l, route: route, base: base, delta: delta, dx: l > 0 ? bufA : nil, adapterDX: bufA,
                              count: count, workspace: ws, gradient: gradient)
                if l > 0 {
                    format.round(bufA, count: count &* layer.inputs)
                    delta = bufA
                    swap(&bufA, &bufB)
                }
            }
        }
    }
}
