import ContinualCore

/// Bottleneck adapters (Houlsby et al. 2019) with a shared core frozen after an experience.
///
/// `prepare` inserts h + W_up·act(W_down·h + b_down) + b_up after the chosen hidden layers, one
/// copy per experience (or per context), with W_up = 0 so a fresh adapter is the identity and the
/// dense weights stay exactly the plain initialisation. The core trains while the experience
/// index ≤ `freeze_core_after`; afterwards only the current route's adapters (and its head on
/// multi-head models) train. Test-time routing: see `RoutingMode`.
public struct Adapters: PredictionOverride {
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
        guard !model.spec.isExtended else { throw TrainingError.invalid("adapters: the model already has adapters or LoRA blocks") }
        let layers = try options.layers.resolve(count: model.spec.hidden.count, what: "adapters: hidden layer")
        guard !layers.isEmpty else {
            // Otherwise the core would be frozen with nothing left to train (BWT 0 for no reason).
            throw TrainingError.invalidSetting(path: ".model.hidden", message: "adapters: the model has no hidden layer to put an adapter after (model.hidden is empty)")
        }
        let (copies, stride) = state.extensionLayout(experiences: context.experienceCount)
        var spec = model.spec
        spec.adapters = layers.map {
            MLPSpec.AdapterSpec(after: $0, bottleneck: options.bottleneck, activation: options.activation,
                                copies: copies, routeStride: stride)
        }
        if let message = spec.validationError() { throw TrainingError.invalid("adapters: \(message)") }
        var rng = context.randomSource("adapters")
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
            "layers": .string(options.layers.description), "bottleneck": .int(Int64(options.bottleneck)),
            "activation": .string(options.activation.rawValue)])
        state.report(into: &report)
        return report
    }

    /// `{"type": "adapters", "layers": "all", "bottleneck": 4, "activation": "relu",
    /// "freeze_core_after": 0, "routing": "task_id", "context_feature": "weekend_tomorrow"}`
    public struct Options: PluginOptions {
        public static let typeName = "adapters"
        public static let addsModelExtension = true
        public static let summary = "bottleneck adapters per experience/context on a frozen core (Houlsby et al. 2019)"

        /// Hidden layers (0-based) followed by an adapter, or `.all`.
        public var layers: LayerSelection = .all
        public var bottleneck: Int = 4
        public var activation: Activation = .relu
        /// Last experience on which the shared core trains (-1: never; default 0).
        public var freezeCoreAfter: Int = 0
        public var routing: RoutingMode = .taskId
        /// Feature that selects the adapter when `routing` is `context` (thresholded at 0.5).
        public var contextFeature: String = "weekend_tomorrow"

        public init() {}

        enum CodingKeys: String, CodingKey, CaseIterable {
            case layers, bottleneck, activation, freezeCoreAfter = "freeze_core_after", routing
            case contextFeature = "context_feature"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            layers = try c.decode(.layers, default: .all)
            bottleneck = try c.decode(.bottleneck, default: 4)
            activation = try c.decodeChoice(.activation, default: .relu)
            freezeCoreAfter = try c.decode(.freezeCoreAfter, default: 0)
            routing = try c.decodeChoice(.routing, default: .taskId)
            contextFeature = try c.decode(.contextFeature, default: "weekend_tomorrow")
            try c.require((1...4096).contains(bottleneck), .bottleneck, "must be in 1...4096, got \(bottleneck)")
            try c.require(freezeCoreAfter >= -1, .freezeCoreAfter, "must be ≥ -1 (-1: the core never trains), got \(freezeCoreAfter)")
            try c.require(!contextFeature.isEmpty, .contextFeature, "must name a feature of the scenario")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(layers, forKey: .layers)
            try c.encode(bottleneck, forKey: .bottleneck)
            try c.encode(activation, forKey: .activation)
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
                : .refused("the run routes each sample by \(routing.rawValue) to one of its adapter copies; an exported file holds one route's "
                    + "network and would predict differently. Export a run with \"routing\": \"task_id\" (docs/export.md, Routing)")
        }
        public var taskIdentityUse: String {
            "task_id routing picks each experience's adapter by its identity (route by \"context\" or \"entropy\" instead)"
        }
        public func makePlugin() -> any StrategyPlugin { Adapters(options: self) }
    }
}

extension Adapters {
    public func checkpointState() -> PluginState { state.checkpointState() }
    /// The added parameters are part of the model (counted in its bytes); routing needs no storage.
    public var resources: PluginResources { .none }
    public mutating func restore(from saved: PluginState) throws { try state.restore(from: saved) }
}
