/// The training loop: trains a model experience by experience, calls the strategy plugins'
/// hooks in their stated order (see `StrategyPlugin`), lets observers watch, and after every
/// experience evaluates on every experience's test set (filling the accuracy matrix R).
///
/// There is one loop for every kind of run; a `WorkSource` says which experiences it trains and
/// how it passes over each (epochs, a prequential stream, device sessions, a federated local
/// round). Per experience the loop does, in this order: the plugins' `beforeExperience`; the
/// optimizer grows (if a plugin grew the model) or resets (if configured); the plugins'
/// `adjustTrainingSet`; observers' `experienceWillTrain`; the steps (observers' `rowsWillTrain`
/// before each); divergence checks after each epoch; the plugins' `afterExperience`; evaluation.
///
/// Deterministic: the model's initialisation, the random baseline, shuffling and each plugin
/// draw from separate streams derived from `seed`, so results are bit-identical across runs and
/// independent of how many runs execute in parallel. `run(_:source:resumingFrom:stopAfter:)` stops
/// after any experience and resumes bit-identically from the checkpoint it leaves.
public struct Trainer {
    public var model: MLP
    public var optimizer: Optimizer
    public var plugins: [any StrategyPlugin]
    /// Observers (prequential probe, session probe), called after the plugins, in order.
    public var observers: [any LoopObserver]
    public let options: TrainingOptions
    public let seed: UInt64
    /// Set when a run stopped before the end: the state to resume from.
    public private(set) var checkpoint: TrainerCheckpoint?
    /// The optimizers of plugin-owned parameter blocks (`ParameterBlockOwner`), by plugin index:
    /// the run's optimizer kind and hyper-parameters, their own moments.
    public internal(set) var blockOptimizers: [Int: Optimizer] = [:]
    /// Mixed precision's loss scale (`TrainingPrecision`); nil under float32.
    public internal(set) var lossScaler: LossScaler?

    /// Builds the model from `spec` with the run's "init" stream.
    public init(spec: MLPSpec, optimizer: OptimizerSpec, options: TrainingOptions,
                plugins: [any StrategyPlugin], observers: [any LoopObserver] = [], seed: UInt64) {
        var rng = RandomSource(seed: seed, stream: "init")
        let model = MLP(spec: spec, rng: &rng)
        self.model = model
        self.optimizer = Optimizer(spec: optimizer, parameterCount: model.parameterCount, matrices: model.weightMatrices)
        self.plugins = plugins
        self.observers = observers
        self.options = options
        self.seed = seed
    }

    /// Runs the whole stream in batch mode (`EpochSource`). Throws `TrainingError.diverged` when a
    /// loss becomes non-finite.
    public mutating func run(_ stream: ExperienceStream) throws -> TrainingOutcome {
        try run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: nil)
    }

    /// Batch mode with checkpoints (see `run(_:source:resumingFrom:stopAfter:)`).
    public mutating func run(_ stream: ExperienceStream, resumingFrom resume: TrainerCheckpoint?,
                             stopAfter: Int?) throws -> TrainingOutcome {
        try run(stream, source: EpochSource(), resumingFrom: resume, stopAfter: stopAfter)
    }

    /// Runs `source`'s experiences from `resumingFrom`'s position (or the start) through experience
    /// `stopAfter` (inclusive; nil = to the end). When it stops early, `checkpoint` holds the full
    /// learner state and the returned outcome covers the experiences done so far. A Trainer built
    /// with the same spec, optimizer, options, plugins, observers and seed and resumed from it gives
    /// bit-identical results.
    public mutating func run(_ stream: ExperienceStream, source: some WorkSource,
                             resumingFrom resume: TrainerCheckpoint?, stopAfter: Int?) throws -> TrainingOutcome {
        checkpoint = nil
        let experiences = source.experiences(of: stream)
        let T = experiences.count
        guard T > 0 else { throw TrainingError.invalid("the scenario has no experiences") }
        guard options.epochs >= 0, options.batchSize > 0 else {
            throw TrainingError.invalid("epochs must be ≥ 0 and batch size > 0")
        }
        try preparePlugins(experienceCount: T, dimension: stream.dimension, head: stream.head,
                           featureNames: stream.featureNames)
        if model.routeCount > 1 && model.routeCount < T {
            throw TrainingError.invalid("the model has \(model.routeCount) heads but the stream has \(T) experiences")
        }
        // The API boundary for data: labels, routes and features are checked here, once per run,
        // before any of them reaches the loss (row[label]) or the layer offsets (route).
        if let e = model.spec.sizeError() { throw TrainingError.invalid(e) }
        do {
            // Single-route models ignore routes (every layer has one copy); multi-route models
            // need every route to select one of their copies.
            try ExperienceStream(name: stream.name, featureNames: stream.featureNames, head: model.spec.head,
                                 experiences: experiences)
                .validateData(source: "scenario \"\(stream.name)\"", routeLimit: model.routeCount > 1 ? model.routeCount : Int.max,
                              dimension: model.spec.inputs)
        } catch let error as ScenarioError {
            throw TrainingError.invalid(error.description)
        }
        if let cp = resume { try restore(cp, experienceCount: T) }
        let first = resume?.experiencesDone ?? 0
        let end = min(T, (stopAfter ?? T - 1) + 1)
        if end < first {
            throw TrainingError.invalid("stop after experience \(end - 1) is before the checkpoint, which already holds experiences 0...\(first - 1)")
        }

        var work = StepWorkspace(network: model.makeWorkspace(capacity: max(options.batchSize * 2, options.evaluationBatchSize)))
        let clock = ContinuousClock()
        var evalTime = Duration.zero
        var trainTime = Duration.zero

        var progress = resume?.progress ?? TrainingProgress()
        var start = clock.now
        if let resume {
            trainTime = .seconds(resume.progress.trainSeconds)
            evalTime = .seconds(resume.progress.evalSeconds)
        } else {
            // Baselines: the run's own initial weights, and an independently initialised model.
            let initial = evaluateAll(experiences, workspace: work.network)
            try Self.requireFinite(initial, evaluation: "initial")
            progress.initialAccuracy = initial.map(\.accuracy)
            progress.initialEvaluation = initial.map(\.record)
            var baselineRNG = RandomSource(seed: seed, stream: "baseline.random")
            let randomModel = MLP(spec: model.spec, rng: &baselineRNG)
            // The random baseline is always the spec's plain network (b must not depend on the strategy).
            let rws = randomModel.makeWorkspace(capacity: options.evaluationBatchSize)
            let random = experiences.map {
                TestEvaluation(model: randomModel, samples: $0.test, route: route(for: $0.index, randomModel), workspace: rws)
            }
            try Self.requireFinite(random, evaluation: "random baseline")
            progress.randomAccuracy = random.map(\.accuracy)
            progress.randomEvaluation = random.map(\.record)
            evalTime += clock.now - start
        }

        // Active outputs ("seen"): the classes of the training sets of experiences 0...i.
        var seenClasses: [Bool]? = nil
        if options.activeOutputs == .seen, case .multiclass(let k) = stream.head {
            var seen = [Bool](repeating: false, count: k)
            for e in experiences[0..<first] { for y in e.train.labels where y >= 0 && Int(y) < k { seen[Int(y)] = true } }
            seenClasses = seen
        }
        var shuffleRNG = resume.map { RandomSource(state: $0.progress.shuffleState) } ?? RandomSource(seed: seed, stream: "shuffle")
        var batch = Batch(dimension: stream.dimension, capacity: options.batchSize * 2)
        var lastEvaluation: [TestEvaluation] = []

        for i in first..<end {
            start = clock.now
            try trainExperience(i, of: experiences, pass: source.pass(experience: i, options: options),
                                progress: &progress, shuffle: &shuffleRNG, work: &work, batch: &batch,
                                seenClasses: &seenClasses)
            trainTime += clock.now - start

            start = clock.now
            lastEvaluation = evaluateAll(experiences, workspace: work.network, active: seenClasses)
            try Self.requireFinite(lastEvaluation, evaluation: "after experience \(i)")
            progress.accuracy.append(lastEvaluation.map(\.accuracy))
            progress.evaluations.append(lastEvaluation.map(\.record))
            evalTime += clock.now - start
            progress.experiencesDone = i + 1
        }
        progress.trainSeconds = trainTime.seconds
        progress.evalSeconds = evalTime.seconds
        progress.shuffleState = shuffleRNG.state
        progress.observerStates = observers.map { $0.checkpointState() }
        var outcome = TrainingOutcome(progress: progress, testSizes: experiences.map(\.test.count), finalModel: model,
                                      pluginReports: plugins.map { ($0.name, $0.report()) },
                                      pluginResources: plugins.map(\.resources))
        if end == T {
            outcome.finalPredictions = lastEvaluation.map(\.predictions)
            outcome.finalScores = lastEvaluation.map(\.scores)
            outcome.finalLabels = experiences.map(\.test.labels)
        }
        if end < T {
            progress.lossScalerState = lossScaler?.state ?? []
            checkpoint = TrainerCheckpoint(
                seed: seed, experienceCount: T, parameters: model.parameters, trainable: model.trainable,
                optimizerFirst: optimizer.checkpointFirst, optimizerSecond: optimizer.checkpointSecond, optimizerSteps: optimizer.steps,
                pluginNames: plugins.map(\.name), pluginStates: learnerPluginStates(), progress: progress)
        }
        return outcome
    }

    /// Begins every phase due at `step` (`TrainingPhases`): the plugins' `beginPhase` in list
    /// order, then a fresh optimizer state and fresh step masks.
    private mutating func beginPhases(at step: Int, _ starts: inout [(step: Int, plugin: Int, phase: Int)],
                                      context: ExperienceContext, work: inout StepWorkspace) throws {
        let count = model.parameterCount
        while let next = starts.first, next.step <= step {
            starts.removeFirst()
            try plugins[next.plugin].callBeginPhase(next.phase, model: &model, context: context, workspace: work.network)
        }
        guard model.parameterCount == count else {
            throw TrainingError.invalid("a training phase may not change the model's size (\(count) → \(model.parameterCount) parameters)")
        }
        optimizer.reset()
        work.maskCache = [:]
    }

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
    private mutating func withPredictor(_ ws: Workspace, active: [Bool]?,
                                        _ body: (inout Predictor, inout [any LoopObserver]) -> Void) {
        var predictor = Predictor(model: model, plugins: plugins, workspace: ws, active: active)
        plugins = []
        body(&predictor, &observers)
        plugins = predictor.plugins
    }

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
    private mutating func restore(_ cp: TrainerCheckpoint, experienceCount T: Int) throws {
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

    /// One optimizer step on `batch`, in the hook order stated on `StrategyPlugin`; returns
    /// (Σ task loss over rows, extra terms = batch-loss terms + penalties).
    mutating func step(_ batch: Batch, experience: Int, step: Int, work: inout StepWorkspace) -> (Double, Double) {
        let n = batch.count
        let scale = 1 / Float(n)
        let caps = work.capabilities
        if !caps.batchLosses.isEmpty && work.identityRows.count < n { work.identityRows = Array(0..<n) }
        var loss = 0.0
        var extra = 0.0
        work.overflowed = false
        for k in caps.blockOwners { plugins[k].callZeroBlockGradient() }
        for k in caps.transforms { plugins[k].callWillComputeGradient(model: &model) }
        let r0 = batch.routes[0]
        var mixed = false
        if model.routeCount > 1 {
            for k in 1..<n where batch.routes[k] != r0 {
                mixed = true
                break
            }
        }
        if !mixed {
            batch.features.withUnsafeBufferPointer { xs in
                batch.labels.withUnsafeBufferPointer { ys in
                    let (l, e) = dataLoss(features: xs.baseAddress!, labels: ys.baseAddress!, count: n, route: Int(r0),
                                          rows: work.identityRows.isEmpty ? [] : work.identityRows[0..<n],
                                          batch: batch, scale: scale, experience: experience, work: &work)
                    loss += l
                    extra += e
                }
            }
        } else {
            // Rows of several tasks: one pass per route, each scaled by 1/n so that the sum is the
            // gradient of the batch mean.
            work.gradient.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
            for r in Set(batch.routes[0..<n]).sorted() {
                let idx = (0..<n).filter { batch.routes[$0] == r }
                var f = [Float]()
                f.reserveCapacity(idx.count * batch.dimension)
                for k in idx { f.append(contentsOf: batch.row(k)) }
                let l = idx.map { batch.labels[$0] }
                let (lr, er) = dataLoss(features: f, labels: l, count: idx.count, route: Int(r), rows: idx[...],
                                        batch: batch, scale: scale, experience: experience, work: &work, accumulate: true)
                loss += lr
                extra += er
            }
        }
        if !caps.transforms.isEmpty {
            work.gradient.withUnsafeMutableBufferPointer { g in
                for k in caps.transforms.reversed() { plugins[k].callDidComputeGradient(model: &model, gradient: g) }
            }
        }
        if !caps.observers.isEmpty {
            work.taskGradient.withUnsafeMutableBufferPointer { t in
                work.gradient.withUnsafeBufferPointer { g in t.baseAddress!.update(from: g.baseAddress!, count: g.count) }
            }
            work.before.withUnsafeMutableBufferPointer { b in
                model.parameters.withUnsafeBufferPointer { p in b.baseAddress!.update(from: p.baseAddress!, count: p.count) }
            }
        }
        if !caps.penalties.isEmpty {
            model.parameters.withUnsafeBufferPointer { p in
                work.gradient.withUnsafeMutableBufferPointer { g in
                    for k in caps.penalties { extra += plugins[k].callAddPenalty(parameters: p, gradient: g) }
                }
            }
        }
        if !caps.adjusters.isEmpty {
            let context = GradientContext(model: model, batch: batch, experienceIndex: experience, stepInExperience: step,
                                          epoch: work.index.epoch)
            work.gradient.withUnsafeMutableBufferPointer { g in
                for k in caps.adjusters { plugins[k].callAdjustGradient(g, context: context) }
            }
        }
        let mask = Trainer.mask(for: batch, model: model, cache: &work.maskCache)
        // Mixed precision: a step whose scaled gradients overflowed is skipped (`LossScaler`).
        let apply = options.precision.isMixed ? (lossScaler?.update(overflowed: work.overflowed) ?? true) : true
        if apply {
            work.gradient.withUnsafeBufferPointer { g in
                optimizer.step(parameters: &model.parameters, gradient: g.baseAddress!, trainable: mask,
                               learningRate: work.learningRate)
            }
            for k in caps.blockOwners {
                if var o = blockOptimizers[k] {
                    plugins[k].callStepBlock(&o, learningRate: work.learningRate)
                    blockOptimizers[k] = o
                }
            }
        }
        if !caps.observers.isEmpty {
            work.taskGradient.withUnsafeBufferPointer { t in
                work.gradient.withUnsafeBufferPointer { g in
                    work.before.withUnsafeBufferPointer { b in
                        model.parameters.withUnsafeBufferPointer { a in
                            let observation = StepObservation(taskGradient: t, totalGradient: g, parametersBefore: b,
                                                              parametersAfter: a, experienceIndex: experience,
                                                              stepInExperience: step, epoch: work.index.epoch)
                            for k in caps.observers { plugins[k].callAfterStep(observation) }
                        }
                    }
                }
            }
        }
        return (loss, extra)
    }

    /// Forward, task loss, batch-loss terms and backward for the rows of one route, adding the
    /// gradient into `work.gradient` (zeroed first unless `accumulate`). Without batch-loss terms
    /// this is exactly `MLP.lossAndGradient`.
    private mutating func dataLoss(features: UnsafePointer<Float>, labels: UnsafePointer<Int32>, count: Int, route: Int,
                                   rows: ArraySlice<Int>, batch: Batch, scale: Float, experience: Int,
                                   work: inout StepWorkspace, accumulate: Bool = false) -> (Double, Double) {
        if options.precision.isMixed {
            return lowPrecisionDataLoss(features: features, labels: labels, count: count, route: route, rows: rows,
                                        batch: batch, scale: scale, experience: experience, work: &work,
                                        accumulate: accumulate)
        }
        let ws = work.network
        let terms = work.capabilities.batchLosses
        let model = self.model
        let gater = work.capabilities.gate
        let gates = gater.flatMap { plugins[$0].callGates(route: route, step: work.index) }
        let columns = work.capabilities.column
        if let gates {
            if work.gateGradient.count != gates.count { work.gateGradient = [Float](repeating: 0, count: gates.count) }
            work.gateGradient.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        }
        let result: (Double, Double) = work.gradient.withUnsafeMutableBufferPointer { g in
            if !accumulate { g.update(repeating: 0) }
            if terms.isEmpty && gates == nil && columns == nil {
                guard let active = work.active else {
                    return (model.lossAndGradient(features: features, labels: labels, count: count, route: route,
                                                  scale: scale, workspace: ws, gradient: g.baseAddress!), 0)
                }
                return active.withUnsafeBufferPointer { a in
                    (model.lossAndGradient(features: features, labels: labels, count: count, route: route,
                                           scale: scale, workspace: ws, gradient: g.baseAddress!, active: a.baseAddress!), 0)
                }
            }
            guard count > 0 else { return (0.0, 0.0) }
            model.forward(features, count: count, route: route, workspace: ws, gates: gates)
            let replaced = columns.map {
                plugins[$0].callColumnForward(model: model, input: features, count: count, route: route, workspace: ws, step: work.index)
            } ?? false
            let L = model.logitCount
            if work.logits.count < count * L { work.logits = [Float](repeating: 0, count: count * L) }
            var extra = 0.0
            let loss = work.logits.withUnsafeMutableBufferPointer { copy in
                copy.baseAddress!.update(from: ws.logits, count: count * L)
                let loss = work.active.map { active in
                    active.withUnsafeBufferPointer { a in
                        Loss.lossAndLogitGradient(head: model.spec.head, logits: ws.logits, labels: labels,
                                                  count: count, scale: scale, active: a.baseAddress!)
                    }
                } ?? Loss.lossAndLogitGradient(head: model.spec.head, logits: ws.logits, labels: labels,
                                                count: count, scale: scale)
                let input = BatchLossInput(batch: batch, rows: rows, route: route, logits: UnsafePointer(copy.baseAddress!),
                                           logitGradient: ws.logits, logitCount: L, scale: scale, model: model,
                                           experienceIndex: experience, activeClasses: work.active,
                                           parameterGradient: g.baseAddress!)
                for k in terms { extra += plugins[k].callAddBatchLoss(input) }
                return loss
            }
            if let k = columns, replaced {
                plugins[k].callColumnBackward(model: model, logitGradient: ws.logits, count: count, route: route, workspace: ws,
                                              gradient: g.baseAddress!)
            } else if gates != nil {
                work.gateGradient.withUnsafeMutableBufferPointer { gg in
                    model.backward(logitGradient: ws.logits, count: count, route: route, workspace: ws, gradient: g.baseAddress!,
                                   gates: gates, gateGradient: gg.baseAddress!)
                }
            } else {
                model.backward(logitGradient: ws.logits, count: count, route: route, workspace: ws, gradient: g.baseAddress!)
            }
            return (loss, extra)
        }
        if let k = gater, gates != nil {
            work.gateGradient.withUnsafeBufferPointer { plugins[k].callDidBackward(gateGradient: $0, route: route, step: work.index) }
        }
        return result
    }

    /// The optimizer mask for `batch`: `model.trainable`, restricted on multi-route models to the
    /// shared parameters and the copies of the routes present (see `MLP.stepMask`).
    static func mask(for batch: Batch, model: MLP, cache: inout [[Int32]: [Bool]?]) -> [Bool]? {
        guard model.routeCount > 1 else { return model.trainable }
        let routes = Set(batch.routes[0..<batch.count]).sorted()
        if let cached = cache[routes] { return cached }
        let mask = model.stepMask(routes: routes)
        cache[routes] = mask
        return mask
    }

    /// Throws `TrainingError.nonFiniteOutputs` for the first test set with a NaN/±∞ output:
    /// its measures (AUROC, AUPRC, accuracy of an argmax over NaN) would be meaningless.
    public static func requireFinite(_ evaluations: [TestEvaluation], evaluation: String) throws {
        if let j = evaluations.firstIndex(where: { $0.nonFiniteOutputs > 0 }) {
            throw TrainingError.nonFiniteOutputs(evaluation: evaluation, experience: j, samples: evaluations[j].nonFiniteOutputs)
        }
    }

    /// Accuracy on every experience's test set, through the plugins' prediction override if any.
    private mutating func evaluateAll(_ experiences: [Experience], workspace ws: Workspace, active: [Bool]? = nil) -> [TestEvaluation] {
        Trainer.evaluations(model: model, plugins: &plugins, experiences: experiences, workspace: ws, active: active)
    }

    /// Accuracy on every experience's test set: the first plugin whose `PredictionOverride`
    /// answers decides, else the model through the experience's route.
    public static func evaluate(model: MLP, plugins: inout [any StrategyPlugin], experiences: [Experience],
                                workspace ws: Workspace, active: [Bool]? = nil) -> [Double] {
        evaluations(model: model, plugins: &plugins, experiences: experiences, workspace: ws, active: active).map(\.accuracy)
    }

    /// Every experience's test set evaluated (accuracy, classification measures, predictions):
    /// the first plugin whose `PredictionOverride` answers decides, else the model through the
    /// experience's route.
    public static func evaluations(model: MLP, plugins: inout [any StrategyPlugin], experiences: [Experience],
                                   workspace ws: Workspace, active: [Bool]? = nil) -> [TestEvaluation] {
        experiences.map { e in
            for k in plugins.indices {
                if let predicted = plugins[k].overridingPredictions(model: model, samples: e.test, experienceIndex: e.index,
                                                                    workspace: ws) {
                    return TestEvaluation(labels: e.test.labels, predictions: predicted.classes,
                                          classes: model.spec.head.classCount, scores: predicted.scores)
                }
            }
            return TestEvaluation(model: model, samples: e.test, route: model.routeCount > 1 ? e.index : 0, workspace: ws,
                                  active: active)
        }
    }
}

extension Duration {
    /// The duration in seconds as a Double.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}
