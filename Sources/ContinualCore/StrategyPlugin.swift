/// A continual-learning method as a set of hooks that the `Trainer` calls, in list order.
///
/// A strategy is an ordered list of plugins (`[replay, ewc]`), and every hook has a do-nothing
/// default, so a method implements only the hooks it needs. Composition semantics, per hook:
/// - `prepare`, `beforeExperience`, `adjustTrainingSet`, `extendBatch`, `afterExperience`: each
///   plugin sees the result of the ones before it (a replay buffer sees the joint set, etc.).
/// - `addPenalty`: penalties add up; every plugin adds its term's gradient to the same vector
///   and sees the *parameters*, never another plugin's penalty.
/// - `afterStep`: every observer sees the same step (task-loss gradient, total gradient,
///   parameters before and after).
/// - `predictions`: the first plugin that returns predictions decides (adapter routing).
///
/// Regularisers in a composed list (`["replay", "ewc"]`, `["ewc", "si"]`):
/// - Consolidation uses the experience's *own* data: `afterExperience` estimates importance
///   (EWC's Fisher) on `context.experience.train` through `context.route`, never on the set
///   returned by `adjustTrainingSet` nor on rows added by `extendBatch`, so the Fisher does not
///   depend on the plugins' order or on a replay buffer. No plugin changes the model's
///   parameters in `afterExperience`, so each sees the trained parameters.
/// - `StepObservation.taskGradient` is the gradient of the mean data loss of the whole batch
///   (own rows and replayed rows) without any penalty; `totalGradient` adds every plugin's
///   penalty. SI integrates the former (Zenke et al.), or the latter on request (Avalanche).
/// - Every penalty is evaluated at the parameters before the step; their sum is the run's
///   `penalty` curve. With zero strength (λ = 0, c = 0) a regulariser must leave the gradient
///   untouched, so the run is bit-identical to the list without it.
public protocol StrategyPlugin {
    /// Short identifier written to the results ("naive", "ewc", "replay").
    var name: String { get }

    /// Once, before anything is trained or evaluated (may replace the model, e.g. add adapters).
    mutating func prepare(model: inout MLP, context: RunContext) throws

    /// Before training on an experience (may change the trainable mask).
    mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws

    /// The set to train on for this experience (default: the experience's training set).
    mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext)

    /// After the batch's own rows are filled (replay appends stored samples here).
    mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext)

    /// Adds a regulariser's gradient into `gradient` and returns its value (added to the loss).
    mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                             gradient: UnsafeMutableBufferPointer<Float>) -> Double

    /// Whether the plugin changes the parameters at which a step's gradient is taken (e.g.
    /// quantisation-aware training); the Trainer calls the two hooks below only if some plugin does.
    /// Read once per experience, after `beforeExperience` (like `observesSteps`).
    var transformsGradientPoint: Bool { get }

    /// Before a step's forward and backward: may replace `model.parameters` (e.g. by their
    /// fake-quantised values) so that the task-loss gradient is taken there.
    mutating func willComputeGradient(model: inout MLP)

    /// Right after the task-loss gradient, before penalties and the optimizer: must restore what
    /// `willComputeGradient` changed (the straight-through estimator applies that gradient to the
    /// restored float parameters). Called in reverse list order.
    mutating func didComputeGradient(model: inout MLP)

    /// Whether `afterStep` wants to be called (the Trainer copies vectors only if some plugin does;
    /// read once per experience, after `beforeExperience`).
    var observesSteps: Bool { get }

    /// After every optimizer step.
    mutating func afterStep(_ step: StepObservation)

    /// After training on an experience, before evaluation (Fisher, buffer update, freezing).
    mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws

    /// Overrides prediction for evaluation (e.g. adapter routing); nil = the Trainer's default
    /// (route = the evaluated experience's index on multi-route models, else 0).
    mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int,
                              workspace: Workspace) -> [Int32]?

    /// What to write into the run's results (options, importance vectors, buffer summary).
    func report() -> PluginReport

    /// Checkpoint hook: everything the plugin carries between experiences (nil = checkpoints
    /// not supported yet; a stateless plugin returns an empty `PluginState`).
    func checkpointState() -> PluginState?

    /// Restores `checkpointState()`'s value, after `prepare` has run on the same config.
    mutating func restore(from state: PluginState) throws
}

public extension StrategyPlugin {
    mutating func prepare(model: inout MLP, context: RunContext) throws {}
    mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {}
    mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {}
    mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {}
    mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                             gradient: UnsafeMutableBufferPointer<Float>) -> Double { 0 }
    var transformsGradientPoint: Bool { false }
    mutating func willComputeGradient(model: inout MLP) {}
    mutating func didComputeGradient(model: inout MLP) {}
    var observesSteps: Bool { false }
    mutating func afterStep(_ step: StepObservation) {}
    mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {}
    mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int,
                              workspace: Workspace) -> [Int32]? { nil }
    func report() -> PluginReport { PluginReport() }
    func checkpointState() -> PluginState? { nil }
    mutating func restore(from state: PluginState) throws { throw CheckpointError.unsupportedPlugin(name) }
}

/// What every plugin knows about the run it belongs to.
public struct RunContext: Sendable {
    /// The run's seed; plugins derive their own `RandomSource` from it and their position.
    public var seed: UInt64
    /// Position of this plugin in the strategy list.
    public var pluginIndex: Int
    public var experienceCount: Int
    public var dimension: Int
    public var head: OutputHead
    public var training: TrainingOptions
    /// Names of the stream's features, in column order (context routing looks a feature up).
    public var featureNames: [String]

    public init(seed: UInt64, pluginIndex: Int, experienceCount: Int, dimension: Int, head: OutputHead,
                training: TrainingOptions, featureNames: [String] = []) {
        self.featureNames = featureNames
        self.seed = seed
        self.pluginIndex = pluginIndex
        self.experienceCount = experienceCount
        self.dimension = dimension
        self.head = head
        self.training = training
    }

    /// This plugin's own random stream: independent of the Trainer's and of other plugins'.
    public func randomSource(_ purpose: String) -> RandomSource {
        RandomSource(seed: seed, stream: "plugin.\(pluginIndex).\(purpose)")
    }
}

/// The experience being trained and the ones before it.
public struct ExperienceContext {
    public var index: Int
    /// All experiences of the stream (plugins may only *train* on `0...index`; later ones are
    /// there for evaluation-only bookkeeping and must not leak into training).
    public var experiences: [Experience]
    /// Route used for this experience's samples.
    public var route: Int32

    public init(index: Int, experiences: [Experience], route: Int32) {
        self.index = index
        self.experiences = experiences
        self.route = route
    }

    public var experience: Experience { experiences[index] }
    public var seen: ArraySlice<Experience> { experiences[0...index] }
}

/// One optimizer step as seen by observers such as Synaptic Intelligence.
public struct StepObservation {
    /// ∂(task loss)/∂θ at the parameters before the step (no penalty terms).
    public var taskGradient: UnsafeBufferPointer<Float>
    /// The gradient the optimizer actually used (task loss + all penalties).
    public var totalGradient: UnsafeBufferPointer<Float>
    public var parametersBefore: UnsafeBufferPointer<Float>
    public var parametersAfter: UnsafeBufferPointer<Float>
    public var experienceIndex: Int
    public var stepInExperience: Int

    public init(taskGradient: UnsafeBufferPointer<Float>, totalGradient: UnsafeBufferPointer<Float>,
                parametersBefore: UnsafeBufferPointer<Float>, parametersAfter: UnsafeBufferPointer<Float>,
                experienceIndex: Int, stepInExperience: Int) {
        self.taskGradient = taskGradient
        self.totalGradient = totalGradient
        self.parametersBefore = parametersBefore
        self.parametersAfter = parametersAfter
        self.experienceIndex = experienceIndex
        self.stepInExperience = stepInExperience
    }
}

/// Values a plugin asks the results writer to store in its run group, by name.
public struct PluginReport: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case double(Double)
        case int(Int64)
        case string(String)
    }

    /// A numeric array with its shape, written as a dataset.
    public struct Array: Sendable, Equatable {
        public var values: [Double]
        public var shape: [Int]
        public var attributes: [String: Value]
        public init(values: [Double], shape: [Int]? = nil, attributes: [String: Value] = [:]) {
            self.values = values
            self.shape = shape ?? [values.count]
            self.attributes = attributes
        }
    }

    public var attributes: [String: Value]
    public var arrays: [String: Array]

    public init(attributes: [String: Value] = [:], arrays: [String: Array] = [:]) {
        self.attributes = attributes
        self.arrays = arrays
    }
}
