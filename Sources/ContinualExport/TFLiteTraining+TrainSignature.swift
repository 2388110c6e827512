import ContinualCore

/// The `train` signature of `TFLiteTraining`: the loss before the step, the gradients of the
/// trained variables (output layer, or every bias through the frozen weights) and one SGD or
/// Adam step that assigns them.
extension TFLiteTraining {
    /// Subgraph 1, `train`: inputs `features` and `targets`, output `loss`; one optimizer step on
    /// the batch's mean loss.
    static func trainGraph(_ network: ExportedNetwork, _ variables: [Variable], state: [Variable], trainable: Trainable,
                           optimizer: OptimizerSpec, adam: AdamSettings?) -> (graph: TFLiteModel.Subgraph, targets: Int32, loss: Int32) {
        var train = TFLiteModel.Subgraph(name: "train")
        let (trainOutputs, reads) = forward(network, variables, &train)
        let logits = trainOutputs[0].tensor
        let dense = network.denseStages
        let k = dense[dense.count - 1].outputs
        let targets = train.tensor("targets", shape: [k], batch: true)
        let p: Int32
        if case .binary = network.head {
            p = train.tensors.indices.first { train.tensors[$0].name == "p_positive" }.map(Int32.init)!
        } else {
            p = trainOutputs[1].tensor
        }
        // Loss (before the step): mean over the batch of −Σ t·log p (binary: both classes).
        let loss = crossEntropy(&train, head: network.head, p: p, targets: targets)
        // d = p − t = ∂ℓ/∂z of the output layer.
        let d = train.tensor("grad.logits", shape: [k], batch: true)
        train.add(.sub, [p, targets], [d], .sub)
        let axis0 = train.constant(name: "axis0", [0])
        let gradients: [String: Int32]
        switch trainable {
        case .outputLayer: gradients = outputLayerGradients(&train, d: d, logits: logits, dense: dense, axis0: axis0)
        case .biases: gradients = biasGradients(&train, d: d, dense: dense, axis0: axis0)
        }
        let rate = train.constant("learning_rate", shape: [], [optimizer.learningRate])
        if let adam {
            adamStep(&train, variables, state: state, adam: adam, gradients: gradients, reads: reads, rate: rate)
        } else {
            for v in variables {
                let r = reads[v.name]!
                let step = train.binary(.mul, gradients[v.name]!, rate, v.name + ".step", v.shape, .mul)
                let updated = train.binary(.sub, r.value, step, v.name + ".updated", v.shape, .sub)
                train.add(.assignVariable, [r.handle, updated], [], .assignVariable)
            }
        }
        train.inputs = [train.inputs[0], targets]
        train.outputs = [loss]
        callInit(&train)
        return (train, targets, loss)
    }

    /// The output layer's gradients from d = ∂ℓ/∂z: ∂b = mean d; ∂W = mean d ⊗ h, h the output
    /// layer's input (d reshaped to [N, K, 1], h to [N, 1, h], broadcast `MUL`: no transposes).
    private static func outputLayerGradients(_ train: inout TFLiteModel.Subgraph, d: Int32, logits: Int32,
                                             dense: [ExportedNetwork.Dense], axis0: Int32) -> [String: Int32] {
        let L = dense.count - 1
        let k = dense[L].outputs, h = dense[L].inputs
        var gradients: [String: Int32] = [:]
        let hidden = train.operators.first { $0.outputs == [logits] }!.inputs[0]
        gradients["dense\(L).bias"] = train.batchMean(d, axis0, "grad.bias", [k])
        let d3 = train.tensor("grad.logits_3d", shape: [k, 1], batch: true)
        train.add(.reshape, [d, train.constant(name: "shape_nk1", [-1, Int32(k), 1])], [d3], .reshape)
        let h3 = train.tensor("grad.hidden_3d", shape: [1, h], batch: true)
        train.add(.reshape, [hidden, train.constant(name: "shape_n1h", [-1, 1, Int32(h)])], [h3], .reshape)
        let outer = train.tensor("grad.outer", shape: [k, h], batch: true)
        train.add(.mul, [d3, h3], [outer], .mul)
        gradients["dense\(L).weight"] = train.batchMean(outer, axis0, "grad.weight", [k, h])
        return gradients
    }

    /// Every dense layer's bias gradient (BitFit), by backpropagation through the frozen weights:
    /// δ_L = d; δ_l = (δ_{l+1}·W_{l+1}ᵀ) ⊙ act′(h_l) (FC with the toolkit's [in × out] matrix as
    /// its [out × in] operand computes δ·Wᵀ); ∂b_l = mean δ_l.
    private static func biasGradients(_ train: inout TFLiteModel.Subgraph, d: Int32,
                                      dense: [ExportedNetwork.Dense], axis0: Int32) -> [String: Int32] {
        let L = dense.count - 1
        var gradients: [String: Int32] = [:]
        var delta = d
        gradients["dense\(L).bias"] = train.batchMean(d, axis0, "grad.dense\(L).bias", [dense[L].outputs])
        let one = train.constant("grad.one", shape: [1, 1], [1])
        for l in stride(from: L - 1, through: 0, by: -1) {
            let next = dense[l + 1], layer = dense[l]
            let w = train.constant("dense\(l + 1).weight_backward", shape: [next.inputs, next.outputs], next.weights)
            let e = train.tensor("grad.dense\(l).back", shape: [layer.outputs], batch: true)
            train.add(.fullyConnected, [delta, w, -1], [e], .fullyConnected)
            let width = [layer.outputs]
            if let derivative = activationDerivative(&train, layer: l, layer.activation, width: width, one: one) {
                let t = train.tensor("grad.dense\(l).delta", shape: width, batch: true)
                train.add(.mul, [e, derivative], [t], .mul)
                delta = t
            } else {
                delta = e
            }
            gradients["dense\(l).bias"] = train.batchMean(delta, axis0, "grad.dense\(l).bias", width)
        }
        return gradients
    }

    /// act′ of dense layer `l` from its output y: tanh 1 − y², sigmoid y(1 − y), relu sign(y)
    /// (y ≥ 0); nil for the identity.
    private static func activationDerivative(_ train: inout TFLiteModel.Subgraph, layer l: Int, _ activation: Activation,
                                             width: [Int], one: Int32) -> Int32? {
        let y = train.tensors.indices.last { train.tensors[$0].name == "dense\(l).out" || train.tensors[$0].name == "dense\(l).z" }.map(Int32.init)!
        func op(_ o: TFLiteModel.Op, _ inputs: [Int32], _ suffix: String, _ options: TFLiteModel.Options = .none) -> Int32 {
            let t = train.tensor("grad.dense\(l).\(suffix)", shape: width, batch: true)
            train.add(o, inputs, [t], options)
            return t
        }
        switch activation {
        case .identity: return nil
        case .tanh: return op(.sub, [one, op(.mul, [y, y], "y2", .mul)], "act", .sub)
        case .sigmoid: return op(.mul, [y, op(.sub, [one, y], "one_minus_y", .sub)], "act", .mul)
        case .relu: return op(.sign, [y], "act")
        }
    }

    /// One Adam step: m ← β1·m + (1 − β1)·g, v ← β2·v + (1 − β2)·g², θ ← θ − lr·(m/c1)/(√(v/c2) + ε)
    /// with c = 1 − β^t (β^t kept as a variable, multiplied by β each step), as `Optimizer`'s Adam.
    private static func adamStep(_ train: inout TFLiteModel.Subgraph, _ variables: [Variable], state: [Variable], adam: AdamSettings,
                                 gradients: [String: Int32], reads: [String: VariableRead], rate: Int32) {
        let one = train.constant("adam.one", shape: [1], [1])
        let b1 = train.constant("adam.beta1", shape: [], [adam.b1]), b2 = train.constant("adam.beta2", shape: [], [adam.b2])
        let r1 = train.constant("adam.one_minus_beta1", shape: [], [1 - adam.b1])
        let r2 = train.constant("adam.one_minus_beta2", shape: [], [1 - adam.b2])
        let eps = train.constant("adam.epsilon", shape: [], [adam.eps])
        let p1 = read(&train, state[state.count - 2]), p2 = read(&train, state[state.count - 1])
        let p1n = train.binary(.mul, p1.value, b1, "adam.beta1_power.next", [1], .mul)
        let p2n = train.binary(.mul, p2.value, b2, "adam.beta2_power.next", [1], .mul)
        let c1 = train.binary(.sub, one, p1n, "adam.c1", [1], .sub), c2 = train.binary(.sub, one, p2n, "adam.c2", [1], .sub)
        for (i, v) in variables.enumerated() {
            let g = gradients[v.name]!, r = reads[v.name]!
            let m = read(&train, state[2 * i]), s2 = read(&train, state[2 * i + 1])
            let n = v.name
            let m1 = train.binary(.add, train.binary(.mul, m.value, b1, "adam.\(n).b1m", v.shape, .mul),
                                  train.binary(.mul, g, r1, "adam.\(n).r1g", v.shape, .mul), "adam.\(n).m_next", v.shape, .add)
            let g2 = train.binary(.mul, g, g, "adam.\(n).g2", v.shape, .mul)
            let v1 = train.binary(.add, train.binary(.mul, s2.value, b2, "adam.\(n).b2v", v.shape, .mul),
                                  train.binary(.mul, g2, r2, "adam.\(n).r2g2", v.shape, .mul), "adam.\(n).v_next", v.shape, .add)
            let mHat = train.binary(.div, m1, c1, "adam.\(n).m_hat", v.shape, .div)
            let vHat = train.binary(.div, v1, c2, "adam.\(n).v_hat", v.shape, .div)
            let root = train.tensor("adam.\(n).sqrt_v_hat", shape: v.shape)
            train.add(.sqrt, [vHat], [root])
            let denominator = train.binary(.add, root, eps, "adam.\(n).denominator", v.shape, .add)
            let step = train.binary(.div, train.binary(.mul, mHat, rate, "adam.\(n).lr_m_hat", v.shape, .mul), denominator,
                                    n + ".step", v.shape, .div)
            let updated = train.binary(.sub, r.value, step, n + ".updated", v.shape, .sub)
            train.add(.assignVariable, [r.handle, updated], [], .assignVariable)
            train.add(.assignVariable, [m.handle, m1], [], .assignVariable)
            train.add(.assignVariable, [s2.handle, v1], [], .assignVariable)
        }
        train.add(.assignVariable, [p1.handle, p1n], [], .assignVariable)
        train.add(.assignVariable, [p2.handle, p2n], [], .assignVariable)
    }

    /// Mean over the batch of −Σ t·log p; binary: −(t·log p + (1 − t)·log(1 − p)).
    static func crossEntropy(_ g: inout TFLiteModel.Subgraph, head: OutputHead, p: Int32, targets: Int32) -> Int32 {
        let k = head.logitCount
        func op(_ o: TFLiteModel.Op, _ inputs: [Int32], _ name: String, _ width: Int, _ options: TFLiteModel.Options = .none) -> Int32 {
            let t = g.tensor(name, shape: [width], batch: true)
            g.add(o, inputs, [t], options)
            return t
        }
        var terms = op(.mul, [targets, op(.log, [p], "loss.log_p", k)], "loss.t_log_p", k, .mul)
        if case .binary = head {
            let one = g.constant("loss.one", shape: [1, 1], [1])
            let q = op(.sub, [one, p], "loss.q", 1, .sub)
            let u = op(.sub, [one, targets], "loss.u", 1, .sub)
            let second = op(.mul, [u, op(.log, [q], "loss.log_q", 1)], "loss.u_log_q", 1, .mul)
            terms = op(.add, [terms, second], "loss.terms", 1, .add)
        }
        let axis1 = g.constant(name: "axis1", [1])
        let perRow = g.tensor("loss.per_row", shape: [], batch: true)
        g.add(.sum, [terms, axis1], [perRow], .reducer(keepDims: false))
        let axis0 = g.constant(name: "loss.axis0", [0])
        let mean = g.tensor("loss.mean", shape: [])
        g.add(.mean, [perRow, axis0], [mean], .reducer(keepDims: false))
        let minusOne = g.constant("loss.minus_one", shape: [], [-1])
        let loss = g.tensor("loss", shape: [])
        g.add(.mul, [mean, minusOne], [loss], .mul)
        return loss
    }
}

extension TFLiteModel.Subgraph {
    /// The mean of `x` over the batch (axis 0, the constant `axis0`): a gradient's batch average.
    fileprivate mutating func batchMean(_ x: Int32, _ axis0: Int32, _ name: String, _ shape: [Int]) -> Int32 {
        let t = tensor(name, shape: shape)
        add(.mean, [x, axis0], [t], .reducer(keepDims: false))
        return t
    }

    /// `op(a, b)` into a new tensor `name` of `shape` (no batch dimension).
    fileprivate mutating func binary(_ op: TFLiteModel.Op, _ a: Int32, _ b: Int32, _ name: String, _ shape: [Int],
                                     _ options: TFLiteModel.Options) -> Int32 {
        let t = tensor(name, shape: shape)
        add(op, [a, b], [t], options)
        return t
    }
}
