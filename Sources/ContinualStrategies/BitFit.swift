import ContinualCore

/// BitFit (Zaken et al. 2021): the whole network trains up to `freeze_core_after`, then only
/// the biases train — plus, on a multi-head model, the current experience's head (weights and
/// bias), as BitFit trains the task-specific classifier. `{"type": "bitfit", "freeze_core_after": 0}`.
public typealias BitFit = FrozenCoreFineTuning<BitFitPart>

/// BitFit's part: the biases, and the current head.
public enum BitFitPart: FrozenCorePart {
    public static let typeName = "bitfit"
    public static let summary = "only biases train after the first experience(s) (Zaken et al. 2021)"
    public static var afterFreeze: TrainableMask.Parts { .init(sharedBiases: true, routedHeads: true) }
}
