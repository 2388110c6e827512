/// Where an open-ended run of sessions stands between two sessions: what the loop itself carries
/// besides the model, optimizer and plugin states (the on-device runtime's view of the loop).
///
/// A scheduled research run knows all its sessions in advance and hands them to
/// `run(_:source:resumingFrom:stopAfter:)` as the experiences of a `SessionSource`. A device
/// learns its sessions one at a time; `Trainer.beginSessions` and `Trainer.trainSession` train
/// them through the same per-experience code (`trainExperience`), so session k of an open-ended
/// run is bit-identical to experience k of the research run with the same `capacity`.
public struct SessionLoopState: Sendable, Equatable {
    /// The number of sessions the plugins were prepared for (`RunContext.experienceCount`): the
    /// research run's session count. Plugins with one copy per experience (adapters, LoRA with
    /// task routing) size themselves by it, and such a model cannot train more sessions.
    public var capacity: Int
    /// Sessions trained so far (the index of the next one).
    public var sessionsDone: Int
    /// The loop's shuffle stream (epoch orders), continued across sessions as in `run`.
    public var shuffleState: [UInt64]
    /// Classes seen in training so far, when `TrainingOptions.activeOutputs` is `.seen` on a
    /// multiclass head (nil otherwise).
    public var seenClasses: [Bool]?

    /// A loop state (normally made by `Trainer.beginSessions` or `Trainer.resumeSessions`).
    public init(capacity: Int, sessionsDone: Int, shuffleState: [UInt64], seenClasses: [Bool]?) {
        self.capacity = capacity
        self.sessionsDone = sessionsDone
        self.shuffleState = shuffleState
        self.seenClasses = seenClasses
    }
}

extension Trainer {
    /// Prepares the plugins for an open-ended run of at most `capacity` sessions over samples of
    /// `dimension` features and `head`, exactly as `run` prepares them for a stream of `capacity`
    /// experiences. Call once on a fresh Trainer (then `trainSession` per session), or before
    /// `resumeSessions`.
    public mutating func beginSessions(capacity: Int, dimension: Int, head: OutputHead,
                                       featureNames: [String]) throws -> SessionLoopState {
        guard capacity > 0 else { throw TrainingError.invalid("the session capacity must be ≥ 1, got \(capacity)") }
        guard options.epochs >= 0, options.batchSize > 0 else {
            throw TrainingError.invalid("epochs must be ≥ 0 and batch size > 0")
        }
        guard dimension == model.spec.inputs else {
            throw TrainingError.invalid("the samples have \(dimension) features, the model \(model.spec.inputs) inputs")
        }
        try preparePlugins(experienceCount: capacity, dimension: dimension, head: head, featureNames: featureNames)
        if let e = model.spec.sizeError() { throw TrainingError.invalid(e) }
        // A plugin grew the model in `prepare` (adapters, LoRA): the optimizer takes the new size
        // now rather than at the first session, so that a checkpoint taken before any session
        // restores; its state is fresh either way, as `trainExperience` would make it.
        if optimizer.parameterCount != model.parameterCount {
            optimizer = Optimizer(spec: optimizer.spec, parameterCount: model.parameterCount, matrices: model.weightMatrices)
        }
        var seen: [Bool]? = nil
        if options.activeOutputs == .seen, case .multiclass(let k) = head { seen = [Bool](repeating: false, count: k) }
        return SessionLoopState(capacity: capacity, sessionsDone: 0,
                                shuffleState: RandomSource(seed: seed, stream: "shuffle").state, seenClasses: seen)
    }

    /// Trains one session on `samples` (its training set) as experience `state.sessionsDone`:
    /// the plugins' hooks, the epochs of a `SessionSource`, divergence checks and the shuffle
    /// stream exactly as in a scheduled `run`; no evaluation (a device has no test set). `history`
    /// holds the earlier sessions, one per index, for plugins that read them (joint training);
    /// pass empty-sample placeholders when the strategy keeps its own memory. Returns the
    /// session's row of progress (training-set size, steps, rows, loss curve, extra FLOPs).
    ///
    /// Throws `TrainingError.invalid` for bad data (labels, dimension) or when a model with one
    /// copy per session has used up `state.capacity`, and `TrainingError.diverged` as `run` does;
    /// on a throw the caller should discard this Trainer value (keep its copy from before).
    public mutating func trainSession(_ samples: Samples, history: [Experience],
                                      state: inout SessionLoopState) throws -> TrainingProgress {
        let k = state.sessionsDone
        guard history.count == k else {
            throw TrainingError.invalid("session \(k) needs \(k) earlier sessions in its history, got \(history.count)")
        }
        if model.routeCount > 1 && k >= state.capacity {
            throw TrainingError.invalid("the strategy keeps one copy per session and all \(state.capacity) are used; "
                                        + "start a model with a larger session capacity")
        }
        let session = Experience(index: k, name: "session_\(k)", train: samples, test: samples)
        do {
            try ExperienceStream(name: "sessions", featureNames: [], head: model.spec.head, experiences: [session])
                .validateData(source: "session \(k)", routeLimit: Int.max, dimension: model.spec.inputs)
        } catch let error as ScenarioError {
            throw TrainingError.invalid(error.description)
        }
        guard state.shuffleState.count == 4 else { throw TrainingError.invalid("bad shuffle state") }
        var work = StepWorkspace(network: model.makeWorkspace(capacity: max(options.batchSize * 2, options.evaluationBatchSize)))
        var batch = Batch(dimension: model.spec.inputs, capacity: options.batchSize * 2)
        var shuffle = RandomSource(state: state.shuffleState)
        var row = TrainingProgress()
        let experiences = history + [session]
        try trainExperience(k, of: experiences, pass: SessionSource(sessions: experiences).pass(experience: k, options: options),
                            progress: &row, shuffle: &shuffle, work: &work, batch: &batch, seenClasses: &state.seenClasses)
        state.shuffleState = shuffle.state
        state.sessionsDone = k + 1
        row.experiencesDone = 1
        return row
    }

    /// The learner state after `state.sessionsDone` sessions, as a `TrainerCheckpoint` (its
    /// `experienceCount` is the capacity, its progress holds only the position and the shuffle
    /// stream). `resumeSessions` reads it back.
    public func sessionCheckpoint(_ state: SessionLoopState) -> TrainerCheckpoint {
        var progress = TrainingProgress()
        progress.experiencesDone = state.sessionsDone
        progress.shuffleState = state.shuffleState
        return TrainerCheckpoint(
            seed: seed, experienceCount: state.capacity, parameters: model.parameters, trainable: model.trainable,
            optimizerFirst: optimizer.checkpointFirst, optimizerSecond: optimizer.checkpointSecond, optimizerSteps: optimizer.steps,
            pluginNames: plugins.map(\.name), pluginStates: learnerPluginStates(), progress: progress)
    }

    /// Restores a `sessionCheckpoint` on a Trainer built with the same spec, optimizer, options,
    /// plugins and seed, after `beginSessions` with the same capacity (which returned `fresh`).
    /// Throws `CheckpointError.mismatch` when the checkpoint belongs to another learner.
    public mutating func resumeSessions(from cp: TrainerCheckpoint, fresh: SessionLoopState,
                                        seenClasses: [Bool]?) throws -> SessionLoopState {
        guard cp.experienceCount == fresh.capacity else {
            throw CheckpointError.mismatch("session capacity \(cp.experienceCount), this model has \(fresh.capacity)")
        }
        guard cp.experiencesDone >= 0 else { throw CheckpointError.mismatch("negative session count") }
        guard (seenClasses?.count ?? -1) == (fresh.seenClasses?.count ?? -1) else {
            throw CheckpointError.mismatch("seen-class mask of \(seenClasses?.count ?? 0) classes, this model has \(fresh.seenClasses?.count ?? 0)")
        }
        try restoreLearner(cp)
        return SessionLoopState(capacity: fresh.capacity, sessionsDone: cp.experiencesDone,
                                shuffleState: cp.progress.shuffleState, seenClasses: seenClasses)
    }
}
