import ContinualCore

/// Internal replay (`internal_replay: true`): the model's first layer plays the authors' frozen
/// convolutional layers. It trains with the classifier during the first experience and is frozen
/// from the second on (`MLP.trainable`); the VAE encodes, reconstructs and replays its
/// activations, the encoder being the hidden layers above it. Replayed rows are first-layer
/// activations, so they are not appended to the batch: the plugin runs them through the layers
/// above the first (head included) and adds their distillation gradient itself.
extension BIR {
    mutating func setUpInternalReplay(model: MLP, training: TrainingOptions) throws {
        let hidden = model.spec.hidden
        guard hidden.count >= 2 else {
            throw TrainingError.invalidSetting(path: ".model.hidden", message: "bir's internal_replay needs at least two hidden layers (the first is frozen after the first experience and replayed at its output, the others are the encoder); model.hidden is \(hidden)")
        }
        frozenCount = model.layers[0].parameterCount
        var upper = model.spec
        upper.inputs = hidden[0]
        upper.hidden = Array(hidden.dropFirst())
        var lower = model.spec
        lower.hidden = []
        lower.head = .multiclass(classes: hidden[0])
        lower.heads = 1
        guard upper.parameterCount == model.parameterCount - frozenCount, lower.parameterCount == frozenCount else {
            throw TrainingError.invalid("bir's internal_replay splits a plain single-head network after its first layer; this model's parameters do not split so")
        }
        below = MLP(spec: lower, parameters: Array(model.parameters[..<frozenCount]))
        above = MLP(spec: upper, parameters: Array(model.parameters[frozenCount...]))
        encoder = try above!.penultimateNetwork(for: "bir (internal replay)", training: training)
        encoderOffset = frozenCount
    }

    /// Everything above the first layer of `model`, head included.
    static func above(of model: MLP, template: MLP, frozen: Int) -> MLP {
        MLP(spec: template.spec, parameters: Array(model.parameters[frozen...]))
    }

    /// The first layer trains in the first experience only.
    func freezeBelow(model: inout MLP, experience: Int) {
        model.trainable = experience == 0 ? nil : (0..<model.parameterCount).map { $0 >= frozenCount }
    }

    /// The first layer's activations of the input rows `x` (the model's current first layer).
    mutating func levelInputs(_ x: [Float], model: MLP) -> [Float] {
        guard var net = below else { return x }
        net.parameters.withUnsafeMutableBufferPointer { p in
            model.parameters.withUnsafeBufferPointer { p.baseAddress!.update(from: $0.baseAddress!, count: p.count) }
        }
        below = net
        let n = x.count / net.spec.inputs, w = net.logitCount
        let ws = net.makeWorkspace(capacity: max(n, 1))
        x.withUnsafeBufferPointer { net.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
        var h = Array(UnsafeBufferPointer(start: ws.logits, count: n * w))
        h.withUnsafeMutableBufferPointer { activation.apply($0.baseAddress!, count: n * w) }
        return h
    }

    /// The replayed first-layer rows through the layers above (the current model's): the
    /// distillation term (hard labels: cross-entropy) over the active classes at weight
    /// (1 − 1/t)/replayed each, its gradient added from `frozenCount` on; the rows join the VAE's.
    mutating func internalReplayTerms(_ input: BatchLossInput, gradient: UnsafeMutablePointer<Float>,
                                      into rows: inout VAERows) -> Double {
        guard replayedRows > 0, var net = above else { return 0 }
        let n = replayedRows, L = net.logitCount, o = frozenCount
        net.parameters.withUnsafeMutableBufferPointer { p in
            input.model.parameters.withUnsafeBufferPointer { p.baseAddress!.update(from: $0.baseAddress! + o, count: p.count) }
        }
        above = net
        let w = mixture().1 / Double(n), T = options.distillation ? options.temperature : 1
        let ws = net.makeWorkspace(capacity: n)
        replayLevel.withUnsafeBufferPointer { net.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
        var dz = [Float](repeating: 0, count: n * L), value = 0.0
        for k in 0..<n {
            let term = FeedbackGenerator.distillation(logits: ws.logits + k * L, targets: replayTargets[k],
                                                      active: input.activeClasses, temperature: T)
            value += w * term.loss
            for c in 0..<L { dz[k * L + c] = Float(w * term.gradient[c]) }
            rows.pi += replayTargets[k].map(Float.init)
            rows.weights.append(Float(w))
        }
        dz.withUnsafeMutableBufferPointer { net.backward(logitGradient: $0.baseAddress!, count: n, route: 0, workspace: ws, gradient: gradient + o) }
        rows.x += replayLevel
        return value
    }
}
