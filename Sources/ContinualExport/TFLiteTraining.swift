import ContinualCore

/// A LiteRT model whose output layer trains on the device: the Android counterpart of the Core ML
/// updatable model, for `last_layer` runs, written with builtin operators and resource variables.
///
/// The output layer's weights W [K × h] (FC layout) and bias b [K] are resource variables
/// (`VAR_HANDLE`, shared names `dense<L>.weight` / `dense<L>.bias`), initialised once per
/// interpreter by an init subgraph that every signature runs first (`CALL_ONCE` →
/// `ASSIGN_VARIABLE` of the exported values). Signatures:
/// - `serving_default`: as `TFLiteExport.model`, the output layer reading the variables
///   (`READ_VARIABLE`);
/// - `train`: inputs `features` [N, d] and `targets` [N, K] (binary: y ∈ {0, 1} [N, 1];
///   multiclass: one-hot rows), output `loss` [] (mean cross-entropy before the step). One SGD
///   step on the batch's mean loss, as the toolkit's trainer takes it (`Loss`: ∂ℓ/∂z = p − y,
///   averaged over the batch):
///   d = p − t (`SUB`, p = σ(z) or softmax(z)), ∂W = mean_n dₙ ⊗ hₙ (`RESHAPE` d to [N, K, 1]
///   and h to [N, 1, h], broadcast `MUL`, `MEAN` over axis 0 — no transposes, and the batch size
///   may vary), ∂b = mean_n dₙ (`MEAN`), W ← W − lr·∂W, b ← b − lr·∂b (`MUL`, `SUB`,
///   `ASSIGN_VARIABLE`). The hidden activations h come from the frozen core (constants), as in
///   a `last_layer` run after `freeze_core_after`;
/// - `parameters`: outputs `weight` [K × h] and `bias` [K], the variables' current values (what
///   the app persists; `restore` writes them back after a relaunch);
/// - `restore`: inputs `weight`, `bias`, assigned to the variables.
/// Plain SGD (no momentum, no weight decay) only: momentum would need a velocity variable whose
/// value the exported run's checkpoint does not hand over, so other optimizers are refused.
public enum TFLiteTraining {
    /// Why `network` cannot get a training signature with `optimizer`, or nil.
    public static func unsupportedReason(_ network: ExportedNetwork, optimizer: OptimizerSpec) -> String? {
        guard network.includesHead else { return "a core-only model (--parts core) has no output layer or loss to train" }
        if network.isQuantized { return "the output layer of an int8 model cannot be trained (export it in float32)" }
        guard case .dense(let last)? = network.stages.last, last.activation == .identity else {
            return "the graph does not end in a linear output layer"
        }
        guard case let .sgd(_, momentum, weightDecay, _) = optimizer, momentum == 0, weightDecay == 0 else {
            return "the training signature implements plain SGD (no momentum, no weight decay); the run's optimizer is \(optimizer)"
        }
        return nil
    }

    /// The `.tflite` bytes with the signatures above; `learningRate` is the step size of `train`.
    public static func model(_ network: ExportedNetwork, learningRate: Float, description: String = "",
                             metadata: [(String, String)] = []) throws -> [UInt8] {
        try build(network, learningRate: learningRate, description: description, metadata: metadata).serialized()
    }

    /// The model before serialisation: subgraphs `main`, `train`, `parameters`, `init`, `restore`.
    static func build(_ network: ExportedNetwork, learningRate: Float, description: String = "",
                      metadata: [(String, String)] = []) throws -> TFLiteModel {
        if let reason = unsupportedReason(network, optimizer: .sgd(learningRate: learningRate)) {
            throw ExportError.unsupported(reason)
        }
        let denseCount = network.denseStages.count
        let last = network.denseStages[denseCount - 1]
        let prefix = "dense\(denseCount - 1)"
        let weightName = prefix + ".weight", biasName = prefix + ".bias"
        let initial = (w: TFLiteExport.transpose(last.weights, rows: last.inputs, columns: last.outputs), b: last.bias)
        let (k, h) = (last.outputs, last.inputs)

        // Subgraph 3: initialise the variables.
        var initGraph = TFLiteModel.Subgraph(name: "init")
        for (name, shape, values) in [(weightName, [k, h], initial.w), (biasName, [k], initial.b)] {
            let handle = initGraph.tensor(name + ".handle", .resource, shape: [])
            initGraph.add(.varHandle, [], [handle], .varHandle(container: "", sharedName: name))
            let value = initGraph.constant(name + ".initial", shape: shape, values)
            initGraph.add(.assignVariable, [handle, value], [], .assignVariable)
        }
        let initIndex: Int32 = 3
        func callInit(_ g: inout TFLiteModel.Subgraph) {
            g.operators.insert(TFLiteModel.Operator(op: .callOnce, version: 1, inputs: [], outputs: [], options: .callOnce(initSubgraph: initIndex)), at: 0)
        }
        func read(_ g: inout TFLiteModel.Subgraph, _ name: String, _ shape: [Int]) -> (handle: Int32, value: Int32) {
            let handle = g.tensor(name + ".handle", .resource, shape: [])
            g.add(.varHandle, [], [handle], .varHandle(container: "", sharedName: name))
            let value = g.tensor(name + ".read", shape: shape)
            g.add(.readVariable, [handle], [value], .readVariable)
            return (handle, value)
        }

        // Subgraph 0: inference with the output layer read from the variables.
        var infer = TFLiteModel.Subgraph(name: "main")
        let inferOutputs = TFLiteExport.inference(network, into: &infer) { g in
            (read(&g, weightName, [k, h]).value, read(&g, biasName, [k]).value)
        }
        callInit(&infer)

        // Subgraph 1: one SGD step.
        var train = TFLiteModel.Subgraph(name: "train")
        var variables: (w: (handle: Int32, value: Int32), b: (handle: Int32, value: Int32))? = nil
        let trainOutputs = TFLiteExport.inference(network, into: &train) { g in
            let w = read(&g, weightName, [k, h]), b = read(&g, biasName, [k])
            variables = (w, b)
            return (w.value, b.value)
        }
        let logits = trainOutputs[0].tensor
        let fc = train.operators.first { $0.outputs == [logits] }!
        let hidden = fc.inputs[0]
        let targets = train.tensor("targets", shape: [k], batch: true)
        let p: Int32
        if case .binary = network.head {
            p = train.tensors.indices.first { train.tensors[$0].name == "p_positive" }.map(Int32.init)!
        } else {
            p = trainOutputs[1].tensor
        }
        // Loss (before the step): mean over the batch of −Σ t·log p (binary: both classes).
        let loss = crossEntropy(&train, head: network.head, p: p, targets: targets)
        // d = p − t; ∂b = mean d; ∂W = mean d ⊗ h.
        let d = train.tensor("grad.logits", shape: [k], batch: true)
        train.add(.sub, [p, targets], [d], .sub)
        let axis0 = train.constant(name: "axis0", [0])
        let gb = train.tensor("grad.bias", shape: [k])
        train.add(.mean, [d, axis0], [gb], .reducer(keepDims: false))
        let d3 = train.tensor("grad.logits_3d", shape: [k, 1], batch: true)
        train.add(.reshape, [d, train.constant(name: "shape_nk1", [-1, Int32(k), 1])], [d3], .reshape)
        let h3 = train.tensor("grad.hidden_3d", shape: [1, h], batch: true)
        train.add(.reshape, [hidden, train.constant(name: "shape_n1h", [-1, 1, Int32(h)])], [h3], .reshape)
        let outer = train.tensor("grad.outer", shape: [k, h], batch: true)
        train.add(.mul, [d3, h3], [outer], .mul)
        let gw = train.tensor("grad.weight", shape: [k, h])
        train.add(.mean, [outer, axis0], [gw], .reducer(keepDims: false))
        let rate = train.constant("learning_rate", shape: [], [learningRate])
        for (v, g, shape, name) in [(variables!.w, gw, [k, h], weightName), (variables!.b, gb, [k], biasName)] {
            let step = train.tensor(name + ".step", shape: shape)
            train.add(.mul, [g, rate], [step], .mul)
            let updated = train.tensor(name + ".updated", shape: shape)
            train.add(.sub, [v.value, step], [updated], .sub)
            train.add(.assignVariable, [v.handle, updated], [], .assignVariable)
        }
        train.inputs = [train.inputs[0], targets]
        train.outputs = [loss]
        callInit(&train)

        // Subgraph 2: read the variables.
        var parameters = TFLiteModel.Subgraph(name: "parameters")
        let pw = read(&parameters, weightName, [k, h]).value, pb = read(&parameters, biasName, [k]).value
        parameters.outputs = [pw, pb]
        callInit(&parameters)

        // Subgraph 4: write the variables (after a relaunch).
        var restore = TFLiteModel.Subgraph(name: "restore")
        let rw = restore.tensor("weight", shape: [k, h]), rb = restore.tensor("bias", shape: [k])
        restore.inputs = [rw, rb]
        for (name, value) in [(weightName, rw), (biasName, rb)] {
            let handle = restore.tensor(name + ".handle", .resource, shape: [])
            restore.add(.varHandle, [], [handle], .varHandle(container: "", sharedName: name))
            restore.add(.assignVariable, [handle, value], [], .assignVariable)
        }
        let done = restore.constant("ok", shape: [1], [1])
        restore.outputs = [done]
        callInit(&restore)

        var m = TFLiteModel()
        m.subgraphs = [infer, train, parameters, initGraph, restore]
        m.signatures = [
            .init(key: TFLiteExport.inferenceSignature, subgraph: 0, inputs: [("features", infer.inputs[0])], outputs: inferOutputs),
            .init(key: "train", subgraph: 1, inputs: [("features", train.inputs[0]), ("targets", targets)], outputs: [("loss", loss)]),
            .init(key: "parameters", subgraph: 2, inputs: [], outputs: [("weight", pw), ("bias", pb)]),
            .init(key: "restore", subgraph: 4, inputs: [("weight", rw), ("bias", rb)], outputs: [("ok", done)]),
        ]
        m.description = description.isEmpty ? "ContinualKit MLP, route \(network.route), trainable output layer" : description
        m.metadata = TFLiteExport.metadataEntries(network) + metadata + [
            ("continualkit.train", "sgd lr=\(learningRate) on \(weightName), \(biasName)"),
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
