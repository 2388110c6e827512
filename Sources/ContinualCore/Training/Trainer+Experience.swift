
extension Trainer {
    /// One experience's training, exactly as the loop does it (`run` and `trainRound` both call
    /// this): the plugins' `beforeExperience`; the optimizer grows or resets; `adjustTrainingSet`;
    /// observers' `experienceWillTrain`; the pass's epochs of steps (observers' `rowsWillTrain`
    /// before each, `extendBatch`, the step in hook order); divergence checks after each epoch;
    /// the plugins' `afterExperience`. No evaluation. `opens` / `concludes` false skip the
    /// plugins' `beforeExperience` / `afterExperience` (see `trainRound`).
    mutating func trainExperience(context: ExperienceContext, pass: TrainingPass, work: inout StepWorkspace,
                                  batch: inout Batch, shuffle shuffleRNG: inout RandomSource,
                                  opens: Bool = true, concludes: Bool = true) throws -> ExperienceRecord {
        let i = context.index
        var record = ExperienceRecord()
        if options.precision.isMixed { try preparePrecision() }
        let skippedBefore = lossScaler?.skippedSteps ?? 0
        let trainSet = try prepareExperience(context: context, work: &work, opens: opens)
        record.trainSetSize = trainSet.count
        record.trainableParameters = model.trainableCount
        let plan = ExperiencePlan(trainer: self, pass: pass, trainSet: trainSet)
        var order = Array(0..<trainSet.count)
        var cursor = EpochCursor(phaseStarts: phaseStarts(plannedSteps: plan.plannedSteps, context: context))
        var monitor = pass.earlyStopping.map(EarlyStopping.Monitor.init)
        for epoch in 0..<plan.epochCount {
            if pass.shuffle { shuffleRNG.shuffle(&order) }
            let totals = try trainEpoch(epoch, order: order, of: trainSet, context: context, plan: plan,
                                        cursor: &cursor, work: &work, batch: &batch)
            cursor.processed += totals.rows
            let epochLoss = totals.rows > 0 ? totals.lossSum / Double(totals.rows) : .nan
            if let limit = options.divergenceLoss, epochLoss > limit {
                throw TrainingError.diverged(experience: i, epoch: epoch, loss: epochLoss)
            }
            if !model.parameters.allSatisfy({ $0.isFinite }) {
                throw TrainingError.diverged(experience: i, epoch: epoch, loss: .nan)
            }
            record.epochLosses.append(epochLoss)
            record.epochPenalties.append(totals.batches > 0 ? totals.penaltySum / Double(totals.batches) : 0)
            if monitor?.shouldStop(after: epochLoss) == true { break }
            if plan.isExhausted(cursor) { break }
        }
        record.samplesProcessed = cursor.processed
        record.steps = cursor.steps
        record.plannedSteps = plan.plannedSteps == Int.max ? -1 : plan.plannedSteps
        record.skippedSteps = (lossScaler?.skippedSteps ?? 0) - skippedBefore
        record.extraFLOPs = plan.stepFLOPs * cursor.steps
        guard concludes else { return record }
        for p in plugins.indices { try plugins[p].afterExperience(model: &model, context: context, workspace: work.network) }
        record.extraFLOPs += plugins.reduce(0) { $0 + $1.resources.extraFLOPsPerExperience }
        return record
    }

    /// Trains experience `i` of `experiences` through `trainExperience(context:…)` and appends its
    /// row to `progress`, tracking the classes seen so far (`active_outputs: "seen"`): the form the
    /// on-device runtime's open-ended sessions (`trainSession`) use.
    mutating func trainExperience(_ i: Int, of experiences: [Experience], pass: TrainingPass,
                                  progress: inout TrainingProgress, shuffle shuffleRNG: inout RandomSource,
                                  work: inout StepWorkspace, batch: inout Batch, seenClasses: inout [Bool]?) throws {
        let context = ExperienceContext(index: i, experiences: experiences, route: Int32(route(for: i, model)))
        if var seen = seenClasses {
            for y in experiences[i].train.labels where y >= 0 && Int(y) < seen.count { seen[Int(y)] = true }
            seenClasses = seen
            work.active = seen
        }
        let record = try trainExperience(context: context, pass: pass, work: &work, batch: &batch, shuffle: &shuffleRNG)
        progress.append(record)
    }

    /// Hands the observers a `Predictor` over the current model and the plugins (moved in and
    /// back out, so nothing is copied).
    mutating func withPredictor(_ ws: Workspace, active: [Bool]?,
                                        _ body: (inout Predictor, inout [any LoopObserver]) -> Void) {
        var predictor = Predictor(model: model, plugins: plugins, workspace: ws, active: active)
        plugins = []
        body(&predictor, &observers)
        plugins = predictor.plugins
    }
}
