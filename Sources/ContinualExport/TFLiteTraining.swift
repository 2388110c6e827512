import ContinualCore

/// A LiteRT model that trains on the device: the Android counterpart of the Core ML updatable
/// model, for `last_layer` runs (the output layer) and single-head `bitfit` runs (every bias),
/// written with builtin operators and resource variables.
///
/// The trained parameters — the output layer's weights W [K × h] (FC layout) and bias b [K], or
/// every dense layer's bias — are resource variables (`VAR_HANDLE`, shared names
/// `dense<l>.weight` / `dense<l>.bias`), initialised once per
/// interpreter by an init subgraph that every signature runs first (`CALL_ONCE` →
/// `ASSIGN_VARIABLE` of the exported values). Signatures:
/// - `serving_default`: as `TFLiteExport.model`, the output layer reading the variables
///   (`READ_VARIABLE`);
/// - `train`: inputs `features` [N, d] and `targets` [N, K] (binary: y ∈ {0, 1} [N, 1];
///   multiclass: one-hot rows), output `loss` [] (mean cross-entropy before the step). One
///   optimizer step on the batch's mean loss, as the toolkit's trainer takes it (`Loss`:
///   ∂ℓ/∂z = p − y, averaged over the batch):
///   d = p − t (`SUB`, p = σ(z) or softmax(z)), ∂W = mean_n dₙ ⊗ hₙ (`RESHAPE` d to [N, K, 1]
///   and h to [N, 1, h], broadcast `MUL`, `MEAN` over axis 0 — no transposes, and the batch size
///   may vary), ∂b = mean_n dₙ (`MEAN`), then SGD θ ← θ − lr·∂θ (`MUL`, `SUB`,
///   `ASSIGN_VARIABLE`) or Adam (below). The hidden activations h come from the frozen core (constants), as in
///   a `last_layer` run after `freeze_core_after`. BitFit: δ_L = d, δ_l = (δ_{l+1}·W_{l+1}ᵀ) ⊙
///   act′ (FC with the frozen [in × out] weights, no bias; act′ from the layer's output: tanh
///   1 − y² with `MUL`/`SUB`, sigmoid y(1 − y), relu `SIGN`(y)), ∂b_l = mean δ_l;
/// - `parameters`: outputs the variables' current values — `weight` [K × h] and `bias` [K]
///   (last layer) or `dense<l>.bias` (BitFit) — what the app persists;
/// - `restore`: the same names as inputs, assigned to the variables (after a relaunch);
/// - `begin_session` (Adam only): resets Adam's state.
/// Optimizers: plain SGD (no momentum, no weight decay), and Adam without weight decay, whose
/// moments and β^t are variables starting fresh (m = v = 0, β^t = 1) — what the toolkit's
/// trainer does at each experience with `reset_optimizer` (the default), and `PersonalModel` at
/// each session. Momentum, weight decay and the other optimizers are refused: their state or
/// decoupled decay is not written here, and a silently different update would be worse.
public enum TFLiteTraining {
    /// Which parameters the `train` signature updates.
    public enum Trainable: String, Sendable, CaseIterable {
        /// The output layer's weights and bias (`last_layer` runs).
        case outputLayer = "last_layer"
        /// Every dense layer's bias (`bitfit` runs on a single-head model): the gradient is
        /// backpropagated through the frozen weights.
        case biases = "bitfit"
    }

    /// Why `network` cannot get a training signature with `optimizer`, or nil.
    public static func unsupportedReason(_ network: ExportedNetwork, optimizer: OptimizerSpec, trainable: Trainable = .outputLayer) -> String? {
        guard network.includesHead else { return "a core-only model (--parts core) has no output layer or loss to train" }
        if network.isQuantized { return "the layers of an int8 model cannot be trained (export it in float32)" }
        guard case .dense(let last)? = network.stages.last, last.activation == .identity else {
            return "the graph does not end in a linear output layer"
        }
        if trainable == .biases && network.stages.contains(where: { if case .adapter = $0 { return true } else { return false } }) {
            return "the BitFit training signature covers dense layers only; this model has adapters"
        }
        switch optimizer {
        case let .sgd(_, momentum, weightDecay, _) where momentum == 0 && weightDecay == 0: return nil
        case let .adam(_, _, _, _, weightDecay) where weightDecay == 0: return nil
        default:
            return "the training signature implements plain SGD (no momentum, no weight decay) and Adam (no weight decay); "
                + "the run's optimizer is \(optimizer)"
        }
    }

    /// The `.tflite` bytes with the signatures above; `optimizer` (plain SGD or Adam) takes the steps of `train`.
    public static func model(_ network: ExportedNetwork, trainable: Trainable = .outputLayer, optimizer: OptimizerSpec,
                             description: String = "", metadata: [(String, String)] = []) throws -> [UInt8] {
        try build(network, trainable: trainable, optimizer: optimizer, description: description, metadata: metadata).serialized()
    }

    /// One resource variable: shared name, shape, initial value, dense layer, weight or bias.
    struct Variable {
        var name: String
        var shape: [Int]
        var initial: [Float]
        var dense: Int
        var isWeight: Bool
        /// Its key in the `parameters` and `restore` signatures.
        var key: String
    }

    /// The model before serialisation: subgraphs `main`, `train`, `parameters`, `init`, `restore`.
    static func build(_ network: ExportedNetwork, trainable: Trainable = .outputLayer, optimizer: OptimizerSpec,
                      description: String = "", metadata: [(String, String)] = []) throws -> TFLiteModel {
        if let reason = unsupportedReason(network, optimizer: optimizer, trainable: trainable) {
            throw ExportError.unsupported(reason)
        }
        let dense = network.denseStages
        let L = dense.count - 1
        let last = dense[L]
        let variables: [Variable]
        switch trainable {
        case .outputLayer:
            variables = [
                Variable(name: "dense\(L).weight", shape: [last.outputs, last.inputs],
                         initial: TFLiteExport.transpose(last.weights, rows: last.inputs, columns: last.outputs), dense: L, isWeight: true, key: "weight"),
                Variable(name: "dense\(L).bias", shape: [last.outputs], initial: last.bias, dense: L, isWeight: false, key: "bias"),
            ]
        case .biases:
            variables = dense.enumerated().map { i, d in
                Variable(name: "dense\(i).bias", shape: [d.outputs], initial: d.bias, dense: i, isWeight: false, key: "dense\(i).bias")
            }
        }

        // Adam's state: first and second moments per trained variable (zeros), and β1^t, β2^t (1):
        // a fresh optimizer, as the toolkit's trainer starts each experience (reset_optimizer) and
        // each `PersonalModel` session; `begin_session` resets it.
        var adam: (b1: Float, b2: Float, eps: Float)? = nil
        if case let .adam(_, b1, b2, eps, _) = optimizer { adam = (b1, b2, eps) }
        let state: [Variable] = adam == nil ? [] : variables.flatMap { v in
            ["m", "v"].map { Variable(name: "adam.\($0).\(v.name)", shape: v.shape, initial: [Float](repeating: 0, count: v.initial.count),
                                     dense: -1, isWeight: false, key: "") }
        } + ["beta1_power", "beta2_power"].map { Variable(name: "adam.\($0)", shape: [1], initial: [1], dense: -1, isWeight: false, key: "") }

        // Subgraph 3: initialise the variables.
        var initGraph = TFLiteModel.Subgraph(name: "init")
        for v in variables + state {
            let handle = initGraph.tensor(v.name + ".handle", .resource, shape: [])
            initGraph.add(.varHandle, [], [handle], .varHandle(container: "", sharedName: v.name))
            let value = initGraph.constant(v.name + ".initial", shape: v.shape, v.initial)
            initGraph.add(.assignVariable, [handle, value], [], .assignVariable)
        }
        let initIndex: Int32 = 3
        func callInit(_ g: inout TFLiteModel.Subgraph) {
            g.operators.insert(TFLiteModel.Operator(op: .callOnce, version: 1, inputs: [], outputs: [], options: .callOnce(initSubgraph: initIndex)), at: 0)
        }
        func read(_ g: inout TFLiteModel.Subgraph, _ v: Variable) -> (handle: Int32, value: Int32) {
            let handle = g.tensor(v.name + ".handle", .resource, shape: [])
            g.add(.varHandle, [], [handle], .varHandle(container: "", sharedName: v.name))
            let value = g.tensor(v.name + ".read", shape: v.shape)
            g.add(.readVariable, [handle], [value], .readVariable)
            return (handle, value)
        }
        // The forward graph with the variables read where they are used; returns the reads by name.
        func forward(_ g: inout TFLiteModel.Subgraph) -> (outputs: [(name: String, tensor: Int32)], reads: [String: (handle: Int32, value: Int32)]) {
            var reads: [String: (handle: Int32, value: Int32)] = [:]
            let outputs = TFLiteExport.inference(network, into: &g) { g, i in
                var w: Int32? = nil, b: Int32? = nil
                for v in variables where v.dense == i {
                    let r = read(&g, v)
                    reads[v.name] = r
                    if v.isWeight { w = r.value } else { b = r.value }
                }
                return (w, b)
            }
            return (outputs, reads)
        }

        // Subgraph 0: inference.
        var infer = TFLiteModel.Subgraph(name: "main")
        let inferOutputs = forward(&infer).outputs
        callInit(&infer)

        // Subgraph 1: one SGD step.
        var train = TFLiteModel.Subgraph(name: "train")
        let (trainOutputs, reads) = forward(&train)
        let logits = trainOutputs[0].tensor
        let k = last.outputs
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
        func mean(_ x: Int32, _ name: String, _ shape: [Int]) -> Int32 {
            let t = train.tensor(name, shape: shape)
            train.add(.mean, [x, axis0], [t], .reducer(keepDims: false))
            return t
        }
        var gradients: [String: Int32] = [:]
        switch trainable {
        case .outputLayer:
            // ∂b = mean d; ∂W = mean d ⊗ h, h the output layer's input.
            let hidden = train.operators.first { $0.outputs == [logits] }!.inputs[0]
            let h = last.inputs
            gradients["dense\(L).bias"] = mean(d, "grad.bias", [k])
            let d3 = train.tensor("grad.logits_3d", shape: [k, 1], batch: true)
            train.add(.reshape, [d, train.constant(name: "shape_nk1", [-1, Int32(k), 1])], [d3], .reshape)
            let h3 = train.tensor("grad.hidden_3d", shape: [1, h], batch: true)
            train.add(.reshape, [hidden, train.constant(name: "shape_n1h", [-1, 1, Int32(h)])], [h3], .reshape)
            let outer = train.tensor("grad.outer", shape: [k, h], batch: true)
            train.add(.mul, [d3, h3], [outer], .mul)
            gradients["dense\(L).weight"] = mean(outer, "grad.weight", [k, h])
        case .biases:
            // Backpropagation through the frozen weights: δ_L = d; δ_l = (δ_{l+1}·W_{l+1}ᵀ) ⊙ act′(h_l)
            // (FC with the toolkit's [in × out] matrix as its [out × in] operand computes δ·Wᵀ);
            // ∂b_l = mean δ_l.
            var delta = d
            gradients["dense\(L).bias"] = mean(d, "grad.dense\(L).bias", [k])
            let one = train.constant("grad.one", shape: [1, 1], [1])
            for l in stride(from: L - 1, through: 0, by: -1) {
                let next = dense[l + 1], layer = dense[l]
                let w = train.constant("dense\(l + 1).weight_backward", shape: [next.inputs, next.outputs], next.weights)
                let e = train.tensor("grad.dense\(l).back", shape: [layer.outputs], batch: true)
                train.add(.fullyConnected, [delta, w, -1], [e], .fullyConnected)
                // act′ from the layer's output y: tanh 1 − y², sigmoid y(1 − y), relu sign(y) (y ≥ 0).
                let y = train.tensors.indices.last { train.tensors[$0].name == "dense\(l).out" || train.tensors[$0].name == "dense\(l).z" }.map(Int32.init)!
                let width = [layer.outputs]
                var derivative: Int32? = nil
                switch layer.activation {
                case .identity: derivative = nil
                case .tanh:
                    let y2 = train.tensor("grad.dense\(l).y2", shape: width, batch: true)
                    train.add(.mul, [y, y], [y2], .mul)
                    let t = train.tensor("grad.dense\(l).act", shape: width, batch: true)
                    train.add(.sub, [one, y2], [t], .sub)
                    derivative = t
                case .sigmoid:
                    let q = train.tensor("grad.dense\(l).one_minus_y", shape: width, batch: true)
                    train.add(.sub, [one, y], [q], .sub)
                    let t = train.tensor("grad.dense\(l).act", shape: width, batch: true)
                    train.add(.mul, [y, q], [t], .mul)
                    derivative = t
                case .relu:
                    let t = train.tensor("grad.dense\(l).act", shape: width, batch: true)
                    train.add(.sign, [y], [t])
                    derivative = t
                }
                if let derivative {
                    let t = train.tensor("grad.dense\(l).delta", shape: width, batch: true)
                    train.add(.mul, [e, derivative], [t], .mul)
                    delta = t
                } else {
                    delta = e
                }
                gradients["dense\(l).bias"] = mean(delta, "grad.dense\(l).bias", width)
            }
        }
        let rate = train.constant("learning_rate", shape: [], [optimizer.learningRate])
        func binary(_ op: TFLiteModel.Op, _ a: Int32, _ b: Int32, _ name: String, _ shape: [Int], _ options: TFLiteModel.Options) -> Int32 {
            let t = train.tensor(name, shape: shape)
            train.add(op, [a, b], [t], options)
            return t
        }
        if let adam {
            // m ← β1·m + (1 − β1)·g, v ← β2·v + (1 − β2)·g², θ ← θ − lr·(m/c1)/(√(v/c2) + ε) with
            // c = 1 − β^t (β^t kept as a variable, multiplied by β each step), as `Optimizer`'s Adam.
            let one = train.constant("adam.one", shape: [1], [1])
            let b1 = train.constant("adam.beta1", shape: [], [adam.b1]), b2 = train.constant("adam.beta2", shape: [], [adam.b2])
            let r1 = train.constant("adam.one_minus_beta1", shape: [], [1 - adam.b1])
            let r2 = train.constant("adam.one_minus_beta2", shape: [], [1 - adam.b2])
            let eps = train.constant("adam.epsilon", shape: [], [adam.eps])
            let p1 = read(&train, state[state.count - 2]), p2 = read(&train, state[state.count - 1])
            let p1n = binary(.mul, p1.value, b1, "adam.beta1_power.next", [1], .mul)
            let p2n = binary(.mul, p2.value, b2, "adam.beta2_power.next", [1], .mul)
            let c1 = binary(.sub, one, p1n, "adam.c1", [1], .sub), c2 = binary(.sub, one, p2n, "adam.c2", [1], .sub)
            for (i, v) in variables.enumerated() {
                let g = gradients[v.name]!, r = reads[v.name]!
                let m = read(&train, state[2 * i]), s2 = read(&train, state[2 * i + 1])
                let n = v.name
                let m1 = binary(.add, binary(.mul, m.value, b1, "adam.\(n).b1m", v.shape, .mul),
                                binary(.mul, g, r1, "adam.\(n).r1g", v.shape, .mul), "adam.\(n).m_next", v.shape, .add)
                let g2 = binary(.mul, g, g, "adam.\(n).g2", v.shape, .mul)
                let v1 = binary(.add, binary(.mul, s2.value, b2, "adam.\(n).b2v", v.shape, .mul),
                                binary(.mul, g2, r2, "adam.\(n).r2g2", v.shape, .mul), "adam.\(n).v_next", v.shape, .add)
                let mHat = binary(.div, m1, c1, "adam.\(n).m_hat", v.shape, .div)
                let vHat = binary(.div, v1, c2, "adam.\(n).v_hat", v.shape, .div)
                let root = train.tensor("adam.\(n).sqrt_v_hat", shape: v.shape)
                train.add(.sqrt, [vHat], [root])
                let denominator = binary(.add, root, eps, "adam.\(n).denominator", v.shape, .add)
                let step = binary(.div, binary(.mul, mHat, rate, "adam.\(n).lr_m_hat", v.shape, .mul), denominator, n + ".step", v.shape, .div)
                let updated = binary(.sub, r.value, step, n + ".updated", v.shape, .sub)
                train.add(.assignVariable, [r.handle, updated], [], .assignVariable)
                train.add(.assignVariable, [m.handle, m1], [], .assignVariable)
                train.add(.assignVariable, [s2.handle, v1], [], .assignVariable)
            }
            train.add(.assignVariable, [p1.handle, p1n], [], .assignVariable)
            train.add(.assignVariable, [p2.handle, p2n], [], .assignVariable)
        } else {
            for v in variables {
                let r = reads[v.name]!
                let step = binary(.mul, gradients[v.name]!, rate, v.name + ".step", v.shape, .mul)
                let updated = binary(.sub, r.value, step, v.name + ".updated", v.shape, .sub)
                train.add(.assignVariable, [r.handle, updated], [], .assignVariable)
            }
        }
        train.inputs = [train.inputs[0], targets]
        train.outputs = [loss]
        callInit(&train)

        // Subgraph 2: read the variables.
        var parameters = TFLiteModel.Subgraph(name: "parameters")
        let current = variables.map { read(&parameters, $0).value }
        parameters.outputs = current
        callInit(&parameters)

        // Subgraph 4: write the variables (after a relaunch).
        var restore = TFLiteModel.Subgraph(name: "restore")
        let given = variables.map { restore.tensor($0.key, shape: $0.shape) }
        restore.inputs = given
        for (v, value) in zip(variables, given) {
            let handle = restore.tensor(v.name + ".handle", .resource, shape: [])
            restore.add(.varHandle, [], [handle], .varHandle(container: "", sharedName: v.name))
            restore.add(.assignVariable, [handle, value], [], .assignVariable)
        }
        let done = restore.constant("ok", shape: [1], [1])
        restore.outputs = [done]
        callInit(&restore)

        var m = TFLiteModel()
        m.subgraphs = [infer, train, parameters, initGraph, restore]
        // Subgraph 5 (Adam only): reset the optimizer's state, to start a new training session.
        var beginSession = TFLiteModel.Subgraph(name: "begin_session")
        for v in state {
            let handle = beginSession.tensor(v.name + ".handle", .resource, shape: [])
            beginSession.add(.varHandle, [], [handle], .varHandle(container: "", sharedName: v.name))
            let value = beginSession.constant(v.name + ".initial", shape: v.shape, v.initial)
            beginSession.add(.assignVariable, [handle, value], [], .assignVariable)
        }
        let started = beginSession.constant("ok", shape: [1], [1])
        beginSession.outputs = [started]
        callInit(&beginSession)
        if adam != nil { m.subgraphs.append(beginSession) }
        m.signatures = [
            .init(key: TFLiteExport.inferenceSignature, subgraph: 0, inputs: [("features", infer.inputs[0])], outputs: inferOutputs),
            .init(key: "train", subgraph: 1, inputs: [("features", train.inputs[0]), ("targets", targets)], outputs: [("loss", loss)]),
            .init(key: "parameters", subgraph: 2, inputs: [], outputs: zip(variables, current).map { ($0.key, $1) }),
            .init(key: "restore", subgraph: 4, inputs: zip(variables, given).map { ($0.key, $1) }, outputs: [("ok", done)]),
        ]
        if adam != nil { m.signatures.append(.init(key: "begin_session", subgraph: 5, inputs: [], outputs: [("ok", started)])) }
        m.description = description.isEmpty ? "ContinualKit MLP, route \(network.route), trainable \(trainable.rawValue)" : description
        m.metadata = TFLiteExport.metadataEntries(network) + metadata + [
            ("continualkit.train", "\(optimizer) on " + variables.map(\.name).joined(separator: ", ")),
        ]
        return m
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
    /// A 1-D int32 constant (axes, shapes).
    mutating func constant(name: String, _ values: [Int32]) -> Int32 {
        constant(name, shape: [values.count], int32: values)
    }
}
