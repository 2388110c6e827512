/// Everything one run of the Trainer measured.
///
/// Accuracies are fractions in [0, 1] (NaN for an empty test set). Wall times are the only
/// fields that differ between two runs of the same config and seed.
public struct TrainingOutcome: Sendable, Equatable {
    /// R[i][j]: accuracy on experience j's test set after training through experience i (T × T).
    public var accuracy: [[Double]]
    /// Accuracy of the run's own model at its initial weights, per experience (Avalanche's FWT
    /// baseline).
    public var initialAccuracy: [Double]
    /// Accuracy of an independently initialised model, per experience (GEM's b).
    public var randomAccuracy: [Double]
    public var testSizes: [Int]
    /// Samples in each experience's (possibly adjusted, e.g. joint) training set.
    public var trainSetSizes: [Int]
    /// Samples actually processed per experience, over all epochs, including replayed rows.
    public var samplesProcessed: [Int]
    /// Optimizer steps per experience.
    public var steps: [Int]
    /// Mean task loss per epoch, per experience (T rows of up to `epochs` values; fewer when early
    /// stopping ended the experience, so `lossCurve[i].count` = epochs actually run).
    public var lossCurve: [[Double]]
    /// Mean penalty (sum of the plugins' regularisers) per epoch, per experience.
    public var penaltyCurve: [[Double]]
    /// Trainable parameters during each experience.
    public var trainableParameters: [Int]
    public var trainSeconds: Double
    public var evalSeconds: Double
    public var finalModel: MLP
    /// Each plugin's report, in strategy order, with its name.
    public var pluginReports: [(name: String, report: PluginReport)]

    public static func == (a: TrainingOutcome, b: TrainingOutcome) -> Bool {
        a.accuracy == b.accuracy && a.initialAccuracy == b.initialAccuracy && a.randomAccuracy == b.randomAccuracy
            && a.lossCurve == b.lossCurve && a.finalModel == b.finalModel && a.steps == b.steps
    }
}
