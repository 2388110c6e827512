import ContinualCore

/// Low-rank factorisation of dense layers (truncated SVD to rank r, then fine-tuning the
/// factors), `{"type": "low_rank"}`.
///
/// Before experience `start_experience`, every chosen dense layer's weight matrix W
/// [inputs × outputs] (the toolkit's x·W convention) is replaced by U·V with
/// U = U_r·√Σ_r [inputs × r] and V = √Σ_r·V_rᵀ [r × outputs] from W's SVD (Eckart–Young: the
/// best rank-r approximation in Frobenius norm, error √(Σ_{k≥r} σ_k²)). The split puts √σ_k on
/// both sides so both factors start at the same scale and receive gradients of the same size
/// (the all-on-U split `TruncatedSVD.factors` uses would make V's steps σ-times too large).
/// The bias is kept and trains; from then on the factors train in every later experience.
///
/// Storage: `prepare` gives the chosen layers a LoRA-style attachment (scale 1, one copy) that
/// holds U and V; until the factorisation it is exactly 0 and frozen (U = V = 0, trainable
/// mask false), so the run is bit-identical to the dense one up to `start_experience`. At the
/// factorisation W is set to exactly 0 and frozen (the plugin checks after every experience
/// that it stays 0) and U, V become trainable (if W had any trainable entry). The mask the
/// plugins before this one set is kept (ANDed), so list it after mask methods.
///
/// Costs: the run's FLOPs, bytes, energy and peak memory count what ContinualKit's kernels
/// do — the zeroed W still multiplies, so they count the dense layer plus the factors. The
/// report adds what the factorised model costs in a dense runtime that drops W
/// (`model_parameters`, `model_flops_per_prediction`: r·(inputs + outputs) multiply-adds per
/// factorised layer instead of inputs·outputs), beside the dense model's (`dense_*`);
/// `continual export` writes that factorised graph (two MatMuls per layer).
public struct LowRankFactorization: StrategyPlugin {
    public var name: String { Options.typeName }
    public let options: Options
    /// Dense layers (0-based over hidden then output layers) that are factorised, with their ranks.
    public private(set) var layers: [Int] = []
    public private(set) var ranks: [Int] = []
    public private(set) var factorised = false
    var rankAt: [Double] = []
    var parametersAt: [Double] = []
    var flopsAt: [Double] = []
    var errorAt: [Double] = []
    var layerError: [Double] = []
    var layerDiscarded: [Double] = []
    var layerNorm: [Double] = []
    var denseParameters = 0
    var denseFLOPs = 0

    public init(options: Options) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        guard !model.spec.isExtended else {
            throw TrainingError.invalid("low_rank: the model already has adapters or LoRA blocks (factorise a plain model)")
        }
        guard options.startExperience < context.experienceCount else {
            throw TrainingError.invalidOption(key: ".start_experience", message: "must be < \(context.experienceCount) (the stream's experiences), got \(options.startExperience): the model would never be factorised")
        }
        let chosen = try options.layers?.resolve(count: model.spec.denseLayerCount,
                                                 what: "low_rank: dense layer (hidden layers, then the output layer)")
            ?? Array(0..<model.spec.hidden.count)
        guard !chosen.isEmpty else {
            throw TrainingError.invalidOption(key: ".layers", message: "the model has no hidden layer; list the layers to factorise (the output layer is \(model.spec.hidden.count))")
        }
        var ranks: [Int] = []
        for l in chosen {
            let layer = model.layers[l]
            guard layer.copies == 1 else {
                throw TrainingError.invalidOption(key: ".layers", message: "dense layer \(l) has one weight copy per head (multi_head); only shared layers can be factorised")
            }
            let limit = min(layer.inputs, layer.outputs)
            let r = options.rank(limit: limit)
            guard r <= limit else {
                throw TrainingError.invalidOption(key: ".rank", message: "must be ≤ min(inputs, outputs) = \(limit) of dense layer \(l) (\(layer.inputs)×\(layer.outputs)), got \(r)")
            }
            ranks.append(r)
        }
        var spec = model.spec
        spec.lowRank = zip(chosen, ranks).map { MLPSpec.LowRankSpec(layer: $0, rank: $1, alpha: Float($1), copies: 1) }
        if let message = spec.validationError() { throw TrainingError.invalid("low_rank: \(message)") }
        denseParameters = model.parameterCount
        denseFLOPs = model.flopsPerPrediction
        var rng = context.randomSource("low_rank")
        var extended = MLP(extending: model, to: spec, rng: &rng)
        for l in chosen { for i in extended.layers[l].lowRankRange(route: 0) { extended.parameters[i] = 0 } }
        extended.trainable = model.trainable.map { $0 + [Bool](repeating: true, count: extended.parameterCount - model.parameterCount) }
        model = extended
        layers = chosen
        self.ranks = ranks
        layerError = [Double](repeating: .nan, count: chosen.count)
        layerDiscarded = layerError
        layerNorm = layerError
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        var mask = model.trainable ?? [Bool](repeating: true, count: model.parameterCount)
        if !factorised && context.index >= options.startExperience {
            var total = 0.0
            for (n, l) in layers.enumerated() {
                let layer = model.layers[l]
                let w = layer.weightOffset(route: 0)
                let weights = Array(model.parameters[w..<(w + layer.inputs * layer.outputs)])
                let f = Self.factorise(weights, rows: layer.inputs, columns: layer.outputs, rank: ranks[n])
                let o = layer.lowRankOffsets(route: 0)
                model.parameters.replaceSubrange(o.a..<(o.a + f.u.count), with: f.u)
                model.parameters.replaceSubrange(o.b..<(o.b + f.v.count), with: f.v)
                let weightsTrain = mask[w..<(w + weights.count)].contains(true)
                for i in w..<(w + weights.count) { model.parameters[i] = 0 }
                for i in layer.lowRankRange(route: 0) { mask[i] = weightsTrain }
                layerError[n] = f.error
                layerDiscarded[n] = f.discarded
                layerNorm[n] = f.norm
                total += f.error * f.error
            }
            errorAt.append(total.squareRoot())
            factorised = true
        } else {
            errorAt.append(factorised ? 0 : .nan)
        }
        for l in layers {
            let layer = model.layers[l]
            let frozen = factorised ? Array(layer.weightOffset(route: 0)..<(layer.weightOffset(route: 0) + layer.inputs * layer.outputs))
                : Array(layer.lowRankRange(route: 0))
            for i in frozen { mask[i] = false }
        }
        model.trainable = mask
        let cost = LowRankCost(model: model, factorised: factorised)
        rankAt.append(factorised ? Double(ranks.max() ?? 0) : 0)
        parametersAt.append(Double(cost.parameters))
        flopsAt.append(Double(cost.flopsPerPrediction))
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        guard factorised else { return }
        for l in layers {
            let layer = model.layers[l], w = layer.weightOffset(route: 0)
            if let i = (w..<(w + layer.inputs * layer.outputs)).first(where: { model.parameters[$0] != 0 }) {
                throw TrainingError.invalid("low_rank: dense weight \(i) of factorised layer \(l) is \(model.parameters[i]) after experience \(context.index) (a plugin after \"low_rank\" re-enabled it: list low_rank last)")
            }
        }
    }

    /// The balanced rank-r factors of `weights` (row-major rows × columns): U = U_r·√Σ_r
    /// [rows × r], V = √Σ_r·V_rᵀ [r × columns], and in float64 the Frobenius error ‖W − U·V‖ of
    /// the float32 factors as stored, √(Σ_{k≥r} σ_k²) (what Eckart–Young says it is) and ‖W‖.
    public static func factorise(_ weights: [Float], rows: Int, columns: Int, rank r: Int)
        -> (u: [Float], v: [Float], error: Double, discarded: Double, norm: Double) {
        let svd = TruncatedSVD(matrix: weights, rows: rows, columns: columns)
        let n = svd.count
        var u = [Float](repeating: 0, count: rows * r), v = [Float](repeating: 0, count: r * columns)
        for k in 0..<r {
            let s = svd.singularValues[k].squareRoot()
            for i in 0..<rows { u[i * r + k] = Float(svd.u[i * n + k] * s) }
            for j in 0..<columns { v[k * columns + j] = Float(svd.v[j * n + k] * s) }
        }
        var error = 0.0, norm = 0.0
        for i in 0..<rows {
            for j in 0..<columns {
                var p = 0.0
                for k in 0..<r { p += Double(u[i * r + k]) * Double(v[k * columns + j]) }
                let w = Double(weights[i * columns + j])
                error += (w - p) * (w - p)
                norm += w * w
            }
        }
        return (u, v, error.squareRoot(), svd.discardedNorm(rank: r), norm.squareRoot())
    }

    public func report() -> PluginReport {
        PluginReport(
            attributes: [
                "layers": .string(layers.map(String.init).joined(separator: ",")),
                "ranks": .string(ranks.map(String.init).joined(separator: ",")),
                "start_experience": .int(Int64(options.startExperience)),
                "split": .string("U = U_r·sqrt(S_r), V = sqrt(S_r)·V_r^T (x·W convention, W inputs×outputs)"),
                "dense_parameters": .int(Int64(denseParameters)),
                "dense_flops_per_prediction": .int(Int64(denseFLOPs)),
                "reported_costs": .string("the run's costs count the zeroed dense weights as well as the factors (the kernels multiply the zeros); model_* is the factorised model in a dense runtime that drops W, as exported"),
            ],
            arrays: [
                "rank": .init(values: rankAt, attributes: ["meaning": .string("rank of the factorised layers while training each experience (0: still dense)")]),
                "model_parameters": .init(values: parametersAt, attributes: ["meaning": .string("parameters of the model as deployed (factorised layers: r·(in+out)+out)")]),
                "model_flops_per_prediction": .init(values: flopsAt),
                "reconstruction_error": .init(values: errorAt, attributes: ["meaning": .string("‖W − U·V‖_F over the factorised layers at the factorisation (NaN before, 0 after: the factors then are the weights)")]),
                "layer_reconstruction_error": .init(values: layerError),
                "layer_discarded_singular_norm": .init(values: layerDiscarded, attributes: ["meaning": .string("sqrt(sum of the discarded squared singular values): the Eckart–Young error")]),
                "layer_weight_norm": .init(values: layerNorm),
            ])
    }

    public func checkpointState() -> PluginState {
        PluginState(doubles: ["rank": rankAt, "parameters": parametersAt, "flops": flopsAt, "error": errorAt,
                              "layer_error": layerError, "layer_discarded": layerDiscarded, "layer_norm": layerNorm],
                    ints: ["factorised": [factorised ? 1 : 0], "dense": [Int64(denseParameters), Int64(denseFLOPs)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let f = state.ints["factorised"]?.first, let r = state.doubles["rank"] else {
            throw CheckpointError.mismatch("low_rank state is incomplete")
        }
        factorised = f != 0
        rankAt = r
        parametersAt = state.doubles["parameters"] ?? []
        flopsAt = state.doubles["flops"] ?? []
        errorAt = state.doubles["error"] ?? []
        layerError = state.doubles["layer_error"] ?? layerError
        layerDiscarded = state.doubles["layer_discarded"] ?? layerDiscarded
        layerNorm = state.doubles["layer_norm"] ?? layerNorm
    }

    /// The factors are part of the model (counted in its bytes); the plugin keeps a few numbers.
    public var resources: PluginResources { .none }
}

/// Parameters and FLOPs per prediction of a model whose LoRA-attached layers are factorised
/// (W dropped, x·U·V computed as two products), with `MLP.flopsPerPrediction`'s conventions:
/// a factorised layer costs r·(inputs + outputs) + outputs parameters and
/// 2·r·(inputs + outputs) + outputs·(1 + activation) FLOPs. Not yet factorised: the plain model.
public struct LowRankCost: Sendable, Equatable {
    public var parameters: Int
    public var flopsPerPrediction: Int

    public init(model: MLP, factorised: Bool) {
        var params = 0, flops = 0
        for layer in model.layers {
            let head = layer.outputs * (1 + layer.activation.flopsPerUnit)
            if let lr = layer.lowRank, factorised {
                params += lr.rank * (layer.inputs + layer.outputs) + layer.outputs
                flops += 2 * lr.rank * (layer.inputs + layer.outputs) + head
            } else {
                params += layer.parameterCount
                flops += 2 * (layer.multiplyAddsPerSample - layer.lowRankParametersPerCopy) + head
            }
        }
        parameters = params
        flopsPerPrediction = flops
    }
}

extension LowRankFactorization {
    /// `{"type": "low_rank", "rank": 4, "layers": [0], "start_experience": 1}` or
    /// `"rank_fraction": 0.25` (of min(inputs, outputs), rounded up). `layers` defaults to every
    /// hidden layer.
    public struct Options: PluginOptions {
        public static let typeName = "low_rank"
        public static let summary = "truncated-SVD factorisation W ≈ U·V of dense layers before an experience, then fine-tuning U and V"
        /// A fixed rank (nil: `rankFraction`).
        public var rank: Int?
        /// Rank as a fraction of min(inputs, outputs) per layer, rounded up (used when `rank` is nil).
        public var rankFraction: Double
        /// Dense layers (0-based: hidden layers, then the output layer); nil: every hidden layer.
        public var layers: LayerSelection?
        public var startExperience: Int

        public init(rank: Int? = nil, rankFraction: Double = 0.5, layers: LayerSelection? = nil, startExperience: Int = 1) {
            self.rank = rank
            self.rankFraction = rankFraction
            self.layers = layers
            self.startExperience = startExperience
        }

        /// The rank of a layer whose smaller side is `limit`.
        public func rank(limit: Int) -> Int {
            rank ?? max(1, Int((rankFraction * Double(limit)).rounded(.up)))
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case rank, rankFraction = "rank_fraction", layers, startExperience = "start_experience"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            rank = try c.decodeIfPresent(Int.self, forKey: .rank)
            try c.require(rank == nil || !c.contains(.rankFraction), .rankFraction, "give either rank or rank_fraction, not both")
            rankFraction = try c.decode(.rankFraction, default: 0.5)
            layers = try c.decodeIfPresent(LayerSelection.self, forKey: .layers)
            startExperience = try c.decode(.startExperience, default: 1)
            try c.require(rank.map { (1...4096).contains($0) } ?? true, .rank, "must be in 1…4096, got \(rank ?? 0)")
            try c.require(rankFraction > 0 && rankFraction <= 1, .rankFraction, "must be in (0, 1], got \(rankFraction)")
            try c.require(startExperience >= 0, .startExperience, "must be ≥ 0, got \(startExperience)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            if let rank { try c.encode(rank, forKey: .rank) } else { try c.encode(rankFraction, forKey: .rankFraction) }
            try c.encodeIfPresent(layers, forKey: .layers)
            try c.encode(startExperience, forKey: .startExperience)
        }

        public func makePlugin() -> any StrategyPlugin { LowRankFactorization(options: self) }
    }
}
