/// Capability: a network that grows by columns beside the model, each new column reading the
/// hidden activations of the earlier ones through lateral connections (Progressive Neural
/// Networks, Rusu et al. 2016: the model is column 0, the plugin owns the later columns).
///
/// Per forward pass (step 3 of the order stated on `StrategyPlugin`), the loop runs the model's
/// own forward pass through the pass's route, so the model's hidden activations are in
/// `workspace.hiddenActivations(l)`, then calls `columnForward`. When it returns true the
/// plugin has written its network's logits over `workspace.logits`: the task loss and every
/// `BatchLossTerm` (step 4) see those logits, and instead of the model's backward pass the loop
/// calls `columnBackward` with ∂(data loss)/∂logits; the plugin adds the gradient of the column
/// being trained into its block gradient (`ParameterBlockOwner`: the run's optimizer and
/// schedule update it) and the gradient of the model's parameters, if any reach them, into
/// `gradient`. When it returns false the pass is the model's alone (column 0 trains itself).
/// At most one plugin of a strategy may grow columns, and not beside an `ActivationGate` (the
/// loop refuses both). Evaluation is the plugin's own (`PredictionOverride`).
public protocol ColumnNetwork: ParameterBlockOwner {
    /// Forward through the plugin's columns for `count` rows of `input`; true when it wrote the
    /// logits (`workspace.logits`, [count × logits]).
    mutating func columnForward(model: MLP, input: UnsafePointer<Float>, count: Int, route: Int,
                                workspace: Workspace, step: StepIndex) -> Bool
    /// Backward from `logitGradient` ([count × logits]) of the last `columnForward` that
    /// returned true: adds into `parameterBlockGradient`, and into `gradient` (the model's).
    mutating func columnBackward(model: MLP, logitGradient: UnsafePointer<Float>, count: Int, route: Int,
                                 workspace: Workspace, gradient: UnsafeMutablePointer<Float>)
}

extension StrategyPlugin {
    mutating func callColumnForward(model: MLP, input: UnsafePointer<Float>, count: Int, route: Int,
                                    workspace: Workspace, step: StepIndex) -> Bool {
        guard let type = Self.self as? any ColumnNetwork.Type else { return false }
        return withUnsafeMutablePointer(to: &self) {
            Self.columnForward(type, UnsafeMutableRawPointer($0), model, input, count, route, workspace, step)
        }
    }
    private static func columnForward<T: ColumnNetwork>(_: T.Type, _ p: UnsafeMutableRawPointer, _ model: MLP,
                                                        _ input: UnsafePointer<Float>, _ count: Int, _ route: Int,
                                                        _ ws: Workspace, _ step: StepIndex) -> Bool {
        p.assumingMemoryBound(to: T.self).pointee.columnForward(model: model, input: input, count: count, route: route,
                                                                workspace: ws, step: step)
    }

    mutating func callColumnBackward(model: MLP, logitGradient: UnsafePointer<Float>, count: Int, route: Int,
                                     workspace: Workspace, gradient: UnsafeMutablePointer<Float>) {
        guard let type = Self.self as? any ColumnNetwork.Type else { return }
        withUnsafeMutablePointer(to: &self) {
            Self.columnBackward(type, UnsafeMutableRawPointer($0), model, logitGradient, count, route, workspace, gradient)
        }
    }
    private static func columnBackward<T: ColumnNetwork>(_: T.Type, _ p: UnsafeMutableRawPointer, _ model: MLP,
                                                         _ g: UnsafePointer<Float>, _ count: Int, _ route: Int,
                                                         _ ws: Workspace, _ gradient: UnsafeMutablePointer<Float>) {
        p.assumingMemoryBound(to: T.self).pointee.columnBackward(model: model, logitGradient: g, count: count, route: route,
                                                                 workspace: ws, gradient: gradient)
    }
}
