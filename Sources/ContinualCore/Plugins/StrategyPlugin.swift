/// A continual-learning method as a set of hooks that the training loop (`Trainer`) calls.
///
/// A strategy is an ordered list of plugins (`[replay, ewc]`). This base protocol holds the
/// per-experience hooks every method may use; the per-step hooks are *capabilities*, each its own
/// protocol that a plugin adopts only if it needs it (`ParameterPenalty`, `BatchLossTerm`,
/// `GradientAdjuster`, `StepObserver`, `GradientPointTransform`, `PredictionOverride`). The loop
/// asks which plugins adopt which capability once per experience, after `beforeExperience`.
///
/// ## Order of the hooks (stated and enforced by the loop)
/// Per run: `prepare` (list order). Per experience: `beforeExperience` → loop observers see the
/// model → `adjustTrainingSet` → the steps (with `TrainingPhases.beginPhase` right before the
/// steps where a plugin's phases begin) → `afterExperience` → evaluation (`PredictionOverride`).
/// Per step, always in this order whatever the list order:
/// 1. the batch's own rows are filled, then `extendBatch` (list order: replay appends rows); the
///    loop zeroes every `ParameterBlockOwner`'s block gradient;
/// 2. `GradientPointTransform.willComputeGradient` (list order);
/// 3. `ActivationGate.gates` (at most one gating plugin), then the forward pass through the
///    gates, then `ColumnNetwork.columnForward` (at most one, not beside a gate; it may replace
///    the logits with its columns') → task loss and its logit gradient;
/// 4. `BatchLossTerm.addBatchLoss` (list order): terms on the batch's logits (distillation,
///    logit replay) add into the same logit gradient, then one backward pass (the columns'
///    `columnBackward` when they replaced the logits), then `ActivationGate.didBackward` with
///    ∂(data loss)/∂gate;
/// 5. `GradientPointTransform.didComputeGradient(model:gradient:)` (reverse list order), with the
///    data losses' gradient;
/// 6. `ParameterPenalty.addPenalty` (list order): penalties on the parameters (EWC, SI, MAS) add
///    their gradients; each sees the parameters, never another plugin's term;
/// 7. `GradientAdjuster.adjustGradient`, last, sorted by `GradientStage` (projection → masking →
///    clipping; list order within a stage): they see the final gradient of every term;
/// 8. the optimizer step; one step of the run's optimizer kind on every `ParameterBlockOwner`'s
///    block at the same learning rate, then its `didUpdateParameterBlock` (list order); then
///    `StepObserver.afterStep` (list order).
/// Hooks that follow a schedule get the step's `StepIndex` (experience, epoch, step).
///
/// ## Composition semantics
/// - `prepare`, `beforeExperience`, `adjustTrainingSet`, `extendBatch`, `afterExperience`: each
///   plugin sees the result of the ones before it (a replay buffer sees the joint set, etc.).
/// - Consolidation uses the experience's *own* data: `afterExperience` estimates importance
///   (EWC's Fisher) on `context.experience.train` through `context.route`, never on the set
///   returned by `adjustTrainingSet` nor on rows added by `extendBatch`, so the Fisher does not
///   depend on the plugins' order or on a replay buffer. No plugin changes the model's
///   parameters in `afterExperience`, so each sees the trained parameters.
/// - `StepObservation.taskGradient` is the gradient of the batch's data losses (task loss of own
///   and replayed rows plus every `BatchLossTerm`) without any penalty or adjustment;
///   `totalGradient` is what the optimizer used. SI integrates the former (Zenke et al.), or the
///   latter on request (Avalanche).
/// - Every penalty is evaluated at the parameters before the step; the penalty curve is the sum
///   of the batch-loss terms and penalties. With zero strength (λ = 0, c = 0) a method must leave
///   the gradient untouched, so the run is bit-identical to the list without it (the conformance
///   suite checks this for every registered plugin with a strength).
/// - `PredictionOverride`: the first plugin that returns predictions decides (adapter routing).
///
/// Every plugin reports its `resources` (typed, never by name) and its checkpoint state.
public protocol StrategyPlugin {
    /// Short identifier written to the results ("naive", "ewc", "replay").
    var name: String { get }

    /// What the plugin stores and costs, read by the cost model and the peak-memory figures.
    /// Must count every stored sample and every state vector the plugin keeps (the conformance
    /// suite compares it with `checkpointState()`).
    var resources: PluginResources { get }

    /// Once, before anything is trained or evaluated (may replace the model, e.g. add adapters).
    mutating func prepare(model: inout MLP, context: RunContext) throws

    /// Before training on an experience (may change the trainable mask or grow the model).
    mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws

    /// The set to train on for this experience (default: the experience's training set).
    mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext)

    /// After the batch's own rows are filled (replay appends stored samples here).
    mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext)

    /// After training on an experience, before evaluation (Fisher, buffer update, freezing).
    mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws

    /// What to write into the run's results (options, importance vectors, buffer summary).
    func report() -> PluginReport

    /// Everything the plugin carries between experiences (a stateless plugin returns an empty
    /// `PluginState`). Checkpoints of every kind of run are built from it.
    func checkpointState() -> PluginState

    /// Restores `checkpointState()`'s value, after `prepare` has run on the same config.
    mutating func restore(from state: PluginState) throws
}

public extension StrategyPlugin {
    mutating func prepare(model: inout MLP, context: RunContext) throws {}
    mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {}
    mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {}
    mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {}
    mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {}
    func report() -> PluginReport { PluginReport() }
}
