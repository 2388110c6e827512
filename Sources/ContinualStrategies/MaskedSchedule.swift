import ContinualCore

/// Shared schedule of the mask-only PEFT baselines (last-layer, BitFit): everything trains while
/// the experience index ≤ `freeze_core_after` (exactly like naive fine-tuning), afterwards only
/// the parts given; records the per-experience parameter accounting.
struct MaskedSchedule {
    var freezeCoreAfter: Int
    var afterFreeze: TrainableMask.Parts
    var accounting = ParameterAccounting()

    mutating func apply(model: inout MLP, context: ExperienceContext) {
        let route = Int(context.route)
        if context.index <= freezeCoreAfter {
            model.trainable = nil
            accounting.record(model: model, mask: nil, parts: .init(sharedCore: true, routedHeads: true), routes: [route])
        } else {
            let mask = TrainableMask.mask(for: model, parts: afterFreeze, routes: [route])
            model.trainable = mask
            accounting.record(model: model, mask: mask, parts: afterFreeze, routes: [route])
        }
    }

    func report(name: String) -> PluginReport {
        var report = PluginReport(attributes: ["freeze_core_after": .int(Int64(freezeCoreAfter))])
        for (k, v) in accounting.reportArrays { report.arrays[k] = v }
        return report
    }
}

extension MaskedSchedule {
    func checkpointState() -> PluginState {
        var state = PluginState()
        accounting.checkpoint(into: &state, prefix: "accounting.")
        return state
    }

    mutating func restore(from state: PluginState) throws {
        try accounting.restore(from: state, prefix: "accounting.")
    }
}

/// A PEFT baseline expressed purely through the trainable mask (BitFit, last-layer fine-tuning):
/// its whole behaviour is its `MaskedSchedule`, applied before every experience. The hooks and
/// the checkpoint state are the schedule's; the model is unchanged, so no resources.
protocol MaskedScheduleStrategy: StrategyPlugin {
    var schedule: MaskedSchedule { get set }
}

extension MaskedScheduleStrategy {
    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        schedule.apply(model: &model, context: context)
    }
    public func report() -> PluginReport { schedule.report(name: name) }
    public func checkpointState() -> PluginState { schedule.checkpointState() }
    /// Nothing beyond the model: the mask changes which parameters train.
    public var resources: PluginResources { .none }
    public mutating func restore(from state: PluginState) throws { try schedule.restore(from: state) }
}
