/// Everything one run of the training loop measured.
///
/// Accuracies are fractions in [0, 1] (NaN for an empty test set). Wall times are the only
/// fields that differ between two runs of the same config and seed. The measurements live in
/// `progress` (the value checkpoints embed); the properties below read and write through it.
public struct TrainingOutcome: Sendable, Equatable {
    public var progress: TrainingProgress
    public var testSizes: [Int]
    public var finalModel: MLP
    /// Each plugin's report, in strategy order, with its name.
    public var pluginReports: [(name: String, report: PluginReport)]
    /// Each plugin's resources at the end of the run, in strategy order.
    public var pluginResources: [PluginResources]
    /// Predictions of the last evaluation, per experience's test set (after the last experience
    /// trained; empty if the run stopped before its end).
    public var finalPredictions: [[Int32]] = []
    /// Positive-class logits of the last evaluation (binary heads predicted by the model).
    public var finalScores: [[Float]?] = []
    /// The test labels those predictions are scored against.
    public var finalLabels: [[Int32]] = []
    /// Accuracy on every seen experience every k steps, when a `ContinualEvaluationProbe` watched
    /// the loop (`metrics.continual_eval_every`); nil otherwise.
    public var continualEvaluation: ContinualEvaluationCurve? = nil

    public init(progress: TrainingProgress, testSizes: [Int], finalModel: MLP,
                pluginReports: [(name: String, report: PluginReport)] = [], pluginResources: [PluginResources] = []) {
        self.progress = progress
        self.testSizes = testSizes
        self.finalModel = finalModel
        self.pluginReports = pluginReports
        self.pluginResources = pluginResources
    }

    /// R[i][j]: accuracy on experience j's test set after training through experience i (T × T).
    public var accuracy: [[Double]] { get { progress.accuracy } set { progress.accuracy = newValue } }
    /// Accuracy of the run's own model at its initial weights (Avalanche's FWT baseline).
    public var initialAccuracy: [Double] { get { progress.initialAccuracy } set { progress.initialAccuracy = newValue } }
    /// Accuracy of an independently initialised model, per experience (GEM's b).
    public var randomAccuracy: [Double] { get { progress.randomAccuracy } set { progress.randomAccuracy = newValue } }
    /// Samples in each experience's (possibly adjusted, e.g. joint) training set.
    public var trainSetSizes: [Int] { get { progress.trainSetSizes } set { progress.trainSetSizes = newValue } }
    /// Samples actually processed per experience, over all epochs, including replayed rows.
    public var samplesProcessed: [Int] { get { progress.samplesProcessed } set { progress.samplesProcessed = newValue } }
    /// Optimizer steps per experience.
    public var steps: [Int] { get { progress.steps } set { progress.steps = newValue } }
    /// Mean task loss per epoch, per experience (`lossCurve[i].count` = epochs actually run).
    public var lossCurve: [[Double]] { get { progress.lossCurve } set { progress.lossCurve = newValue } }
    /// Mean of the extra terms (batch-loss terms + penalties) per epoch, per experience.
    public var penaltyCurve: [[Double]] { get { progress.penaltyCurve } set { progress.penaltyCurve = newValue } }
    /// Trainable parameters during each experience.
    public var trainableParameters: [Int] { get { progress.trainableParameters } set { progress.trainableParameters = newValue } }
    public var trainSeconds: Double { get { progress.trainSeconds } set { progress.trainSeconds = newValue } }
    public var evalSeconds: Double { get { progress.evalSeconds } set { progress.evalSeconds = newValue } }

    /// The strategy's resources summed over its plugins.
    public var totalResources: PluginResources { pluginResources.reduce(.none, +) }

    public static func == (a: TrainingOutcome, b: TrainingOutcome) -> Bool {
        a.accuracy == b.accuracy && a.initialAccuracy == b.initialAccuracy && a.randomAccuracy == b.randomAccuracy
            && a.lossCurve == b.lossCurve && a.finalModel == b.finalModel && a.steps == b.steps
    }
}
