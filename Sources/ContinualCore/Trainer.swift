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
        let experiences = stream.experiences
        let T = experiences.count
        guard T > 0 else { throw TrainingError.invalid("the scenario has no experiences") }
        guard options.epochs >= 0, options.batchSize > 0 else {
            throw TrainingError.invalid("epochs must be ≥ 0 and batch size > 0")
        }
        for i in plugins.indices {
            let context = RunContext(seed: seed, pluginIndex: i, experienceCount: T,
                                     dimension: stream.dimension, head: stream.head, training: options)
            try plugins[i].prepare(model: &model, context: context)
        }
        if model.routeCount > 1 && model.routeCount < T {
            throw TrainingError.invalid("the model has \(model.routeCount) heads but the stream has \(T) experiences")
        }

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
        outcome.initialAccuracy = evaluateAll(model: model, experiences: experiences, workspace: ws)
        var baselineRNG = RandomSource(seed: seed, stream: "baseline.random")
        let randomModel = MLP(spec: model.spec, rng: &baselineRNG)
        // The random baseline is always the spec's plain network (b must not depend on the strategy).
        let rws = randomModel.makeWorkspace(capacity: options.evaluationBatchSize)
        outcome.randomAccuracy = experiences.map {
            randomModel.accuracy(on: $0.test, route: route(for: $0.index, randomModel), workspace: rws)
        }
        evalTime += clock.now - start

        var shuffleRNG = RandomSource(seed: seed, stream: "shuffle")
        var batch = Batch(dimension: stream.dimension, capacity: options.batchSize * 2)
        var gradient = [Float](repeating: 0, count: model.parameterCount)
        var taskGradient = [Float]()
        var before = [Float]()

        for i in 0..<T {
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
            var trainSet = experiences[i].train
            for p in plugins.indices { plugins[p].adjustTrainingSet(&trainSet, context: context) }
            outcome.trainSetSizes.append(trainSet.count)
            outcome.trainableParameters.append(model.trainableCount)
            let observing = plugins.contains { $0.observesSteps }
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
                        observing: observing, experience: i, step: steps, workspace: ws)
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
        return outcome
    }

    /// Route used for experience `index`: its own head on multi-route models, else 0.
    @inline(__always)
    func route(for index: Int, _ model: MLP) -> Int {
        model.routeCount > 1 ? index : 0
    }

    /// One optimizer step on `batch`; returns (Σ task loss over rows, penalty).
    private static func step(model: inout MLP, optimizer: inout Optimizer, plugins: inout [any StrategyPlugin],
                             batch: Batch, gradient: inout [Float], taskGradient: inout [Float],
                             before: inout [Float], observing: Bool, experience: Int, step: Int,
                             workspace ws: Workspace) -> (Double, Double) {
        let n = batch.count
        let scale = 1 / Float(n)
        var loss = 0.0
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
            optimizer.step(parameters: &model.parameters, gradient: g.baseAddress!, trainable: model.trainable)
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

    /// Accuracy on every experience's test set, through the plugins' prediction override if any.
    private mutating func evaluateAll(model: MLP, experiences: [Experience], workspace ws: Workspace) -> [Double] {
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
            return model.accuracy(on: e.test, route: route(for: e.index, model), workspace: ws)
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
