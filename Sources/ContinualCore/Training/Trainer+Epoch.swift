/// The parts of `trainExperience`: getting the plugins and optimizers ready for an experience,
/// the experience's budget, and one epoch of steps. Their order is the loop's (see
/// `trainExperience`); nothing here evaluates.
extension Trainer {
    /// Before the first step of an experience: the plugins' `beforeExperience`; the optimizer
    /// grows (a plugin grew the model) or resets; plugin-owned blocks' optimizers likewise; the
    /// step workspace; `adjustTrainingSet`; observers' `experienceWillTrain`. Returns the
    /// training set the steps draw from. `opens` false skips `beforeExperience` (an experience
    /// that continues from an earlier round).
    mutating func prepareExperience(context: ExperienceContext, work: inout StepWorkspace, opens: Bool = true) throws -> Samples {
        if opens { for p in plugins.indices { try plugins[p].beforeExperience(model: &model, context: context) } }
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
        if !observers.isEmpty {
            withPredictor(work.network, active: work.active) { predictor, observers in
                for o in observers.indices {
                    observers[o].experienceWillTrain(index: context.index, trainingSet: trainSet, own: context.experience.train,
                                                     predictor: &predictor)
                }
            }
        }
        return trainSet
    }

    /// Phases (`TrainingPhases`): (step, plugin, phase) in the order they begin.
    func phaseStarts(plannedSteps: Int, context: ExperienceContext) -> [(step: Int, plugin: Int, phase: Int)] {
        plugins.indices.flatMap { k in
            plugins[k].phaseStartsIfPhased(plannedSteps: plannedSteps, context: context).enumerated().map { (step: $0.element, plugin: k, phase: $0.offset + 1) }
        }.sorted { ($0.step, $0.plugin) < ($1.step, $1.plugin) }
    }

    /// One pass over `order` in batches: observers' `rowsWillTrain`, the batch and
    /// `extendBatch`, the scheduled learning rate, the step; stops early when the budget is spent.
    mutating func trainEpoch(_ epoch: Int, order: [Int], of trainSet: Samples, context: ExperienceContext, plan: ExperiencePlan,
                             cursor: inout EpochCursor, work: inout StepWorkspace, batch: inout Batch) throws -> EpochTotals {
        let i = context.index
        let schedule = options.learningRateSchedule
        var totals = EpochTotals()
        var position = 0
        while position < order.count {
            if plan.isExhausted(cursor) { break }
            if let next = cursor.phaseStarts.first, next.step <= cursor.steps {
                try beginPhases(at: cursor.steps, &cursor.phaseStarts, context: context, work: &work)
            }
            let stop = min(position + options.batchSize, order.count)
            if !observers.isEmpty {
                withPredictor(work.network, active: work.active) { predictor, observers in
                    for o in observers.indices {
                        observers[o].rowsWillTrain(order[position..<stop], of: trainSet, experience: i, predictor: &predictor)
                    }
                }
            }
            batch.removeAll()
            batch.append(rows: order[position..<stop], of: trainSet, route: context.route)
            batch.ownCount = batch.count
            position = stop
            for p in plugins.indices { plugins[p].extendBatch(&batch, context: context) }
            work.learningRate = schedule.isConstant ? nil
                : Float(plan.baseRate * schedule.factor(step: cursor.steps, epoch: epoch, plannedSteps: plan.plannedSteps))
            work.index = StepIndex(experience: i, epoch: epoch, stepInExperience: cursor.steps, stepInEpoch: totals.batches,
                                   stepsPerEpoch: plan.batchesPerEpoch)
            let (loss, penalty) = step(batch, experience: i, step: cursor.steps, work: &work)
            guard loss.isFinite, penalty.isFinite else {
                throw TrainingError.diverged(experience: i, epoch: epoch, loss: loss.isFinite ? penalty : loss)
            }
            totals.lossSum += loss
            totals.penaltySum += penalty
            cursor.flopsUsed += Double(batch.count) * plan.rowFLOPs + plan.stepOverhead
            totals.rows += batch.count
            totals.batches += 1
            cursor.steps += 1
        }
        return totals
    }
}

/// An experience's budget and costs: the pass resolved against its training set.
struct ExperiencePlan {
    let batchesPerEpoch: Int
    /// Epochs × batches, or the pass's step limit (the learning-rate schedule's length).
    let plannedSteps: Int
    let epochCount: Int
    let maxSteps: Int?
    let maxFLOPs: Double?
    /// The plugins' extra FLOPs per step, plugin-owned parameters' updates included.
    let stepFLOPs: Int
    /// A step's cost for the FLOPs budget: its rows' forward + backward, plus the optimizer's
    /// update and the plugins' per-step FLOPs (the cost model's terms).
    let rowFLOPs: Double
    let stepOverhead: Double
    /// The learning rate the schedule scales (it restarts with every experience).
    let baseRate: Double

    init(trainer t: Trainer, pass: TrainingPass, trainSet: Samples) {
        // Plugin-owned parameters take an optimizer update per step like the network's.
        stepFLOPs = t.plugins.reduce(0) { $0 + $1.resources.extraFLOPsPerStep + $1.resources.ownedParameters * t.optimizer.flopsPerParameter }
        batchesPerEpoch = (trainSet.count + t.options.batchSize - 1) / t.options.batchSize
        let (epochSteps, overflow) = pass.epochs.multipliedReportingOverflow(by: batchesPerEpoch)
        plannedSteps = min(pass.maxSteps ?? Int.max, overflow ? Int.max : epochSteps)
        baseRate = Double(t.optimizer.spec.learningRate)
        // A steps budget asks for as many epochs as it takes (`Int.max`); an empty training set
        // then gets the one empty epoch an epochs budget of 1 would give it.
        let bounded = pass.maxSteps != nil || pass.maxFLOPs != nil
        epochCount = bounded && trainSet.count == 0 ? min(pass.epochs, 1) : pass.epochs
        (maxSteps, maxFLOPs) = (pass.maxSteps, pass.maxFLOPs)
        rowFLOPs = Double(t.model.flopsPerTrainingSample)
        stepOverhead = Double(t.optimizer.flopsPerParameter * t.model.trainableCount + stepFLOPs)
    }

    /// Whether the step or FLOPs budget is spent.
    func isExhausted(_ cursor: EpochCursor) -> Bool {
        if let limit = maxSteps, cursor.steps >= limit { return true }
        if let limit = maxFLOPs, cursor.flopsUsed >= limit { return true }
        return false
    }
}

/// Where an experience's training stands: steps and FLOPs spent, samples processed, phases
/// still to begin.
struct EpochCursor {
    var phaseStarts: [(step: Int, plugin: Int, phase: Int)]
    var steps = 0
    var flopsUsed = 0.0
    var processed = 0
}

/// One epoch's sums: losses and penalties over its batches, rows and batches trained.
struct EpochTotals {
    var lossSum = 0.0
    var penaltySum = 0.0
    var rows = 0
    var batches = 0
}
