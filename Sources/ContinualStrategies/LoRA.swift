import ContinualCore

/// Low-rank adaptation (LoRA, Hu et al. 2021) with a shared core frozen after an experience.
///
/// `prepare` attaches W + (α/r)·A·B to the chosen dense layers (row-major x·W convention, Hu's
/// B·A transposed), one (A, B) per experience (or per context) while W is shared; B = 0 so a
/// fresh block changes nothing. Core schedule, routes and routing as for `Adapters`.
public struct LoRA: PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options
    var state: RoutedIsolation

    public init(options: Options) {
        self.options = options
        state = RoutedIsolation(routing: options.routing, contextFeature: options.contextFeature,
                                freezeCoreAfter: options.freezeCoreAfter)
    }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        try state.prepare(context: context)
        guard !model.spec.isExtended else { throw TrainingError.invalid("lora: the model already has adapters or LoRA blocks") }
        let layers = try options.layers.resolve(count: model.spec.denseLayerCount,
                                                what: "lora: dense layer (hidden layers, then the output layer)")
        let (copies, stride) = state.extensionLayout(experiences: context.experienceCount)
        var spec = model.spec
        spec.lowRank = layers.map {
            MLPSpec.LowRankSpec(layer: $0, rank: options.rank, alpha: Float(options.alpha), copies: copies, routeStride: stride)
        }
        if let message = spec.validationError() { throw TrainingError.invalid("lora: \(message)") }
        var rng = context.randomSource("lora")
        model = MLP(extending: model, to: spec, rng: &rng)
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        state.beforeExperience(model: &model, context: context)
    }

    public mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        state.adjustTrainingSet(&samples, context: context)
    }

    public mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int,
                                     workspace: Workspace) -> Predictions? {
        state.predictions(model: model, samples: samples, experienceIndex: experienceIndex, workspace: workspace)
    }

    public func report() -> PluginReport {
        var report = PluginReport(attributes: [
            "layers": .string(options.layers.description), "rank": .int(Int64(options.rank)),
            "alpha": .double(options.alpha)])
        state.report(into: &report)
        return report
    }

    /// `{"type": "lora", "layers": "all", "rank": 2, "alpha": 2, "freeze_core_after": 0,
    /// "routing": "task_id", "context_feature": "weekend_tomorrow"}`
    public struct Options: PluginOptions {
        public static let typeName = "lora"
        public static let addsModelExtension = true
        public static let summary = "low-rank weight updates per experience/context on a frozen core (Hu et al. 2021)"

        /// Dense layers (0-based: hidden layers, then the output layer) that get LoRA, or `.all`.
        public var layers: LayerSelection = .all
        public var rank: Int = 2
        /// Scale numerator: the update is (alpha / rank)·A·B.
        public var alpha: Double = 2
        public var freezeCoreAfter: Int = 0
        public var routing: RoutingMode = .taskId
        public var contextFeature: String = "weekend_tomorrow"

        public init() {}

        enum CodingKeys: String, CodingKey, CaseIterable {
            case layers, rank, alpha, freezeCoreAfter = "freeze_core_after", routing
            case contextFeature = "context_feature"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            layers = try c.decode(.layers, default: .all)
            rank = try c.decode(.rank, default: 2)
            alpha = try c.decode(.alpha, default: Double(rank))
            freezeCoreAfter = try c.decode(.freezeCoreAfter, default: 0)
            routing = try c.decodeChoice(.routing, default: .taskId)
            contextFeature = try c.decode(.contextFeature, default: "weekend_tomorrow")
            try c.require((1...4096).contains(rank), .rank, "must be in 1...4096, got \(rank)")
            try c.require(alpha.isFinite && alpha > 0, .alpha, "must be a positive number, got \(alpha)")
            try c.require(freezeCoreAfter >= -1, .freezeCoreAfter, "must be ≥ -1 (-1: the core never trains), got \(freezeCoreAfter)")
            try c.require(!contextFeature.isEmpty, .contextFeature, "must name a feature of the scenario")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(layers, forKey: .layers)
            try c.encode(rank, forKey: .rank)
            try c.encode(alpha, forKey: .alpha)
            try c.encode(freezeCoreAfter, forKey: .freezeCoreAfter)
            try c.encode(routing, forKey: .routing)
            try c.encode(contextFeature, forKey: .contextFeature)
        }

        /// Task-id routing picks the adapter by the evaluated experience's identity.
        public var usesTaskIdentityAtTest: Bool { routing == .taskId }
        /// Task-id routing: the route's network is the evaluated model. Context and entropy routing
        /// choose a route per sample, which one exported route cannot do.
        public var predictionExport: PredictionExport {
            routing == .taskId ? .network
                : .refused("the run routes each sample by \(routing.rawValue) to one of its LoRA update copies; an exported file holds one route's "
                    + "network and would predict differently. Export a run with \"routing\": \"task_id\" (docs/export.md, Routing)")
        }
        public var taskIdentityUse: String {
            "task_id routing picks each experience's LoRA update by its identity (route by \"context\" or \"entropy\" instead)"
        }
        public func makePlugin() -> any StrategyPlugin { LoRA(options: self) }
    }
}

extension LoRA {
    public func checkpointState() -> PluginState { state.checkpointState() }
    /// The added parameters are part of the model (counted in its bytes); routing needs no storage.
    public var resources: PluginResources { .none }
    public mutating func restore(from saved: PluginState) throws { try state.restore(from: saved) }
}
