/// Capability: multiplies hidden units by gates in the training forward pass and receives the
/// gates' gradient from the backward pass (HAT's task attention masks, Serra et al. 2018).
///
/// Per forward pass (once per step, or once per route on a batch that mixes routes), the loop
/// asks `gates(route:step:)` right before the forward pass (step 3 of the order stated on
/// `StrategyPlugin`), runs forward and backward through them (`UnitGates`: exact for every
/// activation), and hands ∂(data loss)/∂g to `didBackward` right after the backward pass,
/// before `GradientPointTransform.didComputeGradient`. The data loss includes every
/// `BatchLossTerm`. At most one plugin of a strategy may gate (the loop refuses two).
/// Evaluation is the plugin's own: gate there through `PredictionOverride`.
public protocol ActivationGate: StrategyPlugin {
    /// The gates for the coming forward pass through `route`, or nil for an ungated pass.
    mutating func gates(route: Int, step: StepIndex) -> UnitGates?
    /// ∂(data loss)/∂g of the pass just finished, laid out like the gates returned for it.
    mutating func didBackward(gateGradient: UnsafeBufferPointer<Float>, route: Int, step: StepIndex)
}
