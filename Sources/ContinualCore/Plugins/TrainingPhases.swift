/// Capability: trains each experience in phases, with a change of the model between them
/// (PackNet trains the free weights, prunes them by magnitude, then retrains only the kept ones).
///
/// Before the loop's first step of an experience (after `beforeExperience`, step 0 of the order
/// stated on `StrategyPlugin`) it asks `phaseStarts` for the steps at which the plugin's next
/// phases begin. Right before the step numbered `phaseStarts[k]` of the experience (before the
/// batch is filled), the loop calls `beginPhase(k + 1, …)` (list order when several plugins
/// begin a phase at the same step), then restarts the network optimizer's state (moments, step
/// count: a new optimizer for the new phase) and recomputes the step masks, so a change of
/// `model.trainable` takes effect at once. A phase may not change the parameter count. Phases
/// the experience never reaches (an early stop, a FLOPs budget) are not begun: the plugin must
/// finish its work in `afterExperience` then. Checkpoints fall between experiences, never
/// inside one, so no phase state is carried by the loop.
public protocol TrainingPhases: StrategyPlugin {
    /// Steps of the experience (counted from 0) at which phases 1, 2, … begin, ascending, given
    /// the steps planned for it (`Int.max` when only a FLOPs budget bounds it).
    func phaseStarts(plannedSteps: Int, context: ExperienceContext) -> [Int]
    /// Begins phase `phase` (≥ 1): may change the parameters' values and `model.trainable`.
    mutating func beginPhase(_ phase: Int, model: inout MLP, context: ExperienceContext, workspace: Workspace) throws
}

extension StrategyPlugin {
    /// `TrainingPhases.phaseStarts` of this plugin (empty for other plugins).
    func phaseStartsIfPhased(plannedSteps: Int, context: ExperienceContext) -> [Int] {
        (self as? any TrainingPhases)?.phaseStarts(plannedSteps: plannedSteps, context: context) ?? []
    }

    /// Calls `TrainingPhases.beginPhase` on the plugin in place.
    mutating func callBeginPhase(_ phase: Int, model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        guard let type = Self.self as? any TrainingPhases.Type else { return }
        try withUnsafeMutablePointer(to: &self) {
            try Self.begin(type, UnsafeMutableRawPointer($0), phase, &model, context, workspace)
        }
    }
    private static func begin<T: TrainingPhases>(_: T.Type, _ p: UnsafeMutableRawPointer, _ phase: Int, _ model: inout MLP,
                                                 _ context: ExperienceContext, _ workspace: Workspace) throws {
        try p.assumingMemoryBound(to: T.self).pointee.beginPhase(phase, model: &model, context: context, workspace: workspace)
    }
}
