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
    /// What the method uses the task label for, for the message that refuses it in scenarios
    /// without task identity ("task_id routing picks each experience's adapter by its identity").
    var taskIdentityUse: String { get }
    /// Whether the method keeps a memory of past samples (rehearsal, projection memories).
    static var storesSamples: Bool { get }
    /// How the method shares a strategy list with others; checked when a config is decoded.
    static var composition: PluginComposition { get }
    /// What the options reserve before any data exist (stored samples, bytes, rows per batch),
    /// each amount with the option key that sets it: the resource estimate (`validate`) calls
    /// this instead of reading option names from JSON.
    func plannedResources(_ shape: PlannedRunShape) -> PlannedResources
    /// Whether `continual export` reproduces the run's evaluated predictions from its network,
    /// or why not. The default: the network does, unless the plugin decides predictions itself
    /// (`PredictionOverride`), which must then state its exported form.
    var predictionExport: PredictionExport { get }
    /// Whether the plugin adds parameters beside the model's own (adapters, LoRA): what a
    /// federation with `share: "adapters"` exchanges.
    static var addsModelExtension: Bool { get }
}

public extension PluginOptions {
    static var strengthKey: String? { nil }
    var usesTaskIdentityAtTest: Bool { false }
    var taskIdentityUse: String { "\(Self.typeName) uses the evaluated experience's identity at test time" }
    static var storesSamples: Bool { false }
    static var composition: PluginComposition { .free }
    static var addsModelExtension: Bool { false }
    func plannedResources(_ shape: PlannedRunShape) -> PlannedResources { PlannedResources() }
    var predictionExport: PredictionExport {
        makePlugin() is any PredictionOverride
            ? .refused("\(Self.typeName) decides predictions itself (a prediction override) and states no exported form")
            : .network
    }
}

/// How an exported network relates to a run's evaluated predictions (`PluginOptions.predictionExport`).
public enum PredictionExport: Sendable, Equatable {
    /// The run's network through the evaluated route predicts exactly what was evaluated.
    case network
    /// The network with the plugin's per-task unit gates on every hidden layer folded into the
    /// next layer's weights (HAT): the gates come from the run's plugin report array of this
    /// name, [tasks × units], units of the hidden layers in order (`MLP.foldingGates`).
    case foldedGates(reportArray: String)
    /// The network with its output layer replaced by a linear classifier on the penultimate
    /// features (SLDA, nearest class mean): weights [width × logits] row-major then biases, from
    /// the run's plugin report array of this name.
    case replacedOutputLayer(reportArray: String)
    /// No exported network reproduces the predictions; the reason, for the user.
    case refused(String)
}

/// The sizes of a planned run, known before its data are generated.
public struct PlannedRunShape: Sendable, Equatable {
    public var experiences: Double
    /// Input features per sample.
    public var dimension: Double
    /// Logits per sample.
    public var outputs: Double
    /// Parameters of the model.
    public var parameters: Double
    public var batchSize: Double

    public init(experiences: Double, dimension: Double, outputs: Double, parameters: Double, batchSize: Double) {
        self.experiences = experiences
        self.dimension = dimension
        self.outputs = outputs
        self.parameters = parameters
        self.batchSize = batchSize
    }

    /// Bytes of one stored sample: features, label and route, and `logits` stored logits.
    public func sampleBytes(logits: Double = 0) -> Double { dimension * 4 + 8 + logits * 4 }
}

/// What a method's options reserve, each amount blamed on the option key that sets it
/// (relative to the method's entry, e.g. ".capacity").
public struct PlannedResources: Sendable, Equatable {
    /// Bytes kept for the whole run.
    public var memory: [Amount] = []
    /// Rows the method appends to every training batch.
    public var extraRowsPerBatch: Double = 0
    /// Work the training loop's passes do not show, in epochs of training passes: once per
    /// experience (EWC's exact Fisher: one batch-1 gradient per sample) and per epoch (a penalty's
    /// gradient). A prior for `continual`'s time estimate, which corrects it from measured runs.
    public var extraPassesPerExperience: Double = 0
    public var extraPassesPerEpoch: Double = 0
    /// Whether each experience trains on every training sample seen so far (joint training) rather
    /// than on the experience's own.
    public var trainsOnAllSeenData = false

    public struct Amount: Sendable, Equatable {
        public var value: Double
        /// The option's key path within the method's entry, e.g. ".capacity".
        public var key: String
        public init(_ value: Double, key: String) {
            self.value = value
            self.key = key
        }
    }

    public init(memory: [Amount] = [], extraRowsPerBatch: Double = 0, extraPassesPerExperience: Double = 0,
                extraPassesPerEpoch: Double = 0, trainsOnAllSeenData: Bool = false) {
        self.memory = memory
        self.extraRowsPerBatch = extraRowsPerBatch
        self.extraPassesPerExperience = extraPassesPerExperience
        self.extraPassesPerEpoch = extraPassesPerEpoch
        self.trainsOnAllSeenData = trainsOnAllSeenData
    }
}

public extension CodingKey {
    /// ".name": the key as a relative JSON key path.
    var path: String { "." + stringValue }
}

/// How a method composes with the other plugins of one strategy list.
public enum PluginComposition: Sendable, Equatable {
    /// With any other plugin (the hooks' stated order defines the result).
    case free
    /// Owns the run's sample memory and redefines the loss of the rows it trains on (ER-ACE,
    /// iCaRL): no other plugin that stores samples may be listed with it.
    case soleRehearsal
    /// Is the whole method: listed alone. `reason` says why, in the method's own terms
    /// ("it retrains from scratch on its own memory").
    case alone(reason: String)

    /// Whether the method must be listed alone.
    public var isAlone: Bool { if case .alone = self { return true } else { return false } }

    /// Why the strategy list `types` (in order) cannot be combined, or nil when it can: a method
    /// `alone` listed with others, or two methods that store samples beside a `soleRehearsal` one.
    /// Experiment configs and the on-device runtime check strategies with it.
    public static func problem(in types: [any PluginOptions.Type]) -> String? {
        for (i, t) in types.enumerated() {
            switch t.composition {
            case .free: continue
            case .alone(let reason) where types.count > 1:
                return "\"\(t.typeName)\" is a whole method (\(reason)) and must be listed alone; "
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
