
extension Trainer {
    /// Prepares the plugins (list order) for a run of `T` experiences, then checks that the data's
    /// output head is the model's and that the model's sizes are sound.
    mutating func preparePlugins(experienceCount T: Int, dimension: Int, head: OutputHead, featureNames: [String]) throws {
        for i in plugins.indices {
            let context = RunContext(seed: seed, pluginIndex: i, experienceCount: T, dimension: dimension, head: head,
                                     training: options, featureNames: featureNames)
            try plugins[i].prepare(model: &model, context: context)
        }
        let gaters = plugins.filter { $0 is any ActivationGate }.map(\.name)
        if gaters.count > 1 {
            throw TrainingError.invalid("at most one method of a strategy may gate hidden units; \(gaters.joined(separator: " and ")) both do")
        }
        let growers = plugins.filter { $0 is any ColumnNetwork }.map(\.name)
        if growers.count > 1 || (!growers.isEmpty && !gaters.isEmpty) {
            throw TrainingError.invalid("at most one method of a strategy may grow columns beside the model, and not with one that gates "
                + "its hidden units; got \((growers + gaters).joined(separator: " and "))")
        }
        // The active-output mask and the labels' range come from the stream's head; the loss
        // reads them over the model's head, so the two must be the same.
        if head != model.spec.head {
            throw TrainingError.invalid("the stream's output head (\(head)) differs from the model's (\(model.spec.head))")
        }
    }

    /// Puts the checkpoint's model, optimizer, plugin and observer states in place (after `prepare`).
    mutating func restore(_ cp: TrainerCheckpoint, experienceCount T: Int) throws {
        guard cp.experienceCount == T else {
            throw CheckpointError.mismatch("\(cp.experienceCount) experiences (\(cp.experiencesDone) done), this stream has \(T)")
        }
        guard cp.progress.observerStates.count == observers.count else {
            throw CheckpointError.mismatch("\(cp.progress.observerStates.count) observer states, this run has \(observers.count) observers")
        }
        try cp.progress.check(experienceCount: T)
        try restoreLearner(cp)
        for o in observers.indices { try observers[o].restore(from: cp.progress.observerStates[o]) }
    }

    /// Checks that `cp` belongs to this learner (seed, strategy, model size, shuffle state) and
    /// puts its model, optimizer and plugin states in place; shared by `run` and `resumeSessions`.
    mutating func restoreLearner(_ cp: TrainerCheckpoint) throws {
        guard cp.seed == seed else { throw CheckpointError.mismatch("seed \(cp.seed), this run has \(seed)") }
        guard cp.pluginNames == plugins.map(\.name), cp.pluginStates.count == plugins.count else {
            throw CheckpointError.mismatch("strategy \(cp.pluginNames), this run has \(plugins.map(\.name))")
        }
        guard cp.parameters.count == model.parameterCount, (cp.trainable?.count ?? model.parameterCount) == model.parameterCount else {
            throw CheckpointError.mismatch("\(cp.parameters.count) parameters, this model has \(model.parameterCount)")
        }
        guard cp.progress.shuffleState.count == 4 else { throw CheckpointError.mismatch("bad shuffle state") }
        model.parameters = cp.parameters
        model.trainable = cp.trainable
        try restoreLossScaler(cp.progress.lossScalerState)
        optimizer = try Optimizer(spec: optimizer.spec, parameterCount: model.parameterCount,
                                  matrices: model.weightMatrices, first: cp.optimizerFirst,
                                  second: cp.optimizerSecond, steps: cp.optimizerSteps)
        blockOptimizers = [:]
        for i in plugins.indices {
            var state = cp.pluginStates[i]
            if let optimizerState = try Trainer.takeBlockOptimizer(from: &state, spec: optimizer.spec) {
                blockOptimizers[i] = optimizerState
            }
            try plugins[i].restore(from: state)
        }
    }

    /// The plugins' checkpoint states, each with the loop's optimizer state of its parameter block
    /// (`ParameterBlockOwner`) under reserved keys.
    func learnerPluginStates() -> [PluginState] {
        plugins.indices.map { k in
            var state = plugins[k].checkpointState()
            if let o = blockOptimizers[k] {
                state.floats[Trainer.blockKey + "first"] = o.checkpointFirst
                state.floats[Trainer.blockKey + "second"] = o.checkpointSecond
                if o.first.count != o.parameterCount {
                    // Adafactor and 8-bit Adam: `first` does not give the block's size.
                    state.ints[Trainer.blockKey + "count"] = [Int64(o.parameterCount)]
                }
                state.ints[Trainer.blockKey + "steps"] = [Int64(o.steps)]
            }
            return state
        }
    }

    static let blockKey = "loop.parameter_block_optimizer."

    /// Removes the block optimizer's keys from `state` and rebuilds the optimizer they describe.
    static func takeBlockOptimizer(from state: inout PluginState, spec: OptimizerSpec) throws -> Optimizer? {
        guard let first = state.floats.removeValue(forKey: blockKey + "first") else { return nil }
        let second = state.floats.removeValue(forKey: blockKey + "second") ?? []
        let steps = state.ints.removeValue(forKey: blockKey + "steps")?.first ?? 0
        let count = state.ints.removeValue(forKey: blockKey + "count")?.first.map { Int($0) } ?? first.count
        return try Optimizer(spec: spec, parameterCount: count, first: first, second: second, steps: Int(steps))
    }

    /// Route used for experience `index`: its own head on multi-route models, else 0.
    @inline(__always)
    func route(for index: Int, _ model: MLP) -> Int {
        model.routeCount > 1 ? index : 0
    }
}
