import ContinualCore

/// Bottleneck adapters (Houlsby et al. 2019) with a shared core frozen after an experience.
///
/// `prepare` inserts h + W_up·act(W_down·h + b_down) + b_up after the chosen hidden layers, one
/// copy per experience (or per context), with W_up = 0 so a fresh adapter is the identity and the
/// dense weights stay exactly the plain initialisation. The core trains while the experience
/// index ≤ `freeze_core_after`; afterwards only the current route's adapters (and its head on
/// multi-head models) train. Test-time routing: see `RoutingMode`.
public typealias Adapters = RoutedCopies<AdapterBlocks>

/// What Adapters adds to the model, and its options.
public enum AdapterBlocks: RoutedBlocks {
    /// One adapter after each chosen hidden layer.
    public static func extend(_ spec: inout MLPSpec, options: Options, copies: Int, stride: Int) throws {
        let layers = try options.layers.resolve(count: spec.hidden.count, what: "adapters: hidden layer")
        guard !layers.isEmpty else {
            // Otherwise the core would be frozen with nothing left to train (BWT 0 for no reason).
            throw TrainingError.invalidSetting(path: ".model.hidden", message: "adapters: the model has no hidden layer to put an adapter after (model.hidden is empty)")
        }
        spec.adapters = layers.map {
            MLPSpec.AdapterSpec(after: $0, bottleneck: options.bottleneck, activation: options.activation,
                                copies: copies, routeStride: stride)
        }
    }

    public static func attributes(_ options: Options) -> [String: PluginReport.Value] {
        [
            "layers": .string(options.layers.description), "bottleneck": .int(Int64(options.bottleneck)),
            "activation": .string(options.activation.rawValue)]
    }

    /// `{"type": "adapters", "layers": "all", "bottleneck": 4, "activation": "relu",
    /// "freeze_core_after": 0, "routing": "task_id", "context_feature": "weekend_tomorrow"}`
    public struct Options: RoutedCopiesOptions {
        public static let typeName = "adapters"
        public static let copyName = "adapter"
        public static let summary = "bottleneck adapters per experience/context on a frozen core (Houlsby et al. 2019)"

        /// Hidden layers (0-based) followed by an adapter, or `.all`.
        public var layers: LayerSelection = .all
        public var bottleneck: Int = 4
        public var activation: Activation = .relu
        /// `freeze_core_after`, `routing`, `context_feature` (see `RouteOptions`).
        public var route = RouteOptions()

        public init() {}

        enum CodingKeys: String, CodingKey, CaseIterable { case layers, bottleneck, activation }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: RouteOptions.keys.union(["type"]))
            layers = try c.decode(.layers, default: .all)
            bottleneck = try c.decode(.bottleneck, default: 4)
            activation = try c.decodeChoice(.activation, default: .relu)
            route = try RouteOptions(from: decoder)
            try c.require((1...4096).contains(bottleneck), .bottleneck, "must be in 1...4096, got \(bottleneck)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(layers, forKey: .layers)
            try c.encode(bottleneck, forKey: .bottleneck)
            try c.encode(activation, forKey: .activation)
            try route.encode(to: encoder)
        }

        public func makePlugin() -> any StrategyPlugin { Adapters(options: self) }
    }
}
