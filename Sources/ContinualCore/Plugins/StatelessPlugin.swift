/// A plugin that stores nothing between steps and costs nothing extra (it only changes what is
/// trained, or only watches): resources `.none`, an empty checkpoint state, nothing to restore.
///
/// Declaring it is a promise the conformance suite checks (empty state, no resources); a plugin
/// that keeps data must conform to `StrategyPlugin` directly and report what it keeps.
public protocol StatelessPlugin: StrategyPlugin {}

public extension StatelessPlugin {
    var resources: PluginResources { .none }
    func checkpointState() -> PluginState { PluginState() }
    mutating func restore(from state: PluginState) throws {}
}
