/// The JSON options of one strategy plugin, and the factory that makes the plugin.
///
/// Each method's file defines one `PluginOptions` type (strict `Codable`, validated in
/// `init(from:)`) next to its plugin; registering the type makes `{"type": typeName, ...}`
/// usable in experiment files.
public protocol PluginOptions: Codable, Sendable, Equatable {
    /// The `"type"` value in JSON, e.g. `"ewc"`.
    static var typeName: String { get }
    /// One line for `--help` and the docs.
    static var summary: String { get }
    /// Builds a fresh plugin for one run.
    func makePlugin() -> any StrategyPlugin
    /// The JSON key of the method's strength, if it has one, whose value 0 makes the method
    /// leave training untouched (EWC's `lambda`, SI's `c`): the conformance suite checks that a
    /// run with strength 0 is bit-identical to naive.
    static var strengthKey: String? { get }
    /// Whether the method uses the experience's identity (a task label) to predict at test time
    /// (adapters routed by task id). Recorded per run; refused in scenarios whose test samples
    /// carry no task identity unless the config allows it explicitly.
    var usesTaskIdentityAtTest: Bool { get }
    /// Whether the method keeps a memory of past samples (rehearsal, projection memories).
    static var storesSamples: Bool { get }
    /// How the method shares a strategy list with others; checked when a config is decoded.
    static var composition: PluginComposition { get }
}

public extension PluginOptions {
    static var strengthKey: String? { nil }
    var usesTaskIdentityAtTest: Bool { false }
    static var storesSamples: Bool { false }
    static var composition: PluginComposition { .free }
}

/// How a method composes with the other plugins of one strategy list.
public enum PluginComposition: Sendable, Equatable {
    /// With any other plugin (the hooks' stated order defines the result).
    case free
    /// Owns the run's sample memory and redefines the loss of the rows it trains on (ER-ACE,
    /// iCaRL): no other plugin that stores samples may be listed with it.
    case soleRehearsal
    /// Is the whole method (GDumb retrains from scratch on its memory): listed alone.
    case alone

    /// Why the strategy list `types` (in order) cannot be combined, or nil when it can: a method
    /// `alone` listed with others, or two methods that store samples beside a `soleRehearsal` one.
    /// Experiment configs and the on-device runtime check strategies with it.
    public static func problem(in types: [any PluginOptions.Type]) -> String? {
        for (i, t) in types.enumerated() {
            switch t.composition {
            case .free: continue
            case .alone where types.count > 1:
                return "\"\(t.typeName)\" is a whole method (it retrains from scratch on its own memory) and must be listed alone; "
                    + "got [" + types.map { $0.typeName }.joined(separator: ", ") + "]"
            case .soleRehearsal:
                let others = types.enumerated().filter { $0.offset != i && $0.element.storesSamples }.map { $0.element.typeName }
                if !others.isEmpty {
                    return "\"\(t.typeName)\" keeps the run's sample memory and redefines the loss of the rows it replays; "
                        + "it cannot be combined with another method that stores samples (" + others.joined(separator: ", ")
                        + "). Regularisers (ewc, si, mas, l2, lwf) combine with it"
                }
            default: continue
            }
        }
        return nil
    }
}

/// The JSON options of one scenario generator, and the factory that makes its stream.
public protocol ScenarioOptions: Codable, Sendable, Equatable {
    static var typeName: String { get }
    static var summary: String { get }
    /// Generates (or loads) the stream; deterministic in `seed`.
    func makeStream(seed: UInt64) throws -> ExperienceStream
    /// Whether the scenario is task-incremental: its test samples come with the experience's
    /// identity, so a method may use it to predict (split digits' "task" setting). Domain- and
    /// class-incremental scenarios (the default) do not give it.
    var providesTaskIdentity: Bool { get }
}

public extension ScenarioOptions {
    var providesTaskIdentity: Bool { false }
}

/// A scenario that cannot be built from its options (bad file, inconsistent sizes).
public struct ScenarioError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
