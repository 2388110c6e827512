import CContinualKernels

/// Networks of dense layers with ReLU or no activation (the seed model, most MLPs of the
/// experiments): forward and backward each as one C call (`ck_mlp_forward`, `ck_mlp_backward`),
/// so narrow layers run fused — ReLU applied as a tile is stored, the input gradient masked by the
/// ReLU below as it is stored, no per-layer trip through Swift and the product dispatcher — while
/// wide layers still take the blocked, threaded products. Every element gets the chain and the
/// selection of the per-layer path (`KernelPathTests.denseChainMatchesTheLayerByLayerPath`), so
/// results are bit-identical to it (issue 45.3).
extension MLP {
    static func denseChain(_ layers: [Layer]) -> Bool {
        layers.allSatisfy { $0.kind == .dense && $0.lowRank == nil && ($0.activation == .relu || $0.activation == .identity) }
    }

    /// The C plan of the layers for `route`, in the workspace's plan buffer. (Not a temporary
    /// allocation with a closure: capturing `self` there copied the model, retaining its arrays,
    /// 15 % of a seed-model step.)
    @inline(__always)
    private func plan(route: Int, workspace ws: Workspace) -> UnsafeMutablePointer<ck_layer> {
        let plan = ws.plan
        var l = 0
        for layer in layers {
            plan[l] = ck_layer(inputs: layer.inputs, outputs: layer.outputs, weights: layer.weightOffset(route: route),
                               bias: layer.biasOffset(route: route), relu: layer.activation == .relu ? 1 : 0)
            l &+= 1
        }
        return plan
    }

    /// `forward` after the input was copied into the workspace.
    func denseChainForward(count: Int, route: Int, workspace ws: Workspace) {
        let plan = plan(route: route, workspace: ws), n = layers.count, acts = ws.activationTable
        parameters.withUnsafeBufferPointer { p in ck_mlp_forward(p.baseAddress!, plan, n, acts, count) }
    }

    /// `backward` without gates.
    /// With `from` > 0 (and no `inputGradient`) it stops at layer `from`: the layers below get no
    /// gradient and layer `from` no input gradient; the layers it runs get the same bits.
    func denseChainBackward(logitGradient: UnsafeMutablePointer<Float>, count: Int, route: Int, workspace ws: Workspace,
                            gradient: UnsafeMutablePointer<Float>, inputGradient: UnsafeMutablePointer<Float>?,
                            from: Int = 0) {
        let plan = plan(route: route, workspace: ws), n = layers.count, acts = ws.activationTable
        let (bufA, bufB) = ws.deltas
        let lo = inputGradient == nil ? min(max(from, 0), n - 1) : 0
        parameters.withUnsafeBufferPointer { p in
            ck_mlp_backward(p.baseAddress!, plan + lo, n - lo, acts + lo, logitGradient, bufA, bufB, gradient, inputGradient,
                            count)
        }
    }

    /// Whether `sgdStep` runs on this model with `workspace`: one route, a dense chain, every
    /// parameter trainable (it updates them all).
    public func runsSGDStep(workspace ws: Workspace) -> Bool {
        routeCount == 1 && isDenseChain && trainable == nil && ws.layerCount == layers.count
    }

    /// One plain-SGD step (no momentum) in one pass: forward, loss, backward, and each layer's
    /// update as soon as its own input gradient (which reads its weights) is made — a wide
    /// layer's in its weight gradient's epilogue and a tiny one's (both sides ≤ 16, AVX-512) in
    /// its kernel's registers, so that gradient is never stored, read back or zeroed
    /// (`ck_mlp_backward_sgd`). The parameters are bit for bit those of `lossAndGradient`
    /// into a zeroed gradient followed by `Optimizer.step` with `.sgd(learningRate, 0,
    /// weightDecay, _)`; `scratch` (`parameterCount` floats) is left unspecified. Returns the sum
    /// of the per-sample losses (as `lossAndGradient`), or nil, having done nothing, where
    /// `runsSGDStep` is false. Afterwards the workspace's hidden activations are the forward
    /// pass's, its logits hold the consumed logit gradient, and its input copy is not written
    /// (the kernels read `features` where it is).
    public mutating func sgdStep(features: UnsafePointer<Float>, labels: UnsafePointer<Int32>, count: Int,
                                 scale: Float, learningRate: Float, weightDecay: Float, workspace ws: Workspace,
                                 scratch: UnsafeMutablePointer<Float>, active: UnsafePointer<Bool>? = nil) -> Double? {
        guard runsSGDStep(workspace: ws) else { return nil }
        guard count > 0 else {  // no rows: the update with a zero gradient, as Optimizer.step makes it
            scratch.update(repeating: 0, count: parameterCount)
            parameters.withUnsafeMutableBufferPointer {
                ck_sgd_update($0.baseAddress!, scratch, nil, $0.count, learningRate, 0, weightDecay, 0)
            }
            return 0
        }
        ws.reserve(rows: count)
        // The kernels read the input where it is (no copy into the workspace) through one plan.
        let plan = plan(route: 0, workspace: ws), n = layers.count, acts = ws.activationTable(input: features)
        defer { ws.restoreInputEntry() }
        parameters.withUnsafeBufferPointer { p in ck_mlp_forward(p.baseAddress!, plan, n, acts, count) }
        let loss = Loss.lossAndLogitGradient(head: spec.head, logits: ws.logits, labels: labels, count: count,
                                             scale: scale, active: active)
        let (bufA, bufB) = ws.deltas
        parameters.withUnsafeMutableBufferPointer { p in
            ck_mlp_backward_sgd(p.baseAddress!, plan, n, acts, ws.logits, bufA, bufB, scratch, count, learningRate,
                                weightDecay)
        }
        return loss
    }

    /// Layers from the input up with no trainable parameter under `trainable` (single-copy dense
    /// layers only: a layer with copies or an adapter ends the prefix).
    static func frozenPrefix(_ layers: [Layer], _ trainable: [Bool]?) -> Int {
        guard let mask = trainable else { return 0 }
        var frozen = 0
        for layer in layers {
            guard layer.kind == .dense, layer.copies == 1, layer.lowRank == nil,
                  !mask[layer.parameterRange(route: 0)].contains(true) else { break }
            frozen += 1
        }
        return frozen
    }
}
