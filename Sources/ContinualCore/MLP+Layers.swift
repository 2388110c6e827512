/// One layer of the forward and backward passes, shared by `forward`/`backward` (float32, with
/// gates) and `lowPrecisionForward`/`lowPrecisionBackward` (rounded tensors): the kernels and
/// their order live here once; the callers add what differs around them (gates, rounding).
extension MLP {
    /// Layer `l` of route `route` on `count` rows: activation `l` in, activation `l + 1` out
    /// (a dense layer: product, bias, low-rank update, activation; an adapter: its residual MLP).
    @inline(__always)
    func forwardLayer(_ l: Int, route: Int, base: UnsafePointer<Float>, count: Int, workspace ws: Workspace) {
        let layer = layers[l]
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
    }

    /// Layer `l`'s backward from `delta` (∂L/∂ pre-activation, already through the activation's
    /// derivative): *adds* its parameter gradients into `gradient` and writes ∂L/∂input into `dx`
    /// for a dense layer when given, into `adapterDX` for an adapter.
    @inline(__always)
    func backwardLayer(_ l: Int, route: Int, base: UnsafePointer<Float>, delta: UnsafeMutablePointer<Float>,
                       dx: UnsafeMutablePointer<Float>?, adapterDX: UnsafeMutablePointer<Float>, count: Int,
                       workspace ws: Workspace, gradient: UnsafeMutablePointer<Float>) {
        let layer = layers[l]
        let x = UnsafePointer(ws.activation(l))
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
                                             a: UnsafePointer(ws.inner(l)), dx: adapterDX,
                                             scratchInner: ws.scratchInner, batch: count, gradient: gradient)
        }
    }
}
