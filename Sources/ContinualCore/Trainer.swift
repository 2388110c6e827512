/// Trains a model experience by experience, calls the strategy plugins' hooks, and after every
/// experience evaluates on every experience's test set (filling the accuracy matrix R).
///
/// Deterministic: the model's initialisation, the random baseline, shuffling and each plugin
/// draw from separate streams derived from `seed`, so results are bit-identical across runs and
/// independent of how many runs execute in parallel.
public struct Trainer {
    public var model: MLP
    public var optimizer: Optimizer
    public var plugins: [any StrategyPlugin]
    public let options: TrainingOptions
    public let seed: UInt64
    /// Set when `run(_:resumingFrom:stopAfter:)` stopped before the end: the state to resume from.
    public private(set) var checkpoint: TrainerCheckpoint?

    /// Builds the model from `spec` with the run's "init" stream.
    public init(spec: MLPSpec, optimizer: OptimizerSpec, options: TrainingOptions,
                plugins: [any StrategyPlugin], seed: UInt64) {
        var rng = RandomSource(seed: seed, stream: "init")
        let model = MLP(spec: spec, rng: &rng)
        self.model = model
        self.optimizer = Optimizer(spec: optimizer, parameterCount: model.parameterCount)
        self.plugins = plugins
        self.options = options
        self.seed = seed
    }

    /// Runs the whole stream. Throws `TrainingError.diverged` when a loss becomes non-finite.
    public mutating func run(_ stream: ExperienceStream) throws -> TrainingOutcome {
        try run(stream, resumingFrom: nil, stopAfter: nil)
    }

    /// Runs from `resumingFrom`'s position (or the start) through experience `stopAfter`
    /// (inclusive; nil = to the end). When it stops early, `checkpoint` holds the full learner
    /// state (throws `CheckpointError.unsupportedPlugin` if a plugin cannot save its state), and
    /// the returned outcome covers the experiences done so far. A Trainer built with the same
    /// spec, optimizer, options, plugins and seed and resumed from it gives bit-identical results.
    public mutating func run(_ stream: ExperienceStream, resumingFrom resume: TrainerCheckpoint?,
                             stopAfter: Int?) throws -> TrainingOutcome {
        checkpoint = nil
        let experiences = stream.experiences
        let T = experiences.count
        guard T > 0 else { throw TrainingError.invalid("the scenario has no experiences") }
        guard options.epochs >= 0, options.batchSize > 0 else {
            throw TrainingError.invalid("epochs must be ≥ 0 and batch size > 0")
        }
        for i in plugins.indices {
            let context = RunContext(seed: seed, pluginIndex: i, experienceCount: T,
                                     dimension: stream.dimension, head: stream.head, training: options,
                                     featureNames: stream.featureNames)
            try plugins[i].prepare(model: &model, context: context)
        }
        if model.routeCount > 1 && model.routeCount < T {
            throw TrainingError.invalid("the model has \(model.routeCount) heads but the stream has \(T) experiences")
        }
        if let cp = resume { try restore(cp, experienceCount: T) }
        let first = resume?.experiencesDone ?? 0
        let end = min(T, (stopAfter ?? T - 1) + 1)

        let ws = model.makeWorkspace(capacity: max(options.batchSize * 2, options.evaluationBatchSize))
        let clock = ContinuousClock()
        var evalTime = Duration.zero
        var trainTime = Duration.zero

        // Baselines: the run's own initial weights, and an independently initialised model.
        var start = clock.now
        var outcome = TrainingOutcome(
            accuracy: [], initialAccuracy: [], randomAccuracy: [],
            testSizes: experiences.map(\.test.count), trainSetSizes: [], samplesProcessed: [], steps: [],
            lossCurve: [], penaltyCurve: [], trainableParameters: [], trainSeconds: 0, evalSeconds: 0,
            finalModel: model, pluginReports: [])
        if let cp = resume {
            outcome.accuracy = cp.accuracy
            outcome.initialAccuracy = cp.initialAccuracy
            outcome.randomAccuracy = cp.randomAccuracy
            outcome.trainSetSizes = cp.trainSetSizes
            outcome.samplesProcessed = cp.samplesProcessed
            outcome.steps = cp.steps
            outcome.lossCurve = cp.lossCurve
            outcome.penaltyCurve = cp.penaltyCurve
            outcome.trainableParameters = cp.trainableParameters
            trainTime = .seconds(cp.trainSeconds)
            evalTime = .seconds(cp.evalSeconds)
        } else {
            outcome.initialAccuracy = evaluateAll(model: model, experiences: experiences, workspace: ws)
            var baselineRNG = RandomSource(seed: seed, stream: "baseline.random")
            let randomModel = MLP(spec: model.spec, rng: &baselineRNG)
            // The random baseline is always the spec's plain network (b must not depend on the strategy).
            let rws = randomModel.makeWorkspace(capacity: options.evaluationBatchSize)
            outcome.randomAccuracy = experiences.map {
                randomModel.accuracy(on: $0.test, route: route(for: $0.index, randomModel), workspace: rws)
            }
            evalTime += clock.now - start
        }

        var shuffleRNG = resume.map { RandomSource(state: $0.shuffleState) } ?? RandomSource(seed: seed, stream: "shuffle")
        var batch = Batch(dimension: stream.dimension, capacity: options.batchSize * 2)
        var gradient = [Float](repeating: 0, count: model.parameterCount)
        var taskGradient = [Float]()
        var before = [Float]()

        for i in first..<end {
            start = clock.now
            let context = ExperienceContext(index: i, experiences: experiences, route: Int32(route(for: i, model)))
            for p in plugins.indices { try plugins[p].beforeExperience(model: &model, context: context) }
            if optimizer.parameterCount != model.parameterCount {
                // A plugin grew the model (e.g. a new adapter): state restarts at the new size.
                optimizer = Optimizer(spec: optimizer.spec, parameterCount: model.parameterCount)
            } else if options.resetOptimizerPerExperience {
                optimizer.reset()
            }
            if gradient.count != model.parameterCount {
                gradient = [Float](repeating: 0, count: model.parameterCount)
            }
            // Step masks per set of routes in a batch; rebuilt each experience (plugins may change
            // `trainable` in beforeExperience).
            var maskCache: [[Int32]: [Bool]?] = [:]
            var trainSet = experiences[i].train
            for p in plugins.indices { plugins[p].adjustTrainingSet(&trainSet, context: context) }
            outcome.trainSetSizes.append(trainSet.count)
            outcome.trainableParameters.append(model.trainableCount)
            let observing = plugins.contains { $0.observesSteps }
            let transforming = plugins.contains { $0.transformsGradientPoint }
            if observing {
                taskGradient = [Float](repeating: 0, count: model.parameterCount)
                before = [Float](repeating: 0, count: model.parameterCount)
            }

            var order = Array(0..<trainSet.count)
            var epochLosses: [Double] = []
            var epochPenalties: [Double] = []
            var processed = 0
            var steps = 0
            var monitor = options.earlyStopping.map(EarlyStopping.Monitor.init)
            for epoch in 0..<options.epochs {
                if options.shuffle { shuffleRNG.shuffle(&order) }
                var lossSum = 0.0, penaltySum = 0.0, rows = 0, batches = 0
                var position = 0
                while position < order.count {
                    let end = min(position + options.batchSize, order.count)
                    batch.removeAll()
                    for k in position..<end { batch.append(from: trainSet, index: order[k], route: context.route) }
                    batch.ownCount = batch.count
                    position = end
                    for p in plugins.indices { plugins[p].extendBatch(&batch, context: context) }
                    let (loss, penalty) = Trainer.step(
                        model: &model, optimizer: &optimizer, plugins: &plugins, batch: batch,
                        gradient: &gradient, taskGradient: &taskGradient, before: &before,
                        observing: observing, transforming: transforming, experience: i, step: steps,
                        maskCache: &maskCache, workspace: ws)
                    guard loss.isFinite, penalty.isFinite else {
                        throw TrainingError.diverged(experience: i, epoch: epoch, loss: loss.isFinite ? penalty : loss)
                    }
                    lossSum += loss
                    penaltySum += penalty
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
                epochLosses.append(epochLoss)
                epochPenalties.append(batches > 0 ? penaltySum / Double(batches) : 0)
                if monitor?.shouldStop(after: epochLoss) == true { break }
            }
            outcome.lossCurve.append(epochLosses)
            outcome.penaltyCurve.append(epochPenalties)
            outcome.samplesProcessed.append(processed)
            outcome.steps.append(steps)
            for p in plugins.indices { try plugins[p].afterExperience(model: &model, context: context, workspace: ws) }
            trainTime += clock.now - start

            start = clock.now
            outcome.accuracy.append(evaluateAll(model: model, experiences: experiences, workspace: ws))
            evalTime += clock.now - start
        }
        outcome.finalModel = model
        outcome.trainSeconds = trainTime.seconds
        outcome.evalSeconds = evalTime.seconds
        outcome.pluginReports = plugins.map { ($0.name, $0.report()) }
        if end < T {
            var states: [PluginState] = []
            for p in plugins {
                guard let state = p.checkpointState() else { throw CheckpointError.unsupportedPlugin(p.name) }
                states.append(state)
            }
            checkpoint = TrainerCheckpoint(
                seed: seed, experiencesDone: end, experienceCount: T, parameters: model.parameters,
                trainable: model.trainable, optimizerFirst: optimizer.first, optimizerSecond: optimizer.second,
                optimizerSteps: optimizer.steps, shuffleState: shuffleRNG.state, pluginNames: plugins.map(\.name),
                pluginStates: states, accuracy: outcome.accuracy, initialAccuracy: outcome.initialAccuracy,
                randomAccuracy: outcome.randomAccuracy, trainSetSizes: outcome.trainSetSizes,
                samplesProcessed: outcome.samplesProcessed, steps: outcome.steps, lossCurve: outcome.lossCurve,
                penaltyCurve: outcome.penaltyCurve, trainableParameters: outcome.trainableParameters,
                trainSeconds: outcome.trainSeconds, evalSeconds: outcome.evalSeconds)
        }
        return outcome
    }

    /// Puts the checkpoint's model, optimizer and plugin states in place (after `prepare`).
    private mutating func restore(_ cp: TrainerCheckpoint, experienceCount T: Int) throws {
        guard cp.seed == seed else { throw CheckpointError.mismatch("seed \(cp.seed), this run has \(seed)") }
        guard cp.experienceCount == T, (0...T).contains(cp.experiencesDone) else {
            throw CheckpointError.mismatch("\(cp.experienceCount) experiences (\(cp.experiencesDone) done), this stream has \(T)")
        }
        guard cp.pluginNames == plugins.map(\.name) else {
            throw CheckpointError.mismatch("strategy \(cp.pluginNames), this run has \(plugins.map(\.name))")
        }
        guard cp.parameters.count == model.parameterCount, (cp.trainable?.count ?? model.parameterCount) == model.parameterCount else {
            throw CheckpointError.mismatch("\(cp.parameters.count) parameters, this model has \(model.parameterCount)")
        }
        guard cp.shuffleState.count == 4 else { throw CheckpointError.mismatch("bad shuffle state") }
        let rows = [cp.accuracy.count, cp.trainSetSizes.count, cp.samplesProcessed.count, cp.steps.count,
                    cp.lossCurve.count, cp.penaltyCurve.count, cp.trainableParameters.count]
        guard rows.allSatisfy({ $0 == cp.experiencesDone }), cp.initialAccuracy.count == T, cp.randomAccuracy.count == T,
              cp.accuracy.allSatisfy({ $0.count == T }) else {
            throw CheckpointError.mismatch("the results so far do not have \(cp.experiencesDone) rows of \(T) experiences")
        }
        model.parameters = cp.parameters
        model.trainable = cp.trainable
        optimizer = try Optimizer(spec: optimizer.spec, parameterCount: model.parameterCount, first: cp.optimizerFirst,
                                  second: cp.optimizerSecond, steps: cp.optimizerSteps)
        for i in plugins.indices { try plugins[i].restore(from: cp.pluginStates[i]) }
    }

    /// Route used for experience `index`: its own head on multi-route models, else 0.
    @inline(__always)
    func route(for index: Int, _ model: MLP) -> Int {
        model.routeCount > 1 ? index : 0
    }

    /// One optimizer step on `batch`; returns (Σ task loss over rows, penalty). Shared by the
    /// batch and prequential trainers. `observing` / `transforming`: whether some plugin observes
    /// steps / moves the gradient point (decided once per experience, after `beforeExperience`);
    /// `taskGradient` and `before` must then have the model's length.
    static func step(model: inout MLP, optimizer: inout Optimizer, plugins: inout [any StrategyPlugin],
                     batch: Batch, gradient: inout [Float], taskGradient: inout [Float],
                     before: inout [Float], observing: Bool, transforming: Bool, experience: Int, step: Int,
                     maskCache: inout [[Int32]: [Bool]?], workspace ws: Workspace) -> (Double, Double) {
        let n = batch.count
        let scale = 1 / Float(n)
        var loss = 0.0
        if transforming {
            for k in plugins.indices where plugins[k].transformsGradientPoint { plugins[k].willComputeGradient(model: &model) }
        }
        gradient.withUnsafeMutableBufferPointer { g in
            g.update(repeating: 0)
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
                        loss = model.lossAndGradient(features: xs.baseAddress!, labels: ys.baseAddress!, count: n,
                                                     route: Int(r0), scale: scale, workspace: ws,
                                                     gradient: g.baseAddress!)
                    }
                }
            } else {
                // Rows of several tasks: one pass per route, each scaled by 1/n so that the sum
                // is the gradient of the batch mean.
                for r in Set(batch.routes[0..<n]).sorted() {
                    let idx = (0..<n).filter { batch.routes[$0] == r }
                    var f = [Float]()
                    f.reserveCapacity(idx.count * batch.dimension)
                    for k in idx { f.append(contentsOf: batch.row(k)) }
                    let l = idx.map { batch.labels[$0] }
                    loss += model.lossAndGradient(features: f, labels: l, count: idx.count, route: Int(r),
                                                  scale: scale, workspace: ws, gradient: g.baseAddress!)
                }
            }
        }
        if transforming {
            for k in plugins.indices.reversed() where plugins[k].transformsGradientPoint { plugins[k].didComputeGradient(model: &model) }
        }
        if observing {
            taskGradient.withUnsafeMutableBufferPointer { t in
                gradient.withUnsafeBufferPointer { g in t.baseAddress!.update(from: g.baseAddress!, count: g.count) }
            }
            before.withUnsafeMutableBufferPointer { b in
                model.parameters.withUnsafeBufferPointer { p in b.baseAddress!.update(from: p.baseAddress!, count: p.count) }
            }
        }
        var penalty = 0.0
        if !plugins.isEmpty {
            model.parameters.withUnsafeBufferPointer { p in
                gradient.withUnsafeMutableBufferPointer { g in
                    for k in plugins.indices { penalty += plugins[k].addPenalty(parameters: p, gradient: g) }
                }
            }
        }
        gradient.withUnsafeBufferPointer { g in
            optimizer.step(parameters: &model.parameters, gradient: g.baseAddress!,
                           trainable: Trainer.mask(for: batch, model: model, cache: &maskCache))
        }
        if observing {
            taskGradient.withUnsafeBufferPointer { t in
                gradient.withUnsafeBufferPointer { g in
                    before.withUnsafeBufferPointer { b in
                        model.parameters.withUnsafeBufferPointer { a in
                            let observation = StepObservation(taskGradient: t, totalGradient: g, parametersBefore: b,
                                                              parametersAfter: a, experienceIndex: experience,
                                                              stepInExperience: step)
                            for k in plugins.indices where plugins[k].observesSteps { plugins[k].afterStep(observation) }
                        }
                    }
                }
            }
        }
        return (loss, penalty)
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

    /// Accuracy on every experience's test set, through the plugins' prediction override if any.
    private mutating func evaluateAll(model: MLP, experiences: [Experience], workspace ws: Workspace) -> [Double] {
        Trainer.evaluate(model: model, plugins: &plugins, experiences: experiences, workspace: ws)
    }

    /// Accuracy on every experience's test set: the first plugin whose `predictions` answers
    /// decides, else the model through the experience's route. Shared with `PrequentialTrainer`.
    static func evaluate(model: MLP, plugins: inout [any StrategyPlugin], experiences: [Experience],
                         workspace ws: Workspace) -> [Double] {
        experiences.map { e in
            for k in plugins.indices {
                if let predicted = plugins[k].predictions(model: model, samples: e.test, experienceIndex: e.index,
                                                          workspace: ws) {
                    guard !e.test.isEmpty else { return .nan }
                    var correct = 0
                    for (p, y) in zip(predicted, e.test.labels) where p == y { correct += 1 }
                    return Double(correct) / Double(e.test.count)
                }
            }
            return model.accuracy(on: e.test, route: model.routeCount > 1 ? e.index : 0, workspace: ws)
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
