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
    /// The population's users as clients of a federated simulation (needs `population`); see
    /// FederationConfig. Written to the resolved config only when given.
    public var federation: FederationConfig? = nil
    /// Few-shot initialisation over the population's users (needs `population`); see
    /// FewShotConfig. Written to the resolved config only when given.
    public var fewShot: FewShotConfig? = nil
    /// Poisoning of the user's own training stream (label flips, a backdoor trigger); see
    /// StreamPoisoning. Written to the resolved config only when given.
    public var poisoning: StreamPoisoning? = nil
    // Device realism (docs/on-device.md); each is written to the resolved config only when given,
    // so configs without them keep their run ids.
    /// Energy profile and device-state generator (absent = phone_npu_2023, overnight user).
    public var device: DeviceConfig?
    /// Training schedule (absent = train every experience, no prequential view).
    public var schedule: ScheduleConfig?
    /// Also evaluate the final model in int8.
    public var quantization: QuantizationConfig?
    /// Permits task identity at test time (multi-head models, task-id routing) in a scenario that
    /// is not task-incremental: a deliberate, recorded choice (`"allow_task_labels": true`).
    /// Written to the resolved config only when true.
    public var allowTaskLabels = false
    /// Primary measure and stored predictions (see `MetricsConfig`).
    public var metrics = MetricsConfig()
    /// Evaluate on a validation split carved from the training data instead of the test sets
    /// (hyperparameter selection, `"tune"`); see `ValidationSplit`. Written only when given.
    public var validationSplit: ValidationSplit? = nil

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, seed, scenario, model, optimizer, training, strategy, population, federation
        case device, schedule, quantization
        case allowTaskLabels = "allow_task_labels"
        case metrics
        case fewShot = "few_shot"
        case poisoning
        case validationSplit = "validation_split"
    }

    /// Whether the run predicts with the experience's identity at test time: a multi-head model
    /// (each experience evaluated through its own head) or a plugin routing by task id.
    public var usesTaskLabels: Bool { model.multiHead || strategy.contains { $0.options.usesTaskIdentityAtTest } }

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
        federation = try c.decodeIfPresent(FederationConfig.self, forKey: .federation)
        fewShot = try c.decodeIfPresent(FewShotConfig.self, forKey: .fewShot)
        poisoning = try c.decodeIfPresent(StreamPoisoning.self, forKey: .poisoning)
        allowTaskLabels = try c.decode(.allowTaskLabels, default: false)
        metrics = try c.decode(.metrics, default: MetricsConfig())
        validationSplit = try c.decodeIfPresent(ValidationSplit.self, forKey: .validationSplit)
        try c.require(schedule == nil || !model.multiHead, .schedule, "a schedule needs a single-head model (sessions have no task id)")
        try c.require(schedule == nil || (training.mode == .batch && population == nil), .schedule,
                      "a schedule cannot be combined with training.mode \"prequential\" or a population (it is prequential by itself)")
        // Issue 24: continual evaluation observes the batch loop; a federation's clients have their own budget.
        if metrics.continualEvalEvery != nil && (training.mode != .batch || schedule != nil || population != nil || federation != nil) {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath + ["metrics", "continual_eval_every"].map(AnyCodingKey.init),
                debugDescription: "applies to batch runs (training.mode \"batch\") without a schedule, population or federation"))
        }
        if training.stepsPerExperience != nil && federation != nil {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath + ["training", "steps_per_experience"].map(AnyCodingKey.init),
                debugDescription: "a federation's clients train \"federation.local_epochs\" / \"local_steps\" per round; remove it"))
        }
        if let layers = device?.checkpointLayers, let bad = layers.first(where: { $0 >= model.hidden.count }) {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath + ["device", "checkpoint_layers"].map(AnyCodingKey.init),
                debugDescription: "hidden layer \(bad) does not exist: model.hidden has \(model.hidden.count) layers (indices 0..<\(model.hidden.count))"))
        }
        if training.precision.isMixed,
           let own = strategy.first(where: { ["hat", "pnn"].contains($0.typeName) }) {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath + ["training", "precision"].map(AnyCodingKey.init),
                debugDescription: "a 16-bit precision is not emulated for \"\(own.typeName)\", which runs its own forward pass; use \"float32\""))
        }
        if training.precision.isMixed && (training.mode != .batch || federation != nil || population != nil) {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath + ["training", "precision"].map(AnyCodingKey.init),
                debugDescription: "a 16-bit precision is emulated for batch runs (with or without a schedule), not prequential, population or federated runs; use \"float32\""))
        }
        if let problem = consistencyProblem() {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath + problem.path.map(AnyCodingKey.init),
                                                    debugDescription: problem.message))
        }
    }

    /// Every section; optional ones and `allow_task_labels` only when set, so configs without them
    /// keep their canonical JSON (and run ids).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(seed, forKey: .seed)
        try c.encode(scenario, forKey: .scenario)
        try c.encode(model, forKey: .model)
        try c.encode(optimizer, forKey: .optimizer)
        try c.encode(training, forKey: .training)
        try c.encode(strategy, forKey: .strategy)
        try c.encodeIfPresent(population, forKey: .population)
        try c.encodeIfPresent(federation, forKey: .federation)
        try c.encodeIfPresent(fewShot, forKey: .fewShot)
        try c.encodeIfPresent(poisoning, forKey: .poisoning)
        try c.encodeIfPresent(device, forKey: .device)
        try c.encodeIfPresent(schedule, forKey: .schedule)
        try c.encodeIfPresent(quantization, forKey: .quantization)
        if allowTaskLabels { try c.encode(true, forKey: .allowTaskLabels) }
        if !metrics.isDefault { try c.encode(metrics, forKey: .metrics) }
        try c.encodeIfPresent(validationSplit, forKey: .validationSplit)
    }

    /// A combination of sections that cannot give the numbers the results would claim, as the key
    /// path (from the run config) and the reason; nil if the config is consistent. Checked when
    /// decoding and again by `RunExecutor` (for configs built in code).
    public func consistencyProblem() -> (path: [String], message: String)? {
        if let problem = compositionProblem() { return (["strategy"], problem) }
        if scenario.options.providesTaskIdentity, scenario.options is SplitDigitsScenario || scenario.options is PermutedDigitsScenario,
           !model.multiHead {
            return (["model", "multi_head"], "\(scenario.typeName) \"setting\": \"task\" needs \"multi_head\": true (one head per "
                + "experience); with one shared head it is the domain setting (use \"setting\": \"domain\")")
        }
        if usesTaskLabels && !scenario.options.providesTaskIdentity && !allowTaskLabels {
            let multi = model.multiHead
            let user = strategy.firstIndex { $0.options.usesTaskIdentityAtTest }
            return (multi ? ["model", "multi_head"] : ["strategy"],
                    (multi ? "a multi-head model evaluates each experience through its own head"
                           : user.map { strategy[$0].options.taskIdentityUse } ?? "the strategy uses the task label")
                    + ", which needs the task label at test time; scenario \"\(scenario.typeName)\" is not task-incremental "
                    + "(its test samples carry no task identity), so the accuracy would be inflated. Set \"allow_task_labels\": true "
                    + "to study the task-aware setting deliberately (it is recorded as uses_task_labels)")
        }
        if let problem = federationProblem() { return problem }
        if let problem = fewShotProblem() { return problem }
        if poisoning != nil {
            for (key, present) in [("population", population != nil), ("federation", federation != nil),
                                   ("few_shot", fewShot != nil)] where present {
                return ([key], "\"poisoning\" corrupts one user's own stream in a single-stream run (batch, prequential or scheduled); "
                    + "it does not combine with \"\(key)\" yet")
            }
        }
        if validationSplit != nil && fewShot != nil {
            return (["few_shot"], "\"validation_split\" carves a validation set from each stream's training data; "
                + "a few-shot run's support and query sets are drawn by \"few_shot\" itself, so the two do not combine")
        }
        if let population, population.users > 1, let generator = scenario.options as? any PopulationScenario,
           let problem = generator.populationProblem() {
            return (["scenario", problem.key], problem.message)
        }
        return nil
    }

    /// A federation that cannot run with the rest of the config (key path from the run config and
    /// the reason), or nil.
    func federationProblem() -> (path: [String], message: String)? {
        guard let federation else { return nil }
        if population == nil {
            return (["federation"], "a federation's clients are a population's users: add \"population\": {\"users\": N}")
        }
        if schedule != nil {
            return (["schedule"], "a federation has its own timing (rounds gated by \"federation.availability\"); remove \"schedule\"")
        }
        if training.mode != .batch {
            return (["training", "mode"], "federated local rounds are batch passes over the data since the client's last round; use \"batch\"")
        }
        if model.multiHead {
            return (["model", "multi_head"], "federated clients train one shared head (a local round has no task id)")
        }
        if training.options.activeOutputs == .seen {
            return (["training", "active_outputs"], "a local round does not know which classes the client has seen; use \"all\"")
        }
        for s in strategy {
            guard case .alone(let reason) = type(of: s.options).composition else { continue }
            return (["strategy"], "\"\(s.typeName)\" is a whole method (\(reason)), which is not a local round; "
                + "use a strategy that trains incrementally (naive, replay, ewc, si, lwf, adapters, lora, …)")
        }
        if federation.personal == .pfedme, let other = strategy.first(where: { !($0.options is Naive.Options) }) {
            return (["strategy"], "pFedMe's local round is its own bi-level loop (PFedMeRound), which runs no strategy plugin; "
                + "\"\(other.typeName)\" would be ignored: use [\"naive\"]")
        }
        if federation.personal == .perFedAvg, let other = strategy.first(where: { !($0.options is Naive.Options) }) {
            return (["strategy"], "Per-FedAvg's local round is its own meta-step loop (PerFedAvgRound), which runs no strategy plugin; "
                + "\"\(other.typeName)\" would be ignored: use [\"naive\"]")
        }
        if federation.share == .adapters && !strategy.contains(where: { type(of: $0.options).addsModelExtension }) {
            return (["federation", "share"], "\"adapters\" shares adapter and LoRA parameters: add an \"adapters\" or \"lora\" plugin to the strategy")
        }
        if let k = federation.clientsPerRound, let n = population?.users, k > n {
            return (["federation", "clients_per_round"], "\(k) clients per round, but the population has \(n) users")
        }
        if let problem = federation.aggregationProblem(clients: population?.users ?? 0, optimizer: optimizer.spec) {
            return (["federation", problem.key], problem.message)
        }
        if let schedule = training.learningRateSchedule, !schedule.isConstant, let rule = federation.constantRateRule {
            return (["training", "lr_schedule"], "\(rule) assumes one local learning rate η for every step; "
                + "a schedule changes η within the round: remove \"lr_schedule\"")
        }
        if federation.localData == .experience, let problem = federation.byExperienceProblem(strategy: strategy) {
            return problem
        }
        if federation.evaluateClients > (population?.users ?? 0) {
            return (["federation", "evaluate_clients"], "\(federation.evaluateClients) clients, but the population has \(population?.users ?? 0) users")
        }
        return nil
    }

    /// A few-shot run that cannot run with the rest of the config (key path and reason), or nil.
    func fewShotProblem() -> (path: [String], message: String)? {
        guard let fewShot else { return nil }
        guard let population else {
            return (["few_shot"], "few-shot initialisation meta-learns over a population's users: add \"population\": {\"users\": N}")
        }
        if fewShot.heldOutUsers >= population.users {
            return (["few_shot", "held_out_users"], "\(fewShot.heldOutUsers) held-out users leave no training user in a population of "
                + "\(population.users); use at most \(population.users - 1)")
        }
        if federation != nil { return (["federation"], "a few-shot run has its own meta-training loop; remove \"federation\"") }
        if schedule != nil { return (["schedule"], "a few-shot run has no device schedule; remove \"schedule\"") }
        if training.mode != .batch {
            return (["training", "mode"], "few-shot runs train by SGD steps on support sets; use \"batch\"")
        }
        if model.multiHead { return (["model", "multi_head"], "few-shot personalisation trains one shared head") }
        if let other = strategy.first(where: { $0.typeName != "naive" }) {
            return (["strategy"], "few-shot meta-training and personalisation are plain SGD steps (MetaInitialisation), which run "
                + "no strategy plugin; \"\(other.typeName)\" would be ignored: use [\"naive\"]")
        }
        return nil
    }

    /// A strategy list whose plugins cannot be combined (`PluginComposition`), or nil.
    func compositionProblem() -> String? {
        PluginComposition.problem(in: strategy.map { type(of: $0.options) })
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
