/// The shape of a multilayer perceptron: sizes, activation, output head and number of heads,
/// plus optional parameter-efficient extensions (bottleneck adapters, LoRA updates).
///
/// Layout rule: the plain network's parameters come first, at exactly the offsets the plain
/// spec gives them; extension parameters follow. A plain model's flat vector is therefore a
/// prefix of its extended model's vector, and masks over the plain part keep their meaning.
public struct MLPSpec: Sendable, Equatable, Hashable {
    public var inputs: Int
    public var hidden: [Int]
    public var activation: Activation
    public var head: OutputHead
    /// Output-layer copies: 1 = single head; T = one head per experience (task-incremental).
    public var heads: Int
    public var initialization: Initialization
    /// Bottleneck adapters inserted after hidden layers (empty for a plain MLP).
    public var adapters: [AdapterSpec]
    /// LoRA updates attached to dense layers (empty for a plain MLP).
    public var lowRank: [LowRankSpec]

    /// A bottleneck adapter after hidden layer `after` (0-based), with its own copies per route.
    public struct AdapterSpec: Sendable, Equatable, Hashable {
        public var after: Int
        public var bottleneck: Int
        public var activation: Activation
        public var copies: Int
        public var routeStride: Int
        public init(after: Int, bottleneck: Int, activation: Activation = .relu, copies: Int, routeStride: Int = 1) {
            self.after = after
            self.bottleneck = bottleneck
            self.activation = activation
            self.copies = copies
            self.routeStride = routeStride
        }
    }

    /// A LoRA update on dense layer `layer` (0-based over hidden layers then the output layer).
    public struct LowRankSpec: Sendable, Equatable, Hashable {
        public var layer: Int
        public var rank: Int
        public var alpha: Float
        public var copies: Int
        public var routeStride: Int
        public init(layer: Int, rank: Int, alpha: Float, copies: Int, routeStride: Int = 1) {
            self.layer = layer
            self.rank = rank
            self.alpha = alpha
            self.copies = copies
            self.routeStride = routeStride
        }
    }

    public init(inputs: Int, hidden: [Int], activation: Activation = .relu, head: OutputHead = .binary,
                heads: Int = 1, initialization: Initialization = .auto,
                adapters: [AdapterSpec] = [], lowRank: [LowRankSpec] = []) {
        self.inputs = inputs
        self.hidden = hidden
        self.activation = activation
        self.head = head
        self.heads = heads
        self.initialization = initialization
        self.adapters = adapters
        self.lowRank = lowRank
    }

    /// The same network without adapters and LoRA updates.
    public var plain: MLPSpec {
        MLPSpec(inputs: inputs, hidden: hidden, activation: activation, head: head, heads: heads,
                initialization: initialization)
    }

    /// Whether the spec has adapters or LoRA updates.
    public var isExtended: Bool { !adapters.isEmpty || !lowRank.isEmpty }

    /// Dense layers of the plain network (hidden layers, then the output layer).
    public var denseLayerCount: Int { hidden.count + 1 }

    /// Checks indices and sizes of the extensions; nil when valid, else a message.
    public func validationError() -> String? {
        for a in adapters {
            if !(0..<hidden.count).contains(a.after) { return "adapter after hidden layer \(a.after): the model has \(hidden.count) hidden layers" }
            if a.bottleneck < 1 || a.copies < 1 || a.routeStride < 1 { return "adapter sizes must be ≥ 1" }
        }
        if Set(adapters.map(\.after)).count != adapters.count { return "at most one adapter per hidden layer" }
        for l in lowRank {
            if !(0..<denseLayerCount).contains(l.layer) { return "LoRA on layer \(l.layer): the model has \(denseLayerCount) dense layers" }
            if l.rank < 1 || l.copies < 1 || l.routeStride < 1 { return "LoRA sizes must be ≥ 1" }
        }
        if Set(lowRank.map(\.layer)).count != lowRank.count { return "at most one LoRA update per layer" }
        return nil
    }

    /// The layers in computation order. Plain dense layers keep their plain offsets; adapters
    /// (in order of their hidden layer) and then LoRA blocks (in layer order) are laid out after.
    public func layers() -> [Layer] {
        var dense: [Layer] = []
        var offset = 0
        var width = inputs
        for h in hidden {
            let layer = Layer(inputs: width, outputs: h, activation: activation, copies: 1, offset: offset)
            offset += layer.parameterCount
            dense.append(layer)
            width = h
        }
        dense.append(Layer(inputs: width, outputs: head.logitCount, activation: .identity, copies: heads, offset: offset))
        offset += dense[dense.count - 1].parameterCount
        guard isExtended else { return dense }

        var adapterLayers: [Int: Layer] = [:]
        for a in adapters.sorted(by: { $0.after < $1.after }) {
            let h = hidden[a.after]
            let layer = Layer(kind: .adapter(bottleneck: a.bottleneck, activation: a.activation), inputs: h, outputs: h,
                              activation: .identity, copies: a.copies, offset: offset, routeStride: a.routeStride)
            offset += layer.parameterCount
            adapterLayers[a.after] = layer
        }
        for l in lowRank.sorted(by: { $0.layer < $1.layer }) {
            let d = dense[l.layer]
            dense[l.layer].lowRank = Layer.LowRank(rank: l.rank, scale: l.alpha / Float(l.rank), copies: l.copies,
                                                   routeStride: l.routeStride, offset: offset)
            offset += l.copies * l.rank * (d.inputs + d.outputs)
        }
        var result: [Layer] = []
        for (i, layer) in dense.enumerated() {
            result.append(layer)
            if let a = adapterLayers[i] { result.append(a) }
        }
        return result
    }

    /// Length of the flat parameter vector.
    public var parameterCount: Int {
        layers().reduce(0) { $0 + $1.parameterCount + $1.lowRankParametersPerCopy * ($1.lowRank?.copies ?? 0) }
    }
}
