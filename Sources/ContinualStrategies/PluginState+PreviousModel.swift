import ContinualCore

extension PluginState {
    /// The previous model a distilling plugin (LwF, iCaRL, BiC) checkpointed as
    /// `previous_parameters`, rebuilt on `template`; nil when none was saved.
    func previousModel(template: MLP?, plugin: String) throws -> MLP? {
        guard let p = floats["previous_parameters"] else { return nil }
        guard var model = template, model.parameterCount == p.count else {
            throw CheckpointError.mismatch("\(plugin)'s previous model has \(p.count) parameters, this model \(template?.parameterCount ?? 0)")
        }
        model.parameters = p
        return model
    }
}
