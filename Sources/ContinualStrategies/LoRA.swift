import ContinualCore

/// Low-rank adaptation (LoRA, Hu et al. 2021) with a shared core frozen after an experience.
///
/// `prepare` attaches W + (α/r)·A·B to the chosen dense layers (row-major x·W convention, Hu's
/// B·A transposed), one (A, B) per experience (or per context) while W is shared; B = 0 so a
/// fresh block changes nothing. Core schedule, routes and routing as for `Adapters`.
public typealias LoRA = RoutedCopies<LoRABlocks>

/// What LoRA adds to the model, and its options.
public enum LoRABlocks: RoutedBlocks {
    /// One (A, B) block per chosen dense layer.
    public static func extend(_ spec: inout MLPSpec, options: Options, copies: Int, stride: Int) throws {
        let layers = try options.layers.resolve(count: spec.denseLayerCount,
                                                what: "lora: dense layer (hidden layers, then the output layer)")
        spec.lowRank = layers.map {
            MLPSpec.LowRankSpec(layer: $0, rank: options.rank, alpha: Float(options.alpha), copies: copies, routeStride: stride)
        }
    }

    public static func attributes(_ options: Options) -> [String: PluginReport.Value] {
        [
            "layers": .string(options.layers.description), "rank": .int(Int64(options.rank)),
            "alpha": .double(options.alpha)]
    }

    /// `{"type": "lora", "layers": "all", "rank": 2, "alpha": 2, "freeze_core_after": 0,
    /// "routing": "task_id", "context_feature": "weekend_tomorrow"}`
    public struct Options: RoutedCopiesOptions {
        public static let typeName = "lora"
        public static let copyName = "LoRA update"
        public static let summary = "low-rank weight updates per experience/context on a frozen core (Hu et al. 2021)"

        /// Dense layers (0-based: hidden layers, then the output layer) that get LoRA, or `.all`.
        public var layers: LayerSelection = .all
        public var rank: Int = 2
        /// Scale numerator: the update is (alpha / rank)·A·B.
        public var alpha: Double = 2
        /// `freeze_core_after`, `routing`, `context_feature` (see `RouteOptions`).
        public var route = RouteOptions()

        public init() {}

        enum CodingKeys: String, CodingKey, CaseIterable { case layers, rank, alpha }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: RouteOptions.keys.union(["type"]))
            layers = try c.decode(.layers, default: .all)
            rank = try c.decode(.rank, default: 2)
            alpha = try c.decode(.alpha, default: Double(rank))
            route = try RouteOptions(from: decoder)
            try c.require((1...4096).contains(rank), .rank, "must be in 1...4096, got \(rank)")
            try c.require(alpha.isFinite && alpha > 0, .alpha, "must be a positive number, got \(alpha)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(layers, forKey: .layers)
            try c.encode(rank, forKey: .rank)
            try c.encode(alpha, forKey: .alpha)
            try route.encode(to: encoder)
        }

        public func makePlugin() -> any StrategyPlugin { LoRA(options: self) }
    }
}
