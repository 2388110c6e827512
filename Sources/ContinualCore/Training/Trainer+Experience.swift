
extension Trainer {
    /// One experience's training, exactly as the loop does it (`run` and `trainRound` both call
    /// this): the plugins' `beforeExperience`; the optimizer grows or resets; `adjustTrainingSet`;
    /// observers' `experienceWillTrain`; the pass's epochs of steps (observers' `rowsWillTrain`
    /// before each, `extendBatch`, the step in hook order); divergence checks after each epoch;
    /// the plugins' `afterExperience`. No evaluation.
    mutating func trainExperience(context: ExperienceContext, pass: TrainingPass, work: inout StepWorkspace,
                                  batch: inout Batch, shuffle shuffleRNG: inout RandomSource) throws -> ExperienceRecord {
        let i = context.index
        var record = ExperienceRecord()
        if options.precision.isMixed { try preparePrecision() }
        let skippedBefore = lossScaler?.skippedSteps ?? 0
        for p in plugins.indices { try plugins[p].beforeExperience(model: &model, context: context) }
        if optimizer.parameterCount != model.parameterCount {
            // A plugin grew the model (e.g. a new adapter): state restarts at the new size.
            optimizer = Optimizer(spec: optimizer.spec, parameterCount: model.parameterCount,
                                  matrices: model.weightMatrices)
        } else if options.resetOptimizerPerExperience {
            optimizer.reset()
        }
        for k in plugins.indices {
            guard let n = plugins[k].parameterBlockCount else { continue }
            if blockOptimizers[k]?.parameterCount != n {
                blockOptimizers[k] = Optimizer(spec: optimizer.spec, parameterCount: n)
            } else if options.resetOptimizerPerExperience || plugins[k].restartsBlockOptimizer {
                blockOptimizers[k]?.reset()
            }
        }
        work.prepare(parameterCount: model.parameterCount, plugins: plugins, rows: options.batchSize * 2,
                     logitCount: model.logitCount)
        var trainSet = context.experience.train
        for p in plugins.indices { plugins[p].adjustTrainingSet(&trainSet, context: context) }
        record.trainSetSize = trainSet.count
        record.trainableParameters = model.trainableCount
        if !observers.isEmpty {
            withPredictor(work.network, active: work.active) { predictor, observers in
                for o in observers.indices {
                    observers[o].experienceWillTrain(index: i, trainingSet: trainSet, own: context.experience.train,
                                                     predictor: &predictor)
                }
            }
        }

        // Plugin-owned parameters take an optimizer update per step like the network's.
        let stepFLOPs = plugins.reduce(0) { $0 + $1.resources.extraFLOPsPerStep + $1.resources.ownedParameters * optimizer.flopsPerParameter }
        var order = Array(0..<trainSet.count)
        var processed = 0
        var steps = 0
        var monitor = pass.earlyStopping.map(EarlyStopping.Monitor.init)
        // The learning-rate schedule restarts with every experience; its length is the
        // planned steps (epochs × batches, or the pass's step limit).
        let schedule = options.learningRateSchedule
        let batchesPerEpoch = (trainSet.count + options.batchSize - 1) / options.batchSize
        let (epochSteps, overflow) = pass.epochs.multipliedReportingOverflow(by: batchesPerEpoch)
        let plannedSteps = min(pass.maxSteps ?? Int.max, overflow ? Int.max : epochSteps)
        let baseRate = Double(optimizer.spec.learningRate)
        // A steps budget asks for as many epochs as it takes (`Int.max`); an empty training set
        // then gets the one empty epoch an epochs budget of 1 would give it.
        let bounded = pass.maxSteps != nil || pass.maxFLOPs != nil
        let epochCount = bounded && trainSet.count == 0 ? min(pass.epochs, 1) : pass.epochs
        // A FLOPs budget: each step costs its rows' forward + backward, the optimizer's update and
        // the plugins' per-step FLOPs (the cost model's terms).
        var flopsUsed = 0.0
        let rowFLOPs = Double(model.flopsPerTrainingSample)
        let stepOverhead = Double(optimizer.flopsPerParameter * model.trainableCount + stepFLOPs)
        // Phases (`TrainingPhases`): (step, plugin, phase) in the order they begin.
        var phaseStarts = plugins.indices.flatMap { k in
            plugins[k].phaseStartsIfPhased(plannedSteps: plannedSteps, context: context).enumerated().map { (step: $0.element, plugin: k, phase: $0.offset + 1) }
        }.sorted { ($0.step, $0.plugin) < ($1.step, $1.plugin) }
        epochs: for epoch in 0..<epochCount {
            if pass.shuffle { shuffleRNG.shuffle(&order) }
            var lossSum = 0.0, penaltySum = 0.0, rows = 0, batches = 0
            var position = 0
            while position < order.count {
                if let limit = pass.maxSteps, steps >= limit { break }
                if let limit = pass.maxFLOPs, flopsUsed >= limit { break }
                if let next = phaseStarts.first, next.step <= steps {
                    try beginPhases(at: steps, &phaseStarts, context: context, work: &work)
                }
                let stop = min(position + options.batchSize, order.count)
                if !observers.isEmpty {
                    withPredictor(work.network, active: work.active) { predictor, observers in
                        for o in observers.indices {
                            observers[o].rowsWillTrain(order[position..<stop], of: trainSet, experience: i,
                                                       predictor: &predictor)
                        }
                    }
                }
                batch.removeAll()
                batch.append(rows: order[position..<stop], of: trainSet, route: context.route)
                batch.ownCount = batch.count
                position = stop
                for p in plugins.indices { plugins[p].extendBatch(&batch, context: context) }
                work.learningRate = schedule.isConstant ? nil
                    : Float(baseRate * schedule.factor(step: steps, epoch: epoch, plannedSteps: plannedSteps))
                work.index = StepIndex(experience: i, epoch: epoch, stepInExperience: steps, stepInEpoch: batches,
                                       stepsPerEpoch: batchesPerEpoch)
                let (loss, penalty) = step(batch, experience: i, step: steps, work: &work)
                guard loss.isFinite, penalty.isFinite else {
                    throw TrainingError.diverged(experience: i, epoch: epoch, loss: loss.isFinite ? penalty : loss)
                }
                lossSum += loss
                penaltySum += penalty
                flopsUsed += Double(batch.count) * rowFLOPs + stepOverhead
                rows += batch.count
                batches += 1
                steps += 1
            }
            processed += rows
            let epochLoss = rows > 0 ? lossSum / Double(rows) : .nan
            if let limit = options.divergenceLoss, epochLoss > limit {
                throw TrainingError.diverged(experience: i, epoch: epoch, loss: epochLoss)
            }
            if !model.parameters.allSatisfy({ $0.isFinite }) {
                throw TrainingError.diverged(experience: i, epoch: epoch, loss: .nan)
            }
            record.epochLosses.append(epochLoss)
            record.epochPenalties.append(batches > 0 ? penaltySum / Double(batches) : 0)
            if monitor?.shouldStop(after: epochLoss) == true { break epochs }
            if let limit = pass.maxSteps, steps >= limit { break epochs }
            if let limit = pass.maxFLOPs, flopsUsed >= limit { break epochs }
        }
        record.samplesProcessed = processed
        record.steps = steps
        record.plannedSteps = plannedSteps == Int.max ? -1 : plannedSteps
        record.skippedSteps = (lossScaler?.skippedSteps ?? 0) - skippedBefore
        for p in plugins.indices { try plugins[p].afterExperience(model: &model, context: context, workspace: work.network) }
        record.extraFLOPs = stepFLOPs * steps + plugins.reduce(0) { $0 + $1.resources.extraFLOPsPerExperience }
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
