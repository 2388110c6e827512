/// Capability: a regulariser on the parameters (EWC, SI, MAS), added after the data losses.
///
/// Called every step, in list order, after the backward pass (step 6 of the order stated on
/// `StrategyPlugin`). Penalties add up; each sees the parameters before the step, never another
/// plugin's term. With zero strength the method must return 0 and leave `gradient` untouched.
public protocol ParameterPenalty: StrategyPlugin {
    /// Adds the penalty's gradient into `gradient` and returns its value (added to the loss).
    mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                             gradient: UnsafeMutableBufferPointer<Float>) -> Double
}
