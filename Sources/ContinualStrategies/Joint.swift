import ContinualCore

/// Trains on the union of all training sets seen so far (the usual upper bound).
///
/// At experience i the training set is train(0) ∪ … ∪ train(i), shuffled together; on
/// multi-head models every sample keeps the route of the experience it came from. Composes with
/// other plugins: those later in the list see the joint set.
public struct Joint: StrategyPlugin {
    public var name: String { Options.typeName }
    public init() {}

    /// Stateless: nothing to save (checkpoints).
    public func checkpointState() -> PluginState { PluginState() }
    /// None stored by the plugin: joint reads earlier experiences from the stream (an upper bound,
    /// not an on-device method).
    public var resources: PluginResources { .none }
    public mutating func restore(from state: PluginState) throws {}

    public mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        var all = Samples(dimension: samples.dimension)
        for e in context.seen.dropLast() {
            all.append(e.train, route: Int32(e.index))
        }
        all.append(samples, route: context.route)
        samples = all
    }

    /// `{"type": "joint"}` — no options.
    public struct Options: PluginOptions {
        public static let typeName = "joint"
        public static let storesSamples = true
        public static let summary = "train on all data seen so far (upper bound)"
        public init() {}
        public init(from decoder: any Decoder) throws {
            _ = try decoder.strictContainer(keyedBy: NoOptionKeys.self, alsoAllowed: ["type"])
        }
        public func encode(to encoder: any Encoder) throws {}
        public func makePlugin() -> any StrategyPlugin { Joint() }
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(trainsOnAllSeenData: true)
        }
    }
}
