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
        let variables = trainedVariables(network, trainable: trainable)
        // Adam's state: first and second moments per trained variable (zeros), and β1^t, β2^t (1):
        // a fresh optimizer, as the toolkit's trainer starts each experience (reset_optimizer) and
        // each `PersonalModel` session; `begin_session` resets it.
        var adam: AdamSettings? = nil
        if case let .adam(_, b1, b2, eps, _) = optimizer { adam = (b1, b2, eps) }
        let state = adam == nil ? [] : adamState(variables)

        // Subgraph 3: initialise the variables.
        var initGraph = TFLiteModel.Subgraph(name: "init")
        assignInitialValues(variables + state, in: &initGraph)

        // Subgraph 0: inference.
        var infer = TFLiteModel.Subgraph(name: "main")
        let inferOutputs = forward(network, variables, &infer).outputs
        callInit(&infer)

        // Subgraph 1: one SGD step.
        let train = trainGraph(network, variables, state: state, trainable: trainable, optimizer: optimizer, adam: adam)

        // Subgraph 2: read the variables.
        var parameters = TFLiteModel.Subgraph(name: "parameters")
        let current = variables.map { read(&parameters, $0).value }
        parameters.outputs = current
        callInit(&parameters)

        // Subgraph 4: write the variables (after a relaunch).
        let restore = restoreGraph(variables)

        var m = TFLiteModel()
        m.subgraphs = [infer, train.graph, parameters, initGraph, restore.graph]
        // Subgraph 5 (Adam only): reset the optimizer's state, to start a new training session.
        var beginSession = TFLiteModel.Subgraph(name: "begin_session")
        assignInitialValues(state, in: &beginSession)
        let started = beginSession.constant("ok", shape: [1], [1])
        beginSession.outputs = [started]
        callInit(&beginSession)
        if adam != nil { m.subgraphs.append(beginSession) }
        m.signatures = [
            .init(key: TFLiteExport.inferenceSignature, subgraph: 0, inputs: [("features", infer.inputs[0])], outputs: inferOutputs),
            .init(key: "train", subgraph: 1, inputs: [("features", train.graph.inputs[0]), ("targets", train.targets)], outputs: [("loss", train.loss)]),
            .init(key: "parameters", subgraph: 2, inputs: [], outputs: zip(variables, current).map { ($0.key, $1) }),
            .init(key: "restore", subgraph: 4, inputs: zip(variables, restore.given).map { ($0.key, $1) }, outputs: [("ok", restore.done)]),
        ]
        if adam != nil { m.signatures.append(.init(key: "begin_session", subgraph: 5, inputs: [], outputs: [("ok", started)])) }
        m.description = description.isEmpty ? "ContinualKit MLP, route \(network.route), trainable \(trainable.rawValue)" : description
        m.metadata = TFLiteExport.metadataEntries(network) + metadata + [
            ("continualkit.train", "\(optimizer) on " + variables.map(\.name).joined(separator: ", ")),
        ]
        return m
    }

    /// Adam's β1, β2 and ε (the run's optimizer, without weight decay).
    typealias AdamSettings = (b1: Float, b2: Float, eps: Float)
    /// A variable read in a subgraph: its handle (to assign it) and its current value.
    typealias VariableRead = (handle: Int32, value: Int32)

    /// The variables `trainable` names: the output layer's W (in FC layout [K × h]) and b, or
    /// every dense layer's bias, initialised to the exported values.
    private static func trainedVariables(_ network: ExportedNetwork, trainable: Trainable) -> [Variable] {
        let dense = network.denseStages
        let L = dense.count - 1
        let last = dense[L]
        switch trainable {
        case .outputLayer:
            return [
                Variable(name: "dense\(L).weight", shape: [last.outputs, last.inputs],
                         initial: TFLiteExport.transpose(last.weights, rows: last.inputs, columns: last.outputs), dense: L, isWeight: true, key: "weight"),
                Variable(name: "dense\(L).bias", shape: [last.outputs], initial: last.bias, dense: L, isWeight: false, key: "bias"),
            ]
        case .biases:
            return dense.enumerated().map { i, d in
                Variable(name: "dense\(i).bias", shape: [d.outputs], initial: d.bias, dense: i, isWeight: false, key: "dense\(i).bias")
            }
        }
    }

    /// Adam's state variables: m and v per trained variable (zeros), then β1^t and β2^t (1).
    private static func adamState(_ variables: [Variable]) -> [Variable] {
        variables.flatMap { v in
            ["m", "v"].map { Variable(name: "adam.\($0).\(v.name)", shape: v.shape, initial: [Float](repeating: 0, count: v.initial.count),
                                     dense: -1, isWeight: false, key: "") }
        } + ["beta1_power", "beta2_power"].map { Variable(name: "adam.\($0)", shape: [1], initial: [1], dense: -1, isWeight: false, key: "") }
    }

    /// Assigns each variable its initial value in `g` (the `init` and `begin_session` subgraphs).
    private static func assignInitialValues(_ variables: [Variable], in g: inout TFLiteModel.Subgraph) {
        for v in variables {
            let handle = g.tensor(v.name + ".handle", .resource, shape: [])
            g.add(.varHandle, [], [handle], .varHandle(container: "", sharedName: v.name))
            let value = g.constant(v.name + ".initial", shape: v.shape, v.initial)
            g.add(.assignVariable, [handle, value], [], .assignVariable)
        }
    }

    /// Runs the `init` subgraph (index 3) once per interpreter, before anything else in `g`.
    static func callInit(_ g: inout TFLiteModel.Subgraph) {
        g.operators.insert(TFLiteModel.Operator(op: .callOnce, version: 1, inputs: [], outputs: [], options: .callOnce(initSubgraph: 3)), at: 0)
    }

    /// Reads variable `v` in `g`.
    static func read(_ g: inout TFLiteModel.Subgraph, _ v: Variable) -> VariableRead {
        let handle = g.tensor(v.name + ".handle", .resource, shape: [])
        g.add(.varHandle, [], [handle], .varHandle(container: "", sharedName: v.name))
        let value = g.tensor(v.name + ".read", shape: v.shape)
        g.add(.readVariable, [handle], [value], .readVariable)
        return (handle, value)
    }

    /// The forward graph with the variables read where they are used; returns the reads by name.
    static func forward(_ network: ExportedNetwork, _ variables: [Variable],
                        _ g: inout TFLiteModel.Subgraph) -> (outputs: [(name: String, tensor: Int32)], reads: [String: VariableRead]) {
        var reads: [String: VariableRead] = [:]
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

    /// Subgraph 4, `restore`: assigns the given values (inputs named by the variables' keys) to the
    /// variables; outputs `ok`.
    private static func restoreGraph(_ variables: [Variable]) -> (graph: TFLiteModel.Subgraph, given: [Int32], done: Int32) {
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
        return (restore, given, done)
    }
}

extension TFLiteModel.Subgraph {
    /// A 1-D int32 constant (axes, shapes).
    mutating func constant(name: String, _ values: [Int32]) -> Int32 {
        constant(name, shape: [values.count], int32: values)
    }
}
