/// Capability: decides the predictions used for evaluation and prequential scoring (adapter
/// routing by task identity, context or entropy).
///
/// The first plugin in list order that returns non-nil predictions decides; nil means the loop's
/// default (the model through the experience's route on multi-route models, else route 0). On a
/// binary head, return the scores the classes came from, or AUROC and AUPRC are NaN for the run.
public protocol PredictionOverride: StrategyPlugin {
    mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int, workspace: Workspace) -> Predictions?
}
