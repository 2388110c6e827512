/// Where a training step sits in the run: the experience, the epoch (pass) within it, and the
/// step's position in the experience and in the epoch. Handed to every per-step hook that needs
/// a schedule (HAT anneals its gate slope over the batches of each epoch).
public struct StepIndex: Sendable, Equatable {
    /// Index of the experience being trained.
    public var experience: Int
    /// Epoch (pass over the training set) within the experience, from 0.
    public var epoch: Int
    /// Optimizer steps taken before this one in the experience.
    public var stepInExperience: Int
    /// Steps taken before this one in the epoch.
    public var stepInEpoch: Int
    /// Batches one epoch of this experience has (the last epoch may stop early at a step limit).
    public var stepsPerEpoch: Int

    public init(experience: Int, epoch: Int = 0, stepInExperience: Int = 0, stepInEpoch: Int = 0, stepsPerEpoch: Int = 1) {
        self.experience = experience
        self.epoch = epoch
        self.stepInExperience = stepInExperience
        self.stepInEpoch = stepInEpoch
        self.stepsPerEpoch = stepsPerEpoch
    }
}
