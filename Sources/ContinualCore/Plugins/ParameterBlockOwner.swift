/// Capability: the plugin owns a block of trainable parameters outside the network (HAT's task
/// embeddings) that the loop updates with the run's own optimizer and learning-rate schedule.
///
/// Per step: the loop zeroes `parameterBlockGradient` before the step's first hook (step 1 of the
/// order stated on `StrategyPlugin`); the plugin adds into it during the step (from its gate
/// gradient, its penalty); after the network's optimizer step the loop applies one step of an
/// optimizer of the run's kind and hyper-parameters, at this step's scheduled learning rate, to
/// `parameterBlock`, then calls `didUpdateParameterBlock` (clamping). The block optimizer's state
/// (moments, step count) is kept by the loop, reset with the network's (`reset_optimizer`),
/// restarted when the block changes size, and carried by checkpoints. The plugin carries the
/// block's values in its own `checkpointState()` and counts them in `resources.ownedParameters`.
public protocol ParameterBlockOwner: StrategyPlugin {
    /// The plugin's trainable parameters (length fixed within an experience).
    var parameterBlock: [Float] { get set }
    /// ∂(loss)/∂parameterBlock for the current step, same length.
    var parameterBlockGradient: [Float] { get set }
    /// Called after every optimizer step on the block (list order).
    mutating func didUpdateParameterBlock()
    /// Whether the block's optimizer state restarts with every experience (the block then
    /// holds a new set of parameters, e.g. the next task's embeddings); default false.
    var restartsBlockOptimizerPerExperience: Bool { get }
}

public extension ParameterBlockOwner {
    mutating func didUpdateParameterBlock() {}
    var restartsBlockOptimizerPerExperience: Bool { false }
}
