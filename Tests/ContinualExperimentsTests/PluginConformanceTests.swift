import ContinualCore
import ContinualExperiments
import ContinualStrategies
import Testing

/// Every registered strategy plugin passes the conformance checks (see `PluginConformance`).
@Suite struct PluginConformanceTests {
    static var types: [String] { Registry.strategies.map { $0.typeName } }

    static func type(_ name: String) -> any PluginOptions.Type { Registry.strategy(named: name)! }

    static func make(_ name: String) -> () -> [any StrategyPlugin] {
        let run = try! PluginConformance.parse(strategy: PluginConformance.json(type(name))).get()
        return { run.config.strategy.map { $0.options.makePlugin() } }
    }

    @Test("options JSON round trip; unknown keys name their path", arguments: types)
    func optionsJSON(_ name: String) { #expect(PluginConformance.optionsJSON(Self.type(name)) == []) }

    @Test("checkpoint after every experience resumes bit-identically (batch, prequential, sessions)", arguments: types)
    func checkpoints(_ name: String) { #expect(PluginConformance.checkpointRoundTrip(Self.make(name)) == []) }

    @Test("same seed, same bits", arguments: types)
    func determinism(_ name: String) { #expect(PluginConformance.deterministic(Self.make(name)) == []) }

    @Test("reported resources cover what the plugin keeps", arguments: types)
    func resources(_ name: String) { #expect(PluginConformance.resourcesCoverState(Self.make(name)) == []) }

    @Test("strength 0 is bit-identical to naive", arguments: types)
    func zeroStrength(_ name: String) { #expect(PluginConformance.zeroStrengthIsNaive(Self.type(name)) == []) }

    // MARK: The checks catch broken plugins

    /// Keeps every training sample it sees but reports no bytes.
    struct UnreportedBuffer: StrategyPlugin {
        var name: String { "unreported_buffer" }
        var stored: [Float] = []
        mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
            stored += context.experience.train.features
        }
        var resources: PluginResources { .none }
        func checkpointState() -> PluginState { PluginState(floats: ["stored": stored]) }
        mutating func restore(from state: PluginState) throws { stored = state.floats["stored"] ?? [] }
    }

    /// Counts steps but forgets to save the count, and lets it change training.
    struct ForgetfulCounter: StrategyPlugin, ParameterPenalty {
        var name: String { "forgetful_counter" }
        var steps = 0
        mutating func addPenalty(parameters: UnsafeBufferPointer<Float>, gradient: UnsafeMutableBufferPointer<Float>) -> Double {
            steps += 1
            gradient[0] += Float(steps) * 1e-3
            return 0
        }
        var resources: PluginResources { .none }
        func checkpointState() -> PluginState { PluginState() }
        mutating func restore(from state: PluginState) throws {}
    }

    /// Draws from the system generator instead of a seeded stream.
    struct Unseeded: StatelessPlugin {
        var name: String { "unseeded" }
        mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
            batch.append(features: [Float](repeating: Float.random(in: 0..<1), count: batch.dimension), label: 0,
                         route: 0)
        }
    }

    @Test func aPluginThatStoresSamplesWithoutReportingThemFails() {
        let problems = PluginConformance.resourcesCoverState { [UnreportedBuffer()] }
        #expect(problems.contains { $0.contains("unreported_buffer keeps") })
    }

    @Test func aPluginThatLosesStateInItsCheckpointFails() {
        #expect(!PluginConformance.checkpointRoundTrip { [ForgetfulCounter()] }.isEmpty)
    }

    @Test func aPluginThatDrawsUnseededRandomnessFails() {
        #expect(PluginConformance.deterministic { [Unseeded()] } == ["two runs with the same seed differ"])
    }
}
