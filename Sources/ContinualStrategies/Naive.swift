import ContinualCore

/// Plain fine-tuning: train on each experience in turn and nothing else (the lower bound).
public struct Naive: StrategyPlugin {
    public var name: String { Options.typeName }
    public init() {}

    /// Stateless: nothing to save (checkpoints).
    public func checkpointState() -> PluginState { PluginState() }
    public var resources: PluginResources { .none }
    public mutating func restore(from state: PluginState) throws {}

    /// `{"type": "naive"}` — no options.
    public struct Options: PluginOptions {
        public static let typeName = "naive"
        public static let summary = "fine-tuning on each experience in turn (lower bound)"
        public init() {}
        public init(from decoder: any Decoder) throws {
            _ = try decoder.strictContainer(keyedBy: NoOptionKeys.self, alsoAllowed: ["type"])
        }
        public func encode(to encoder: any Encoder) throws {}
        public func makePlugin() -> any StrategyPlugin { Naive() }
    }
}
