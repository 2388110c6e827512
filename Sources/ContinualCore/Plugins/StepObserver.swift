/// Capability: watches every optimizer step (Synaptic Intelligence's path integral).
///
/// Called after the optimizer, in list order (step 8 of the order stated on `StrategyPlugin`).
/// The loop copies the task gradient and the parameters before the step only if some plugin
/// adopts this capability.
public protocol StepObserver: StrategyPlugin {
    mutating func afterStep(_ step: StepObservation)
}

/// One optimizer step as seen by a `StepObserver`.
public struct StepObservation {
    /// Gradient of the batch's data losses (task loss + batch-loss terms) at the parameters
    /// before the step, without penalties or adjustments.
    public var taskGradient: UnsafeBufferPointer<Float>
    /// The gradient the optimizer actually used (every term, penalties and adjustments).
    public var totalGradient: UnsafeBufferPointer<Float>
    public var parametersBefore: UnsafeBufferPointer<Float>
    public var parametersAfter: UnsafeBufferPointer<Float>
    public var experienceIndex: Int
    public var stepInExperience: Int
    /// Epoch (pass) within the experience, from 0.
    public var epoch: Int

    public init(taskGradient: UnsafeBufferPointer<Float>, totalGradient: UnsafeBufferPointer<Float>,
                parametersBefore: UnsafeBufferPointer<Float>, parametersAfter: UnsafeBufferPointer<Float>,
                experienceIndex: Int, stepInExperience: Int, epoch: Int = 0) {
        self.epoch = epoch
        self.taskGradient = taskGradient
        self.totalGradient = totalGradient
        self.parametersBefore = parametersBefore
        self.parametersAfter = parametersAfter
        self.experienceIndex = experienceIndex
        self.stepInExperience = stepInExperience
    }
}
