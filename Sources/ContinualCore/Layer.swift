/// One layer of a `Network`: its kind, shape and where its parameters sit in the flat vector.
///
/// `copies > 1` gives the layer one parameter set per *route* (a task or context index): a
/// multi-head output layer is a dense layer with one copy per experience; per-task adapters use
/// the same mechanism. A layer with one copy is shared by every route. A route selects copy
/// `(route / routeStride) % copies`, so two route-dependent parts of one model (a head per
/// experience and an adapter per context) can share one route integer: route = context·T + task.
public struct Layer: Sendable, Equatable {
    /// What the layer computes.
    public enum Kind: Sendable, Equatable {
        /// y = act(x·W + b), W stored [inputs × outputs] row-major, then b.
        case dense
        /// Bottleneck adapter (Houlsby et al. 2019), inputs == outputs == h:
        /// y = x + act(x·W_down + b_down)·W_up + b_up. Per copy: W_down [h × r], b_down [r],
        /// W_up [r × h], b_up [h]. `Layer.activation` is the identity (the residual is not squashed).
        case adapter(bottleneck: Int, activation: Activation)
    }

    /// A LoRA update (Hu et al. 2021) attached to a dense layer: W + scale·A·B, A [inputs × rank],
    /// B [rank × outputs] (our row-major x·W convention, i.e. Hu's B·A transposed), scale = α/r.
    /// W stays shared; (A, B) has its own copies and route stride, stored at `offset`.
    public struct LowRank: Sendable, Equatable {
        public var rank: Int
        public var scale: Float
        public var copies: Int
        public var routeStride: Int
        public var offset: Int
        public init(rank: Int, scale: Float, copies: Int, routeStride: Int = 1, offset: Int) {
            self.rank = rank
            self.scale = scale
            self.copies = copies
            self.routeStride = routeStride
            self.offset = offset
        }
    }

    public var kind: Kind
    public var inputs: Int
    public var outputs: Int
    public var activation: Activation
    /// Parameter sets held by this layer (1 = shared by all routes).
    public var copies: Int
    /// Index in the flat parameter vector of the first parameter of copy 0.
    public var offset: Int
    /// Routes per copy step: copy = (route / routeStride) % copies (1 for heads and task adapters).
    public var routeStride: Int
    /// Optional LoRA update of a dense layer's weights.
    public var lowRank: LowRank?

    public init(kind: Kind = .dense, inputs: Int, outputs: Int, activation: Activation, copies: Int = 1, offset: Int = 0,
                routeStride: Int = 1, lowRank: LowRank? = nil) {
        self.kind = kind
        self.inputs = inputs
        self.outputs = outputs
        self.activation = activation
        self.copies = copies
        self.offset = offset
        self.routeStride = routeStride
        self.lowRank = lowRank
    }

    /// Bottleneck width of an adapter (0 for dense layers).
    public var bottleneck: Int {
        if case .adapter(let r, _) = kind { return r }
        return 0
    }

    /// Parameters of one copy: the weights then the biases (adapters: W_down, b_down, W_up, b_up).
    /// A LoRA attachment is counted separately (`lowRankParametersPerCopy`).
    public var parametersPerCopy: Int {
        switch kind {
        case .dense: return inputs * outputs + outputs
        case .adapter(let r, _): return inputs * r + r + r * outputs + outputs
        }
    }

    /// Parameters of all copies (without a LoRA attachment).
    public var parameterCount: Int { parametersPerCopy * copies }

    /// Parameters of one (A, B) copy of the LoRA attachment (0 without one).
    public var lowRankParametersPerCopy: Int { lowRank.map { $0.rank * (inputs + outputs) } ?? 0 }

    /// Multiply-adds per sample of the forward pass through one copy (LoRA included).
    public var multiplyAddsPerSample: Int {
        let own: Int
        switch kind {
        case .dense: own = inputs * outputs
        case .adapter(let r, _): own = inputs * r + r * outputs
        }
        return own + (lowRank.map { $0.rank * (inputs + outputs) } ?? 0)
    }

    /// Copy index used by `route`.
    @inline(__always)
    public func copyIndex(route: Int) -> Int {
        copies == 1 ? 0 : Layer.wrap(routeStride == 1 ? route : route / routeStride, copies)
    }

    /// `value` modulo `copies` in 0..<copies even for a negative value (Swift's `%` keeps the
    /// sign), so no route, checked or not, can select memory outside the layer's copies. Routes
    /// from data are checked at the API boundary (`Trainer.run`, `MLP.routeError`); this is the
    /// second line of defence, one compare per layer per batch.
    @inline(__always)
    static func wrap(_ value: Int, _ copies: Int) -> Int {
        let m = value % copies
        return m < 0 ? m &+ copies : m
    }

    /// First weight of the copy used by `route` (routes beyond the copies wrap modulo `copies`;
    /// callers validate routes against `copies` up front).
    @inline(__always)
    public func weightOffset(route: Int) -> Int {
        copies == 1 ? offset : offset + copyIndex(route: route) * parametersPerCopy
    }

    /// First bias of the copy used by `route` (dense: b; adapter: b_down, see `adapterOffsets`).
    @inline(__always)
    public func biasOffset(route: Int) -> Int {
        switch kind {
        case .dense: return weightOffset(route: route) + inputs * outputs
        case .adapter(let r, _): return weightOffset(route: route) + inputs * r
        }
    }

    /// Offsets of W_down, b_down, W_up, b_up of an adapter copy.
    @inline(__always)
    public func adapterOffsets(route: Int) -> (wDown: Int, bDown: Int, wUp: Int, bUp: Int) {
        let r = bottleneck
        let w = weightOffset(route: route)
        let bd = w + inputs * r
        let wu = bd + r
        return (w, bd, wu, wu + r * outputs)
    }

    /// Offsets of A and B of the LoRA copy used by `route` (requires `lowRank`).
    @inline(__always)
    public func lowRankOffsets(route: Int) -> (a: Int, b: Int) {
        let lr = lowRank!
        let copy = lr.copies == 1 ? 0 : Layer.wrap(route / lr.routeStride, lr.copies)
        let a = lr.offset + copy * lr.rank * (inputs + outputs)
        return (a, a + inputs * lr.rank)
    }

    /// The flat-vector range of the copy used by `route`.
    public func parameterRange(route: Int) -> Range<Int> {
        let start = weightOffset(route: route)
        return start..<(start + parametersPerCopy)
    }

    /// The flat-vector range of the LoRA copy used by `route` (empty without LoRA).
    public func lowRankRange(route: Int) -> Range<Int> {
        guard lowRank != nil else { return 0..<0 }
        let a = lowRankOffsets(route: route).a
        return a..<(a + lowRankParametersPerCopy)
    }

    /// The flat-vector ranges of the biases of the copy used by `route` (adapters have two).
    public func biasRanges(route: Int) -> [Range<Int>] {
        switch kind {
        case .dense: return [biasRange(route: route)]
        case .adapter(let r, _):
            let o = adapterOffsets(route: route)
            return [o.bDown..<(o.bDown + r), o.bUp..<(o.bUp + outputs)]
        }
    }

    /// The flat-vector range of the biases of the copy used by `route` (dense: b; adapter: b_down).
    public func biasRange(route: Int) -> Range<Int> {
        let start = biasOffset(route: route)
        return start..<(start + (bottleneck > 0 ? bottleneck : outputs))
    }
}
