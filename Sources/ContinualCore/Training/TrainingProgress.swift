/// How far a run of the training loop has come: the results so far and the loop's own state.
///
/// This is the one value the loop updates as it goes; `TrainingOutcome` exposes it, and a
/// `TrainerCheckpoint` embeds it whole, so a new measurement is added here once and is then
/// reported, checkpointed and resumed without further edits.
public struct TrainingProgress: Sendable, Equatable {
    /// Experiences finished (the index of the next one to train).
    public var experiencesDone: Int = 0
    /// R[i][j]: accuracy on experience j's test set after training through experience i.
    public var accuracy: [[Double]] = []
    /// Accuracy of the run's own model at its initial weights, per experience (Avalanche's FWT
    /// baseline).
    public var initialAccuracy: [Double] = []
    /// Accuracy of an independently initialised model, per experience (GEM's b).
    public var randomAccuracy: [Double] = []
    /// The classification measures of every evaluation behind `accuracy` (same shape), and of the
    /// two baselines: balanced accuracy, macro-F1, AUROC, AUPRC and the confusion matrix.
    public var evaluations: [[EvaluationRecord]] = []
    public var initialEvaluation: [EvaluationRecord] = []
    public var randomEvaluation: [EvaluationRecord] = []
    /// Samples in each experience's (possibly adjusted, e.g. joint) training set.
    public var trainSetSizes: [Int] = []
    /// Samples actually processed per experience, over all epochs, including replayed rows.
    public var samplesProcessed: [Int] = []
    /// Optimizer steps per experience.
    public var steps: [Int] = []
    /// Mean task loss per epoch, per experience (fewer values when early stopping ended it).
    public var lossCurve: [[Double]] = []
    /// Mean of the extra terms per epoch (batch-loss terms + penalties), per experience.
    public var penaltyCurve: [[Double]] = []
    /// Trainable parameters during each experience.
    public var trainableParameters: [Int] = []
    /// FLOPs the plugins added per experience (`PluginResources`: per-step terms × steps + the
    /// per-experience pass, e.g. EWC's Fisher), for the training-energy estimate.
    public var extraFLOPs: [Int] = []
    /// Optimizer steps each experience's pass planned (`ExperienceRecord.plannedSteps`); may be
    /// empty (runs that assemble their rows themselves, checkpoints from before it existed).
    public var plannedSteps: [Int] = []
    /// Gradient evaluations per experience beyond `steps`, each reading and writing the weights
    /// like a step: a federated own-loop round's extra ones (pFedMe's K − 1 further inner steps,
    /// Per-FedAvg's second gradient). The energy and FLOP counts charge `steps + extraSteps`;
    /// `steps` stays the optimizer's (the paper's local steps). Empty when there are none.
    public var extraSteps: [Int] = []
    /// Gradient evaluations per experience: `steps` plus `extraSteps` (absent entries count 0).
    /// What a session's energy and training FLOPs charge (`DeviceReport`, `TrainingBudget`).
    public var gradientSteps: [Int] {
        steps.indices.map { steps[$0] + ($0 < extraSteps.count ? extraSteps[$0] : 0) }
    }
    /// Mixed-precision steps skipped per experience (`ExperienceRecord.skippedSteps`); may be empty.
    public var skippedSteps: [Int] = []
    /// The loss scaler's state (`LossScaler.state`) when a run stopped; empty without mixed precision.
    public var lossScalerState: [Double] = []
    public var trainSeconds: Double = 0
    public var evalSeconds: Double = 0
    /// State of the loop's shuffle stream (so a resumed run draws the same orders).
    public var shuffleState: [UInt64] = []
    /// Each loop observer's state, in order (the prequential probe's counters and curve).
    public var observerStates: [PluginState] = []

    public init() {}

    /// Checks that the per-experience lists agree with `experiencesDone` and `T` experiences.
    public func check(experienceCount T: Int) throws {
        let rows = [accuracy.count, evaluations.count, trainSetSizes.count, samplesProcessed.count, steps.count,
                    lossCurve.count, penaltyCurve.count, trainableParameters.count, extraFLOPs.count]
        guard (0...T).contains(experiencesDone), rows.allSatisfy({ $0 == experiencesDone }),
              initialAccuracy.count == T, randomAccuracy.count == T, accuracy.allSatisfy({ $0.count == T }),
              initialEvaluation.count == T, randomEvaluation.count == T, evaluations.allSatisfy({ $0.count == T }) else {
            throw CheckpointError.mismatch("the results so far do not have \(experiencesDone) rows of \(T) experiences")
        }
    }

    // MARK: Byte encoding (part of `TrainerCheckpoint.encoded()`)

    func encode(into w: inout ByteWriter) {
        w.int(experiencesDone)
        w.int(accuracy.count)
        accuracy.forEach { w.doubles($0) }
        w.doubles(initialAccuracy)
        w.doubles(randomAccuracy)
        w.int(evaluations.count)
        for row in evaluations { EvaluationRecord.encode(row, into: &w) }
        EvaluationRecord.encode(initialEvaluation, into: &w)
        EvaluationRecord.encode(randomEvaluation, into: &w)
        for list in [trainSetSizes, samplesProcessed, steps, trainableParameters, extraFLOPs] {
            w.int(list.count)
            list.forEach { w.int($0) }
        }
        for curves in [lossCurve, penaltyCurve] {
            w.int(curves.count)
            curves.forEach { w.doubles($0) }
        }
        w.doubles([trainSeconds, evalSeconds])
        w.int(shuffleState.count)
        shuffleState.forEach { w.u64($0) }
        w.int(observerStates.count)
        observerStates.forEach { $0.encode(into: &w) }
        // Appended after the original layout, so checkpoints written before these lists existed
        // still read (they end here).
        for list in [plannedSteps, skippedSteps] {
            w.int(list.count)
            list.forEach { w.int($0) }
        }
        w.doubles(lossScalerState)
        // Only when there are some, so every checkpoint without them keeps its bytes.
        if !extraSteps.isEmpty {
            w.int(extraSteps.count)
            extraSteps.forEach { w.int($0) }
        }
    }

    init(reading r: inout ByteReader) throws {
        experiencesDone = try r.int()
        accuracy = try (0..<r.count(elementSize: 8)).map { _ in try r.doubles() }
        initialAccuracy = try r.doubles()
        randomAccuracy = try r.doubles()
        evaluations = try (0..<r.count(elementSize: 8)).map { _ in try EvaluationRecord.decodeList(&r) }
        initialEvaluation = try EvaluationRecord.decodeList(&r)
        randomEvaluation = try EvaluationRecord.decodeList(&r)
        var lists: [[Int]] = []
        for _ in 0..<5 { lists.append(try (0..<r.count(elementSize: 8)).map { _ in try r.int() }) }
        (trainSetSizes, samplesProcessed, steps, trainableParameters, extraFLOPs) = (lists[0], lists[1], lists[2], lists[3], lists[4])
        lossCurve = try (0..<r.count(elementSize: 8)).map { _ in try r.doubles() }
        penaltyCurve = try (0..<r.count(elementSize: 8)).map { _ in try r.doubles() }
        let times = try r.doubles()
        guard times.count == 2 else { throw CheckpointError.truncated("wall times missing") }
        (trainSeconds, evalSeconds) = (times[0], times[1])
        shuffleState = try (0..<r.count(elementSize: 8)).map { _ in try r.u64() }
        observerStates = try (0..<r.count()).map { _ in try PluginState(reading: &r) }
        if !r.atEnd {
            plannedSteps = try (0..<r.count(elementSize: 8)).map { _ in try r.int() }
            skippedSteps = try (0..<r.count(elementSize: 8)).map { _ in try r.int() }
            lossScalerState = try r.doubles()
        }
        if !r.atEnd {
            extraSteps = try (0..<r.count(elementSize: 8)).map { _ in try r.int() }
        }
    }
}
