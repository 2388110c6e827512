/// A multilayer perceptron whose weights and biases live in one contiguous `[Float]`.
///
/// Layers are views (offsets) into `parameters`, and gradients are vectors of the same length,
/// so optimizers, EWC's Fisher, SI's importance and freezing masks are element-wise operations
/// on equal-length vectors. The struct is a value: copying it snapshots the weights.
public struct MLP: Sendable, Equatable {
    public let spec: MLPSpec
    public let layers: [Layer]
    /// All weights and biases, layer after layer, copy after copy (see `Layer`).
    public var parameters: [Float]
    /// `nil`: every parameter trains. Otherwise `trainable[i] == false` freezes parameter i:
    /// optimizers leave it, and its optimizer state, bit-identical. Every assignment (an element's
    /// too) recomputes `frozenPrefix`: edit a copy and assign it once when changing many entries.
    public var trainable: [Bool]? { didSet { frozenPrefix = MLP.frozenPrefix(layers, trainable) } }
    /// Layers from the input up whose every parameter is frozen (0 when `trainable` is nil): a
    /// step whose gradient only the optimizer reads need not back-propagate into them
    /// (`Trainer`: a frozen body under a trained head, FedRep's head epochs).
    public private(set) var frozenPrefix = 0
    /// Every layer dense (no LoRA) with ReLU or no activation: forward and backward then run as one
    /// C call each (`MLP+DenseChain.swift`), same bits.
    let isDenseChain: Bool

    /// A freshly initialised network (see `Initialization` for the draws). Dense layers draw
    /// first, in the plain network's order, so an extended spec's dense weights equal the plain
    /// spec's for the same stream; adapter and LoRA parameters draw afterwards.
    public init(spec: MLPSpec, rng: inout RandomSource) {
        // The weight offsets below come from the spec: a spec with negative or overflowing sizes
        // would write outside `parameters`. Callers that take sizes from users check first
        // (ModelConfig.spec, Trainer); this is the last line.
        precondition(spec.sizeError() == nil, "invalid model: \(spec.sizeError() ?? "")")
        let layers = spec.layers()
        self.spec = spec
        self.layers = layers
        var parameters = [Float](repeating: 0, count: spec.parameterCount)
        parameters.withUnsafeMutableBufferPointer { p in
            for layer in layers where layer.kind == .dense {
                for copy in 0..<layer.copies {
                    let w = p.baseAddress! + layer.weightOffset(route: copy * layer.routeStride)
                    spec.initialization.fill(w, count: layer.inputs * layer.outputs, fanIn: layer.inputs,
                                             fanOut: layer.outputs, activation: layer.activation, rng: &rng)
                    if spec.initialization.drawsBiases {
                        let b = p.baseAddress! + layer.biasRange(route: copy * layer.routeStride).lowerBound
                        spec.initialization.fillUniformFanIn(b, count: layer.outputs, fanIn: layer.inputs, rng: &rng)
                    }
                }
            }
        }
        self.parameters = parameters
        self.trainable = nil
        self.isDenseChain = Self.denseChain(self.layers)
        if spec.isExtended { initializeExtensions(rng: &rng) }
    }

    /// `base`'s plain network extended to `spec` (adapters, LoRA): the plain parameters are
    /// copied unchanged, extension parameters are drawn from `rng` (see `initializeExtensions`).
    public init(extending base: MLP, to spec: MLPSpec, rng: inout RandomSource) {
        precondition(base.spec == spec.plain, "can only extend the plain network of the same shape")
        self.spec = spec
        self.layers = spec.layers()
        var parameters = [Float](repeating: 0, count: spec.parameterCount)
        parameters.replaceSubrange(0..<base.parameterCount, with: base.parameters)
        self.parameters = parameters
        self.trainable = nil
        self.isDenseChain = Self.denseChain(self.layers)
        initializeExtensions(rng: &rng)
    }

    /// Adapters: W_down drawn like a dense layer with the adapter's activation, b_down = 0,
    /// W_up = 0 and b_up = 0, so a fresh adapter is exactly the identity. LoRA: A drawn like a
    /// linear layer of fan-in `inputs`, B = 0, so a fresh update is exactly zero.
    private mutating func initializeExtensions(rng: inout RandomSource) {
        let layers = self.layers
        let initialization = spec.initialization
        parameters.withUnsafeMutableBufferPointer { p in
            for layer in layers {
                guard case .adapter(let r, let act) = layer.kind else { continue }
                for copy in 0..<layer.copies {
                    let o = layer.adapterOffsets(route: copy * layer.routeStride)
                    initialization.fill(p.baseAddress! + o.wDown, count: layer.inputs * r, fanIn: layer.inputs,
                                        fanOut: r, activation: act, rng: &rng)
                    (p.baseAddress! + o.bDown).update(repeating: 0, count: r + r * layer.outputs + layer.outputs)
                }
            }
            for layer in layers {
                guard let lr = layer.lowRank else { continue }
                for copy in 0..<lr.copies {
                    let o = layer.lowRankOffsets(route: copy * lr.routeStride)
                    initialization.fill(p.baseAddress! + o.a, count: layer.inputs * lr.rank, fanIn: layer.inputs,
                                        fanOut: lr.rank, activation: .identity, rng: &rng)
                    (p.baseAddress! + o.b).update(repeating: 0, count: lr.rank * layer.outputs)
                }
            }
        }
    }

    /// A network with given parameters (e.g. loaded from a checkpoint).
    public init(spec: MLPSpec, parameters: [Float]) {
        self.spec = spec
        self.layers = spec.layers()
        precondition(parameters.count == spec.parameterCount, "parameter count does not match the spec")
        self.parameters = parameters
        self.trainable = nil
        self.isDenseChain = Self.denseChain(self.layers)
    }

    public var parameterCount: Int { parameters.count }
    public var inputCount: Int { spec.inputs }
    public var logitCount: Int { spec.head.logitCount }
    /// Number of routes the model distinguishes (heads, adapter and LoRA copies × route stride).
    /// (A loop, not `layers.map(...).max()`: the training loop asks every step, and the array
    /// that built was an allocation per step.)
    public var routeCount: Int {
        var n = 1
        for l in layers {
            n = max(n, l.copies == 1 ? 1 : l.copies * l.routeStride,
                    l.lowRank.map { $0.copies == 1 ? 1 : $0.copies * $0.routeStride } ?? 1)
        }
        return n
    }

    /// Nil when `route` selects a parameter set of this model (0..<routeCount), else a message.
    public func routeError(_ route: Int) -> String? {
        let n = routeCount
        return route >= 0 && route < n ? nil : "route \(route) is out of range 0..<\(n) (the model has \(n) routes)"
    }

    /// Parameters that an optimizer may change.
    public var trainableCount: Int { trainable.map { $0.lazy.filter { $0 }.count } ?? parameters.count }

    /// A scratch workspace sized for this network.
    public func makeWorkspace(capacity: Int = 256) -> Workspace {
        Workspace(layers: layers, capacity: capacity)
    }

    // MARK: forward / backward

    /// Runs `count` samples (row-major [count × inputs]) through the copy set of `route`; the
    /// logits are then in `workspace.logits` ([count × logitCount]). `gates` multiply the
    /// outputs of the layers they cover after the activation (see `UnitGates`).
    public func forward(_ input: UnsafePointer<Float>, count: Int, route: Int, workspace ws: Workspace,
                        gates: UnitGates? = nil) {
        ws.reserve(rows: count)
        ws.activation(0).update(from: input, count: count * spec.inputs)
        if gates == nil && isDenseChain && ws.layerCount == layers.count {
            return denseChainForward(count: count, route: route, workspace: ws)
        }
        parameters.withUnsafeBufferPointer { p in
            let base = p.baseAddress!
            for l in layers.indices {
                forwardLayer(l, route: route, base: base, count: count, workspace: ws)
                applyGates(gates, layer: l, outputs: ws.activation(l + 1), count: count, workspace: ws)
            }
        }
    }

    /// Back-propagates `logitGradient` ([count × logitCount], consumed as scratch) through the
    /// activations of the last `forward` and *adds* ∂/∂θ into `gradient` (length `parameterCount`).
    /// With the forward pass's `gates`, also adds ∂L/∂g into `gateGradient` (laid out like
    /// `gates.values`) when given. With `inputGradient` ([count × inputs]), also *writes*
    /// ∂L/∂input there (a network fed by another one: a generator's decoder fed by its latent code).
    /// `skippingFrozen`: stop at `frozenPrefix` (its layers' gradient entries stay as they were)
    /// when the network runs as a dense chain — for a caller whose gradient only the optimizer
    /// reads, which leaves frozen entries alone.
    public func backward(logitGradient: UnsafeMutablePointer<Float>, count: Int, route: Int,
                         workspace ws: Workspace, gradient: UnsafeMutablePointer<Float>,
                         gates: UnitGates? = nil, gateGradient: UnsafeMutablePointer<Float>? = nil,
                         inputGradient: UnsafeMutablePointer<Float>? = nil, skippingFrozen: Bool = false) {
        if gates == nil && isDenseChain && ws.layerCount == layers.count {
            return denseChainBackward(logitGradient: logitGradient, count: count, route: route, workspace: ws,
                                      gradient: gradient, inputGradient: inputGradient,
                                      from: skippingFrozen ? frozenPrefix : 0)
        }
        parameters.withUnsafeBufferPointer { p in
            let base = p.baseAddress!
            var (bufA, bufB) = ws.deltas
            var delta = logitGradient
            for l in stride(from: layers.count - 1, through: 0, by: -1) {
                let layer = layers[l]
                let y = ungateBackward(gates, layer: l, outputs: UnsafePointer(ws.activation(l + 1)), delta: delta,
                                       count: count, workspace: ws, gateGradient: gateGradient)
                layer.activation.backward(outputs: y, gradient: delta, count: count &* layer.outputs)
                backwardLayer(l, route: route, base: base, delta: delta, dx: l > 0 ? bufA : inputGradient, adapterDX: bufA,
                              count: count, workspace: ws, gradient: gradient)
                if l > 0 {
                    delta = bufA
                    swap(&bufA, &bufB)
                }
            }
        }
    }

    /// Forward, loss and backward for one batch. Adds `scale` × ∂(Σ losses)/∂θ into `gradient`
    /// (pass `scale = 1/B` for the mean loss of a batch of B) and returns the *sum* of the
    /// per-sample losses in float64.
    @discardableResult
    public func lossAndGradient(features: UnsafePointer<Float>, labels: UnsafePointer<Int32>, count: Int,
                                route: Int, scale: Float, workspace ws: Workspace,
                                gradient: UnsafeMutablePointer<Float>, active: UnsafePointer<Bool>? = nil,
                                skippingFrozen: Bool = false) -> Double {
        guard count > 0 else { return 0 }
        forward(features, count: count, route: route, workspace: ws)
        let loss = Loss.lossAndLogitGradient(head: spec.head, logits: ws.logits, labels: labels, count: count,
                                             scale: scale, active: active)
        backward(logitGradient: ws.logits, count: count, route: route, workspace: ws, gradient: gradient,
                 skippingFrozen: skippingFrozen)
        return loss
    }

    /// Predicted class of each of `count` samples.
    public func predict(_ input: UnsafePointer<Float>, count: Int, route: Int, workspace ws: Workspace,
                        into predictions: UnsafeMutablePointer<Int32>, active: UnsafePointer<Bool>? = nil) {
        forward(input, count: count, route: route, workspace: ws)
        Loss.predictions(head: spec.head, logits: ws.logits, count: count, into: predictions, active: active)
    }

    /// Fraction of `samples` classified correctly through `route`, evaluated in chunks of the
    /// workspace capacity. An empty set has accuracy NaN (undefined, not 0).
    public func accuracy(on samples: Samples, route: Int, workspace ws: Workspace, active: [Bool]? = nil) -> Double {
        let n = samples.count
        guard n > 0 else { return .nan }
        let chunk = max(ws.capacity, 1)
        var predictions = [Int32](repeating: 0, count: chunk)
        var correct = 0
        samples.features.withUnsafeBufferPointer { xs in
            samples.labels.withUnsafeBufferPointer { ys in
                predictions.withUnsafeMutableBufferPointer { pr in
                    var start = 0
                    while start < n {
                        let m = min(chunk, n - start)
                        if let active {
                            active.withUnsafeBufferPointer { a in
                                predict(xs.baseAddress! + start * samples.dimension, count: m, route: route,
                                        workspace: ws, into: pr.baseAddress!, active: a.baseAddress!)
                            }
                        } else {
                            predict(xs.baseAddress! + start * samples.dimension, count: m, route: route,
                                    workspace: ws, into: pr.baseAddress!)
                        }
                        for i in 0..<m where pr[i] == ys[start + i] { correct += 1 }
                        start += m
                    }
                }
            }
        }
        return Double(correct) / Double(n)
    }
}
