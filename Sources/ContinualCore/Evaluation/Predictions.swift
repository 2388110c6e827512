/// What a `PredictionOverride` plugin predicts for a test set: one class per row and, for binary
/// heads, the score each prediction was thresholded from (the positive-class logit or any
/// monotone transform of it), so that AUROC and AUPRC can be measured on overridden predictions
/// too. `scores` is nil when the rule has no such score (iCaRL's nearest mean of exemplars).
public struct Predictions: Sendable, Equatable {
    public var classes: [Int32]
    public var scores: [Float]?

    public init(classes: [Int32], scores: [Float]? = nil) {
        precondition(scores == nil || scores!.count == classes.count, "one score per prediction")
        self.classes = classes
        self.scores = scores
    }
}
