import ContinualCore
import ContinualMetrics
import ContinualScenarios
import ContinualStrategies

/// What one training session did and cost, from the toolkit's cost model (the figures the
/// research results report per session under `runs/<id>/costs`).
public struct TrainingSessionReport: Sendable, Equatable {
    /// Index of the session (0 = the first).
    public var session: Int
    /// The day it ran.
    public var day: Int
    /// Labelled samples the session trained on: every pending sample, or with `safe_refresh` all
    /// but the held-out window.
    public var newSamples: Int
    /// Rows of the session's training set after the strategy adjusted it (joint training adds
    /// the earlier sessions).
    public var trainingSetSize: Int
    /// Rows processed over all epochs, replayed rows included.
    public var rowsProcessed: Int
    /// Optimizer steps.
    public var steps: Int
    /// Mean task loss per epoch (fewer than the configured epochs when early stopping ended it).
    public var epochLosses: [Double]
    /// Parameters that trained in this session.
    public var trainableParameters: Int
    /// FLOPs, bytes moved and joules of the session under the configured device profile.
    public var energy: EnergyEstimate
    /// Peak memory of training (parameters, optimizer state, gradients, a batch's activations,
    /// stored samples and the plugins' state), bytes.
    public var peakMemory: PeakMemory
    /// Whether the session's model replaced the current one (false: the safe-refresh gate rolled
    /// it back). Always true without `safe_refresh`.
    public var accepted = true
    /// Safe refresh: accuracy of the model before the session on the held-out window (nil: off).
    public var holdoutAccuracyCurrent: Double? = nil
    /// Safe refresh: accuracy of the session's candidate on the held-out window (nil: off).
    public var holdoutAccuracyCandidate: Double? = nil
}
