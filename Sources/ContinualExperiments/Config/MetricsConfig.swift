import ContinualCore

/// `"metrics"`: which per-evaluation measure is primary, and whether the last evaluation's
/// predictions are stored. Every run stores all measures (accuracy matrix, balanced accuracy,
/// macro-F1, and AUROC/AUPRC for binary heads, each as a T × T matrix, plus confusion matrices);
/// the primary one is named in the results (`primary_metric`) for analysis tools to lead with.
/// Absent from the resolved config when at its defaults, so existing run ids do not change.
public struct MetricsConfig: Codable, Sendable, Equatable {
    /// The measures a results file carries, under their dataset names.
    public enum Measure: String, Codable, Sendable, CaseIterable {
        case accuracy, balancedAccuracy = "balanced_accuracy", macroF1 = "macro_f1", auroc, auprc
    }

    public var primary: Measure = .accuracy
    /// Write the last evaluation's predictions (and binary scores) per test set.
    public var storePredictions = false
    /// `"continual_eval_every": k`: evaluate every seen experience every k optimizer steps
    /// (continual evaluation, De Lange et al. 2023; `ContinualEvaluationProbe`) and store the
    /// curves, min-ACC and WC-ACC; nil (absent) = off. Batch runs only.
    public var continualEvalEvery: Int? = nil

    public init(primary: Measure = .accuracy, storePredictions: Bool = false) {
        self.primary = primary
        self.storePredictions = storePredictions
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case primary, storePredictions = "store_predictions", continualEvalEvery = "continual_eval_every"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        primary = try c.decodeChoice(.primary, default: .accuracy)
        storePredictions = try c.decode(.storePredictions, default: false)
        if c.contains(.continualEvalEvery) {
            let k: Int = try c.decode(.continualEvalEvery, default: 1)
            try c.require(k >= 1 && k <= 100_000_000, .continualEvalEvery, "must be in 1...100000000 (steps), got \(k)")
            continualEvalEvery = k
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(primary, forKey: .primary)
        try c.encode(storePredictions, forKey: .storePredictions)
        try c.encodeIfPresent(continualEvalEvery, forKey: .continualEvalEvery)
    }

    public var isDefault: Bool { self == MetricsConfig() }
}
