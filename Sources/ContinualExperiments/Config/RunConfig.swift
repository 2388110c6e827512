import Foundation
import ContinualCore
import ContinualScenarios

/// One fully resolved run: everything that determines its numbers. Its canonical JSON (sorted
/// keys, every default filled in) is written to the results and hashed into the run id.
public struct RunConfig: Codable, Sendable, Equatable {
    public var name: String
    public var seed: UInt64
    public var scenario: ScenarioSpec
    public var model: ModelConfig
    public var optimizer: OptimizerConfig
    public var training: TrainingConfig
    public var strategy: [StrategySpec]
    /// One model per simulated user (nil = a single stream); see PopulationConfig.
    public var population: PopulationConfig? = nil
    // Device realism (the README's On-device realism section); each is written to the resolved config only when given,
    // so configs without them keep their run ids.
    /// Energy profile and device-state generator (absent = phone_npu_2023, overnight user).
    public var device: DeviceConfig?
    /// Training schedule (absent = train every experience, no prequential view).
    public var schedule: ScheduleConfig?
    /// Also evaluate the final model in int8.
    public var quantization: QuantizationConfig?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, seed, scenario, model, optimizer, training, strategy, population
        case device, schedule, quantization
    }

    public init(name: String, seed: UInt64, scenario: ScenarioSpec, model: ModelConfig = ModelConfig(),
                optimizer: OptimizerConfig = OptimizerConfig(), training: TrainingConfig = TrainingConfig(),
                strategy: [StrategySpec]) {
        self.name = name
        self.seed = seed
        self.scenario = scenario
        self.model = model
        self.optimizer = optimizer
        self.training = training
        self.strategy = strategy
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        name = try c.decode(.name, default: "run")
        seed = try c.decode(.seed, default: 0)
        scenario = try c.decode(ScenarioSpec.self, forKey: .scenario)
        model = try c.decode(.model, default: ModelConfig())
        optimizer = try c.decode(.optimizer, default: OptimizerConfig())
        training = try c.decode(.training, default: TrainingConfig())
        strategy = try c.decode(.strategy, default: [StrategySpec(NaiveOptionsShim.make())])
        device = try c.decodeIfPresent(DeviceConfig.self, forKey: .device)
        schedule = try c.decodeIfPresent(ScheduleConfig.self, forKey: .schedule)
        quantization = try c.decodeIfPresent(QuantizationConfig.self, forKey: .quantization)
        try c.require(!strategy.isEmpty, .strategy, "needs at least one plugin (use \"naive\" for plain fine-tuning)")
        population = try c.decodeIfPresent(PopulationConfig.self, forKey: .population)
        try c.require(schedule == nil || !model.multiHead, .schedule, "a schedule needs a single-head model (sessions have no task id)")
        try c.require(schedule == nil || (training.mode == .batch && population == nil), .schedule,
                      "a schedule cannot be combined with training.mode \"prequential\" or a population (it is prequential by itself)")
        if let problem = consistencyProblem() {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath + problem.path.map(AnyCodingKey.init),
                                                    debugDescription: problem.message))
        }
    }

    /// A combination of sections that cannot give the numbers the results would claim, as the key
    /// path (from the run config) and the reason; nil if the config is consistent. Checked when
    /// decoding and again by `RunExecutor` (for configs built in code).
    public func consistencyProblem() -> (path: [String], message: String)? {
        if let split = scenario.options as? SplitDigitsScenario, split.setting == .task, !model.multiHead {
            return (["model", "multi_head"], "split_digits \"setting\": \"task\" needs \"multi_head\": true (one head per "
                + "experience); with one shared head it is the domain setting (use \"setting\": \"domain\")")
        }
        if let population, population.users > 1, let generator = scenario.options as? any PopulationScenario,
           let problem = generator.populationProblem() {
            return (["scenario", problem.key], problem.message)
        }
        return nil
    }

    /// Canonical JSON text (sorted keys, defaults filled in).
    public func canonicalJSON() -> String {
        (try? JSONValue.encodeCanonicalText(self)) ?? "{}"
    }

    /// Stable 16-hex-digit id: FNV-1a 64 of the canonical JSON. Same config ⇒ same id anywhere.
    public var runId: String { StableHash.hex(StableHash.fnv1a64(canonicalJSON())) }

    /// "ewc+replay" style label of the plugin list.
    public var strategyLabel: String { strategy.map(\.typeName).joined(separator: "+") }
}

import ContinualStrategies
enum NaiveOptionsShim {
    static func make() -> any PluginOptions { Naive.Options() }
}

extension JSONValue {
    /// Encodes any value to canonical JSON text (sorted keys).
    static func encodeCanonicalText<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func encodeCanonical<T: Encodable>(_ value: T) throws -> String { try encodeCanonicalText(value) }

    /// Pretty JSON text (sorted keys) for humans.
    static func encodePretty<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
