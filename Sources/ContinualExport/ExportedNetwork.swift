import ContinualCore

/// The inference graph of one route of an `MLP`, in the form both exporters write: a chain of
/// dense stages (LoRA updates merged into their weights) and, where they cannot be merged,
/// bottleneck adapter stages; then the output head.
///
/// LoRA merges exactly: the toolkit computes x·W + scale·(x·A)·B = x·(W + scale·A·B), so the
/// stage's weights are W + scale·A·B (up to float32 rounding, about 1e-7 relative). A layer
/// factorised by `low_rank` (W exactly 0) also keeps its factors (`Dense.factors`), which the
/// ONNX graph multiplies in turn. An adapter
/// y = x + act(x·W_down + b_down)·W_up + b_up is nonlinear in x (its activation sits between the
/// two products), so it is exported as its own nodes (MatMul/Add/activation/MatMul/Add/Add).
public struct ExportedNetwork: Sendable, Equatable {
    /// One stage of the chain.
    public enum Stage: Sendable, Equatable {
        /// y = act(x·W + b); `weights` [inputs × outputs] row-major (the toolkit's layout).
        case dense(Dense)
        /// y = x + act(x·W_down + b_down)·W_up + b_up.
        case adapter(Adapter)
    }

    /// A dense stage.
    public struct Dense: Sendable, Equatable {
        /// Input width.
        public var inputs: Int
        /// Output width.
        public var outputs: Int
        /// [inputs × outputs], row-major: row k holds the weights from input k.
        public var weights: [Float]
        /// [outputs].
        public var bias: [Float]
        /// Applied after the affine map (the identity for the output layer).
        public var activation: Activation
        /// Symmetric int8 weights (`QuantizedMLP`): `weights` then equals q·scale column-wise.
        public var int8: Int8Weights?
        /// A low-rank factorised layer (`low_rank`): `weights` then holds the product U·V and
        /// the ONNX graph computes (x·U)·V + b from the factors.
        public var factors: Factors? = nil
    }

    /// The factors of a factorised dense stage: U [inputs × rank], V [rank × outputs], row-major.
    public struct Factors: Sendable, Equatable {
        public var rank: Int
        public var u: [Float]
        public var v: [Float]
    }

    /// Int8 weights of a dense stage: w[k, j] = q[k, j]·scales[j] (one scale per output channel;
    /// a per-tensor model repeats its scale).
    public struct Int8Weights: Sendable, Equatable {
        /// [inputs × outputs] row-major, in −127…127.
        public var values: [Int8]
        /// [outputs].
        public var scales: [Float]
        /// Whether one scale serves the whole tensor (`QuantizedMLP.Granularity.perTensor`).
        public var perTensor: Bool
    }

    /// An adapter stage (width `width`, bottleneck `bottleneck`).
    public struct Adapter: Sendable, Equatable {
        /// Width h of the hidden layer the adapter follows (its input and output width).
        public var width: Int
        /// Bottleneck width r.
        public var bottleneck: Int
        /// Applied to the bottleneck.
        public var activation: Activation
        /// [width × bottleneck], [bottleneck], [bottleneck × width], [width].
        public var down: [Float]
        /// b_down [r].
        public var downBias: [Float]
        /// W_up [r × h] row-major.
        public var up: [Float]
        /// b_up [h].
        public var upBias: [Float]
    }

    /// Number of input features.
    public var inputs: Int
    /// The output head (binary: one logit; multiclass: one per class).
    public var head: OutputHead
    /// The stages in computation order.
    public var stages: [Stage]
    /// The route (task/context index) whose copies were exported.
    public var route: Int
    /// False for the core only (`core()`): the graph ends at the last hidden layer (and its
    /// adapter), whose activations are the output `embedding`.
    public private(set) var includesHead = true
    /// Whether the dense weights are int8 (`Dense.int8` set on every dense stage).
    public var isQuantized: Bool { stages.contains { if case .dense(let d) = $0 { return d.int8 != nil } else { return false } } }

    /// Why `model` cannot be exported, or nil.
    public static func unsupportedReason(_ model: MLP, route: Int, int8: QuantizedMLP.Granularity?) -> String? {
        if let e = model.routeError(route) { return e }
        if int8 != nil, let reason = QuantizedMLP.unsupportedReason(model) {
            return reason + "; export it in float32, or train without adapters/LoRA to export int8"
        }
        return nil
    }

    /// The graph of `model` through `route`; with `int8`, dense weights are quantised exactly
    /// as `QuantizedMLP` does (plain dense models only, see `unsupportedReason`).
    public init(model: MLP, route: Int, int8: QuantizedMLP.Granularity? = nil) throws {
        if let reason = Self.unsupportedReason(model, route: route, int8: int8) { throw ExportError.unsupported(reason) }
        inputs = model.spec.inputs
        head = model.spec.head
        self.route = route
        let p = model.parameters
        let quantized = int8.map { QuantizedMLP(model, granularity: $0) }
        var stages: [Stage] = []
        var quantizedOffset = 0, scaleOffset = 0
        for layer in model.layers {
            switch layer.kind {
            case .dense:
                let w0 = layer.weightOffset(route: route)
                var w = Array(p[w0..<(w0 + layer.inputs * layer.outputs)])
                let b = Array(p[layer.biasRange(route: route)])
                var factors: Factors? = nil
                if let lr = layer.lowRank {
                    let o = layer.lowRankOffsets(route: route)
                    // A factorised layer (`low_rank`: W exactly 0, the factors carry the layer)
                    // keeps its factors, so the file is as small as the model; LoRA merges.
                    if int8 == nil && w.allSatisfy({ $0 == 0 }) {
                        factors = Factors(rank: lr.rank, u: p[o.a..<(o.a + layer.inputs * lr.rank)].map { lr.scale * $0 },
                                          v: Array(p[o.b..<(o.b + lr.rank * layer.outputs)]))
                    }
                    // W += scale·A·B with A [inputs × rank], B [rank × outputs].
                    for k in 0..<layer.inputs {
                        for r in 0..<lr.rank {
                            let a = lr.scale * p[o.a + k * lr.rank + r]
                            if a == 0 { continue }
                            for j in 0..<layer.outputs { w[k * layer.outputs + j] += a * p[o.b + r * layer.outputs + j] }
                        }
                    }
                }
                var q: Int8Weights? = nil
                if let quantized {
                    // QuantizedMLP stores every copy of every layer in order; pick this route's copy.
                    let copy = layer.copyIndex(route: route)
                    let n = layer.inputs * layer.outputs
                    let values = Array(quantized.weights[(quantizedOffset + copy * n)..<(quantizedOffset + (copy + 1) * n)])
                    let so = scaleOffset + copy * layer.outputs
                    let scales = Array(quantized.scales[so..<(so + layer.outputs)])
                    q = Int8Weights(values: values, scales: scales, perTensor: int8 == .perTensor)
                    for k in 0..<layer.inputs {
                        for j in 0..<layer.outputs { w[k * layer.outputs + j] = Float(values[k * layer.outputs + j]) * scales[j] }
                    }
                    quantizedOffset += layer.copies * n
                    scaleOffset += layer.copies * layer.outputs
                }
                stages.append(.dense(Dense(inputs: layer.inputs, outputs: layer.outputs, weights: w, bias: b,
                                           activation: layer.activation, int8: q, factors: factors)))
            case .adapter(let r, let act):
                let o = layer.adapterOffsets(route: route)
                let h = layer.inputs
                stages.append(.adapter(Adapter(width: h, bottleneck: r, activation: act,
                                               down: Array(p[o.wDown..<(o.wDown + h * r)]), downBias: Array(p[o.bDown..<(o.bDown + r)]),
                                               up: Array(p[o.wUp..<(o.wUp + r * h)]), upBias: Array(p[o.bUp..<(o.bUp + h)]))))
            }
        }
        self.stages = stages
    }

    /// The network without its output layer: a feature extractor whose output is the last
    /// hidden layer's activations (after its adapter, if any), for an app that trains its own
    /// head on top. Throws for a model without hidden layers.
    public func core() throws -> ExportedNetwork {
        guard includesHead else { return self }
        guard let last = stages.lastIndex(where: { if case .dense = $0 { return true } else { return false } }),
              denseStages.count >= 2 else {
            throw ExportError.unsupported("the model has no hidden layer, so it has no core to export (use all parts)")
        }
        var c = self
        c.stages.remove(at: last)
        c.includesHead = false
        return c
    }

    /// Width of the graph's output: logits, or the embedding of a core-only graph.
    public var outputWidth: Int {
        guard let last = stages.last else { return inputs }
        switch last {
        case .dense(let d): return d.outputs
        case .adapter(let a): return a.width
        }
    }

    /// The dense stages in order (hidden layers, then the output layer).
    public var denseStages: [Dense] {
        stages.compactMap { if case .dense(let d) = $0 { return d } else { return nil } }
    }

    /// Logits (or, for a core-only graph, the embedding) of one sample, computed stage by stage in float32 from the exported weights (the
    /// reference the exporters' graphs implement; int8 stages use q·scale).
    public func logits(_ x: [Float]) -> [Float] {
        var h = x
        for stage in stages {
            switch stage {
            case .dense(let d):
                var y = d.bias
                for k in 0..<d.inputs where h[k] != 0 {
                    for j in 0..<d.outputs { y[j] += h[k] * d.weights[k * d.outputs + j] }
                }
                h = y.map { Self.apply(d.activation, $0) }
            case .adapter(let a):
                var u = a.downBias
                for k in 0..<a.width {
                    for r in 0..<a.bottleneck { u[r] += h[k] * a.down[k * a.bottleneck + r] }
                }
                u = u.map { Self.apply(a.activation, $0) }
                var y = h
                for r in 0..<a.bottleneck {
                    for j in 0..<a.width { y[j] += u[r] * a.up[r * a.width + j] }
                }
                for j in 0..<a.width { y[j] += a.upBias[j] }
                h = y
            }
        }
        return h
    }

    static func apply(_ activation: Activation, _ v: Float) -> Float {
        switch activation {
        case .identity: return v
        case .relu: return max(v, 0)
        case .tanh: return _tanhf(v)
        case .sigmoid: return Activation.sigmoid(v)
        }
    }
}

/// Why an export failed.
public enum ExportError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The model or option is not expressible in the target format.
    case unsupported(String)
    /// A file is not what it should be (e.g. not an ONNX model written by this toolkit).
    case invalidFile(String)

    /// The message.
    public var description: String {
        switch self {
        case .unsupported(let m): return m
        case .invalidFile(let m): return m
        }
    }
}
