/// What the loop records about one trained experience (appended to `TrainingProgress` by `run`,
/// returned by `trainRound`).
public struct ExperienceRecord: Sendable, Equatable {
    /// Samples in the (possibly adjusted) training set.
    public var trainSetSize = 0
    /// Trainable parameters during the experience.
    public var trainableParameters = 0
    /// Mean task loss per epoch, and mean of the extra terms per epoch.
    public var epochLosses: [Double] = []
    public var epochPenalties: [Double] = []
    /// Rows processed over all epochs (including replayed rows).
    public var samplesProcessed = 0
    public var steps = 0
    /// Mini-batch gradient evaluations beyond one per step, each with the parameter update it
    /// feeds: an own-loop federated round's pFedMe inner steps (K per local step) or Per-FedAvg's
    /// further gradients (2 or 4 per meta-step). The energy model counts them as steps (their
    /// weight traffic), `steps` stays the paper's local steps.
    public var extraSteps = 0
    /// FLOPs the plugins added (per-step terms × steps + per-experience passes).
    public var extraFLOPs = 0
    /// Optimizer steps the pass planned (epochs × batches, or the steps budget); `steps` is
    /// fewer when early stopping or a FLOPs budget ended it.
    public var plannedSteps = 0
    /// Steps whose scaled gradients overflowed under mixed precision and were skipped
    /// (`LossScaler`); counted in `steps`.
    public var skippedSteps = 0

    public init() {}
}

extension TrainingProgress {
    /// Appends one trained experience's row (everything but its evaluation).
    mutating func append(_ record: ExperienceRecord) {
        trainSetSizes.append(record.trainSetSize)
        trainableParameters.append(record.trainableParameters)
        lossCurve.append(record.epochLosses)
        penaltyCurve.append(record.epochPenalties)
        samplesProcessed.append(record.samplesProcessed)
        steps.append(record.steps)
        extraFLOPs.append(record.extraFLOPs)
        plannedSteps.append(record.plannedSteps)
        skippedSteps.append(record.skippedSteps)
    }
}

/// The buffers one learner's steps need (network scratch, gradient, batch), kept between
/// `Trainer.trainRound` calls so that a worker training many clients one after another allocates
/// them once. Holds no learner state: any scratch may serve any trainer of the same spec.
public struct LoopScratch {
    var work: StepWorkspace?
    var batch: Batch?
    public init() {}
}

extension Trainer {
    /// Prepares the plugins for round-by-round training (`trainRound`), as `run` does before its
    /// first experience: `experienceCount` is the most rounds this learner will train (plugins
    /// that size per-experience state read it).
    public mutating func prepareRounds(dimension: Int, head: OutputHead, featureNames: [String],
                                       experienceCount: Int) throws {
        if head != model.spec.head {
            throw TrainingError.invalid("the data's output head (\(head)) differs from the model's (\(model.spec.head))")
        }
        for i in plugins.indices {
            let context = RunContext(seed: seed, pluginIndex: i, experienceCount: experienceCount, dimension: dimension,
                                     head: head, training: options, featureNames: featureNames)
            try plugins[i].prepare(model: &model, context: context)
        }
    }

    /// Trains one round on `context.experience`'s training set with the loop's own per-experience
    /// code (the same hooks in the same order as `run`; see `trainExperience`), without evaluating.
    /// The model, optimizer and plugin states carry over to the next call, so a federated client
    /// (or any caller that interleaves many learners) keeps learning continually between rounds.
    /// Shuffling draws from `shuffle`, which the caller owns (derive it from the client and round
    /// for results independent of scheduling).
    ///
    /// A caller that spreads one experience over several rounds (a federated client holding its
    /// current experience for a block of rounds) opens it once and concludes it once: `opens`
    /// false skips the plugins' `beforeExperience`, `concludes` false skips their
    /// `afterExperience` (and its FLOPs), which the caller then runs at the experience's end.
    public mutating func trainRound(context: ExperienceContext, pass: TrainingPass, shuffle: inout RandomSource,
                                    scratch: inout LoopScratch, opens: Bool = true,
                                    concludes: Bool = true) throws -> ExperienceRecord {
        // The data boundary of a round (as `run` checks a stream): shapes, labels in the head's range.
        let set = context.experience.train
        guard set.dimension == model.spec.inputs, set.features.count == set.count * set.dimension else {
            throw TrainingError.invalid("round data has \(set.dimension) features per row (\(set.features.count) values for \(set.count) rows); the model takes \(model.spec.inputs)")
        }
        let classes = Int32(model.spec.head.classCount)
        if let bad = set.labels.first(where: { $0 < 0 || $0 >= classes }) {
            throw TrainingError.invalid("round data has label \(bad); the model's head has classes 0..<\(classes)")
        }
        guard options.batchSize > 0 else { throw TrainingError.invalid("batch size must be > 0") }
        let rows = options.batchSize * 2
        if scratch.work == nil || scratch.batch?.dimension != model.spec.inputs {
            scratch.work = StepWorkspace(network: model.makeWorkspace(capacity: max(rows, options.evaluationBatchSize)))
            scratch.batch = Batch(dimension: model.spec.inputs, capacity: rows)
        }
        var work = scratch.work!
        var batch = scratch.batch!
        scratch.work = nil
        scratch.batch = nil
        defer {
            scratch.work = work
            scratch.batch = batch
        }
        work.active = nil
        return try trainExperience(context: context, pass: pass, work: &work, batch: &batch, shuffle: &shuffle,
                                   opens: opens, concludes: concludes)
    }
}

extension Trainer {
    /// The learner's state between rounds — model, trainable mask, optimizer, plugin and
    /// loss-scaler states — as a `TrainerCheckpoint` of `capacity` experiences with `roundsDone`
    /// done (its shuffle stream is unused: a round's shuffle belongs to the caller).
    /// `restoreRounds` puts it back on a learner built and `prepareRounds`-prepared the same way,
    /// which then trains its next round bit-identically to this one (federated checkpoints).
    public func roundCheckpoint(roundsDone: Int, capacity: Int) -> TrainerCheckpoint {
        var progress = TrainingProgress()
        progress.experiencesDone = roundsDone
        progress.shuffleState = RandomSource(seed: seed, stream: "shuffle").state
        progress.lossScalerState = lossScaler?.state ?? []
        return TrainerCheckpoint(
            seed: seed, experienceCount: capacity, parameters: model.parameters, trainable: model.trainable,
            optimizerFirst: optimizer.checkpointFirst, optimizerSecond: optimizer.checkpointSecond, optimizerSteps: optimizer.steps,
            pluginNames: plugins.map(\.name), pluginStates: learnerPluginStates(), progress: progress)
    }

    /// Restores a `roundCheckpoint`; throws `CheckpointError.mismatch` when it belongs to another
    /// learner (seed, strategy, model size).
    public mutating func restoreRounds(_ checkpoint: TrainerCheckpoint) throws {
        try restoreLearner(checkpoint)
    }
}
