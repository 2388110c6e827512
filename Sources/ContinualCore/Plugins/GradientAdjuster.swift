/// Capability: changes the final gradient just before the optimizer (gradient projection as in
/// GEM / A-GEM, masking, clipping).
///
/// Runs after every loss term and penalty (step 7 of the order stated on `StrategyPlugin`),
/// whatever the plugin's position in the strategy list: the loop sorts adjusters by `stage`
/// (projection, then masking, then clipping; list order within a stage), so a projection always
/// sees the whole gradient and a clip always bounds the projected one.
public protocol GradientAdjuster: StrategyPlugin {
    /// When the adjustment runs relative to other adjusters.
    var gradientStage: GradientStage { get }

    /// Adjusts `gradient` (the full gradient of every term, at `context.model`'s parameters).
    mutating func adjustGradient(_ gradient: UnsafeMutableBufferPointer<Float>, context: GradientContext)
}

/// The fixed order of gradient adjustments.
public enum GradientStage: Int, Sendable, Comparable, CaseIterable {
    /// Constraint projections (GEM, A-GEM): on the whole gradient.
    case projection = 0
    /// Zeroing parts of the gradient (parameter masks).
    case masking = 1
    /// Norm or value clipping: last, so the step's size is bounded whatever came before.
    case clipping = 2

    public static func < (a: GradientStage, b: GradientStage) -> Bool { a.rawValue < b.rawValue }
}

/// What a `GradientAdjuster` sees of the step.
public struct GradientContext {
    /// The model at the step's parameters (before the optimizer moves them).
    public let model: MLP
    /// The step's batch (own rows first).
    public let batch: Batch
    public let experienceIndex: Int
    public let stepInExperience: Int
    /// Epoch (pass) within the experience, from 0.
    public let epoch: Int

    public init(model: MLP, batch: Batch, experienceIndex: Int, stepInExperience: Int, epoch: Int = 0) {
        self.epoch = epoch
        self.model = model
        self.batch = batch
        self.experienceIndex = experienceIndex
        self.stepInExperience = stepInExperience
    }
}
