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
                let x = UnsafePointer(ws.activation(l))
                let y = ws.activation(l + 1)
                switch layer.kind {
                case .dense:
                    DenseKernels.forward(x: x, w: base + layer.weightOffset(route: route),
                                         b: base + layer.biasOffset(route: route), y: y,
                                         batch: count, inputs: layer.inputs, outputs: layer.outputs)
                    if layer.lowRank != nil {
                        ExtensionKernels.lowRankForward(layer: layer, route: route, base: base, x: x, y: y,
                                                        u: ws.inner(l), batch: count)
                    }
                    layer.activation.apply(y, count: count &* layer.outputs)
                case .adapter:
                    ExtensionKernels.adapterForward(layer: layer, route: route, base: base, x: x, y: y,
                                                    a: ws.inner(l), batch: count)
                }
                format.round(y, count: count &* layer.outputs)
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
                let x = UnsafePointer(ws.activation(l))
                let dx: UnsafeMutablePointer<Float>? = l > 0 ? bufA : nil
                switch layer.kind {
                case .dense:
                    let w = layer.weightOffset(route: route)
                    DenseKernels.parameterGradient(x: x, dz: delta, dw: gradient + w,
                                                   db: gradient + layer.biasOffset(route: route),
                                                   batch: count, inputs: layer.inputs, outputs: layer.outputs)
                    if let dx {
                        DenseKernels.inputGradient(dz: delta, w: base + w, dx: dx,
                                                   batch: count, inputs: layer.inputs, outputs: layer.outputs)
                    }
                    if layer.lowRank != nil {
                        ExtensionKernels.lowRankBackward(layer: layer, route: route, base: base, x: x, dz: delta,
                                                         u: UnsafePointer(ws.inner(l)), dx: dx,
                                                         scratchOut: ws.scratchOut, scratchInner: ws.scratchInner,
                                                         batch: count, gradient: gradient)
                    }
                case .adapter:
                    ExtensionKernels.adapterBackward(layer: layer, route: route, base: base, x: x, dy: delta,
                                                     a: UnsafePointer(ws.inner(l)), dx: bufA,
                                                     scratchInner: ws.scratchInner, batch: count, gradient: gradient)
                }
                if l > 0 {
                    format.round(bufA, count: count &* layer.inputs)
                    delta = bufA
                    swap(&bufA, &bufB)
                }
            }
        }
    }
}
