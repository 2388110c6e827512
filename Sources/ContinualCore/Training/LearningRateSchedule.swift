/// How the learning rate changes within an experience (or a scheduled session, or a local
/// round): a factor applied to the optimizer's base rate η at every step. The schedule restarts
/// with each experience, as the optimizer state does by default (`reset_optimizer`).
///
/// - `constant`: η.
/// - `step(everyEpochs: k, gamma: γ)`: η · γ^⌊epoch / k⌋ (PyTorch's `StepLR`, stepped per epoch).
/// - `cosine(minimumFactor: f)`: η · (f + (1 − f) · (1 + cos(π t / T)) / 2) over the experience's
///   planned steps T (epochs × batches, or the step limit of a local round), t = 0 … T − 1
///   (Loshchilov & Hutter 2017's SGDR without restarts; PyTorch's `CosineAnnealingLR` with
///   η_min = f · η, T_max = T).
/// - `warmupSteps` w > 0: for t < w the factor above is multiplied by (t + 1) / w (linear warm-up
///   from η/w, as in Goyal et al. 2017); from step w on the schedule alone applies.
///
/// Precision: the factor is computed in `Double` and the rate rounded to `Float` once per step.
/// With the constant schedule and no warm-up the Trainer passes no rate at all, so runs without a
/// schedule are bit-identical to runs from before schedules existed.
public struct LearningRateSchedule: Sendable, Equatable, Hashable {
    public enum Shape: Sendable, Equatable, Hashable {
        case constant
        case step(everyEpochs: Int, gamma: Double)
        case cosine(minimumFactor: Double)
    }

    public var shape: Shape
    public var warmupSteps: Int

    public init(_ shape: Shape = .constant, warmupSteps: Int = 0) {
        self.shape = shape
        self.warmupSteps = warmupSteps
    }

    /// True when the factor is 1 at every step (the Trainer then leaves the optimizer's rate alone).
    public var isConstant: Bool { shape == .constant && warmupSteps == 0 }

    /// The factor at step `t` (0-based within the experience) of epoch `epoch`, out of
    /// `plannedSteps` steps in the experience.
    public func factor(step t: Int, epoch: Int, plannedSteps: Int) -> Double {
        var f: Double
        switch shape {
        case .constant:
            f = 1
        case let .step(k, gamma):
            // γⁿ by repeated squaring (exact for powers of two, like Python's γ ** n up to rounding).
            var n = epoch / max(k, 1), base = gamma
            f = 1
            while n > 0 {
                if n & 1 == 1 { f *= base }
                base *= base
                n >>= 1
            }
        case .cosine(let floor):
            let T = Double(max(plannedSteps, 1))
            f = floor + (1 - floor) * (1 + _cos(Double.pi * Double(min(t, max(plannedSteps - 1, 0))) / T)) / 2
        }
        if t < warmupSteps { f *= Double(t + 1) / Double(warmupSteps) }
        return f
    }
}
