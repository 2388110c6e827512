import ContinualCore
import ContinualMetrics
import ContinualScenarios
import ContinualStrategies

/// Why a `PersonalModel` call failed. Every message says what was wrong.
public enum PersonalModelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The configuration cannot make a model (strategy composition, sizes, a plugin that
    /// refuses this network).
    case invalidConfiguration(String)
    /// A feature vector or an outcome that does not fit the model.
    case invalidSample(String)
    /// `label(day:outcome:)` for a day without an unlabelled observation.
    case nothingToLabel(day: Int)
    /// `train(day:)` with no pending samples.
    case nothingToTrain
    /// Training failed (diverging loss, session capacity used up); the model is unchanged.
    case training(String)
    /// The checkpoint bytes cannot be restored (truncated, corrupt, another version or another
    /// configuration).
    case checkpoint(String)

    public var description: String {
        switch self {
        case .invalidConfiguration(let m): return "invalid personal-model configuration: \(m)"
        case .invalidSample(let m): return "invalid sample: \(m)"
        case .nothingToLabel(let day): return "no unlabelled observation of day \(day) to label"
        case .nothingToTrain: return "no labelled samples are pending: nothing to train"
        case .training(let m): return "training session failed (the model is unchanged): \(m)"
        case .checkpoint(let m): return "cannot restore the personal model: \(m)"
        }
    }
}
