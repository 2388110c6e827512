import ContinualCore

/// The route options adapters and LoRA share: which route (copy of the added parameters) a
/// sample takes, and until when the shared core trains. Decoded from the method's own object
/// (`{"type": "lora", "rank": 2, "routing": "context", ...}`), checked and encoded here once.
public struct RouteOptions: Codable, Sendable, Equatable {
    /// `freeze_core_after`: last experience on which the shared core trains (-1: never; default 0).
    public var freezeCoreAfter = 0
    /// `routing` (default `task_id`).
    public var routing: RoutingMode = .taskId
    /// `context_feature`: the feature that selects the copy when `routing` is `context`
    /// (thresholded at 0.5).
    public var contextFeature = "weekend_tomorrow"

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case freezeCoreAfter = "freeze_core_after", routing, contextFeature = "context_feature"
    }

    /// The keys, for the method's strict container to allow.
    static var keys: Set<String> { Set(CodingKeys.allCases.map(\.stringValue)) }

    /// Reads the route keys of the method's object (its strict container has refused others).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        freezeCoreAfter = try c.decode(.freezeCoreAfter, default: 0)
        routing = try c.decodeChoice(.routing, default: .taskId)
        contextFeature = try c.decode(.contextFeature, default: "weekend_tomorrow")
        try c.require(freezeCoreAfter >= -1, .freezeCoreAfter, "must be ≥ -1 (-1: the core never trains), got \(freezeCoreAfter)")
        try c.require(!contextFeature.isEmpty, .contextFeature, "must name a feature of the scenario")
    }

    /// Writes the route keys into the method's object.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(freezeCoreAfter, forKey: .freezeCoreAfter)
        try c.encode(routing, forKey: .routing)
        try c.encode(contextFeature, forKey: .contextFeature)
    }
}

/// The options of a method with one copy of its added parameters per route: its `route`, and
/// what one copy is called in messages.
public protocol RoutedCopiesOptions: PluginOptions {
    var route: RouteOptions { get set }
    /// What one route's copy is called ("adapter", "LoRA update").
    static var copyName: String { get }
}

extension RoutedCopiesOptions {
    /// The copies are blocks added to the model.
    public static var addsModelExtension: Bool { true }

    public var freezeCoreAfter: Int {
        get { route.freezeCoreAfter }
        set { route.freezeCoreAfter = newValue }
    }
    public var routing: RoutingMode {
        get { route.routing }
        set { route.routing = newValue }
    }
    public var contextFeature: String {
        get { route.contextFeature }
        set { route.contextFeature = newValue }
    }

    /// Task-id routing picks the copy by the evaluated experience's identity.
    public var usesTaskIdentityAtTest: Bool { routing == .taskId }
    /// Task-id routing: the route's network is the evaluated model. Context and entropy routing
    /// choose a route per sample, which one exported route cannot do.
    public var predictionExport: PredictionExport {
        routing == .taskId ? .network
            : .refused("the run routes each sample by \(routing.rawValue) to one of its \(Self.copyName) copies; an exported file holds one route's "
                + "network and would predict differently. Export a run with \"routing\": \"task_id\" (docs/export.md, Routing)")
    }
    public var taskIdentityUse: String {
        "task_id routing picks each experience's \(Self.copyName) by its identity (route by \"context\" or \"entropy\" instead)"
    }
}
