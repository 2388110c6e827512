/// Online (streaming) training: every training sample is first predicted, then learned from
/// ("test-then-train", prequential evaluation; Gama et al. 2013). The strategy plugins' hooks
/// stay active (replay's `extendBatch`, regularisers' `addPenalty`, `afterStep`,
/// `afterExperience`), and after every experience the model is still evaluated on every test
/// set, so the accuracy matrix and its metrics remain comparable with batch training.
///
/// Samples are visited once, in stream (time) order. The model updates after every
/// `batchSize` samples (1 = purely online); every sample is predicted before any update that
/// uses it. The curve records accuracy over the last `window` predictions every `recordEvery`
/// samples.
public struct PrequentialTrainer {
    public var model: MLP
    public var optimizer: Optimizer
    public var plugins: [any StrategyPlugin]
    public let options: TrainingOptions
    public let window: Int
    public let recordEvery: Int
    public let seed: UInt64
    /// Step masks per set of routes in a batch (see `Trainer.mask`); cleared at each experience.
    private var maskCache: [[Int32]: [Bool]?] = [:]

    public init(spec: MLPSpec, optimizer: OptimizerSpec, options: TrainingOptions, window: Int, recordEvery: Int = 1,
                plugins: [any StrategyPlugin], seed: UInt64) {
        var rng = RandomSource(seed: seed, stream: "init")
        let model = MLP(spec: spec, rng: &rng)
        self.model = model
        self.optimizer = Optimizer(spec: optimizer, parameterCount: model.parameterCount)
        self.plugins = plugins
        self.options = options
        self.window = max(1, window)
        self.recordEvery = max(1, recordEvery)
        self.seed = seed
    }

    /// Runs the stream online; returns the usual outcome plus the prequential curve.
    public mutating func run(_ stream: ExperienceStream) throws -> (TrainingOutcome, PrequentialCurve) {
        let experiences = stream.experiences
        let T = experiences.count
        guard T > 0 else { throw TrainingError.invalid("the scenario has no experiences") }
        for i in plugins.indices {
            let context = RunContext(seed: seed, pluginIndex: i, experienceCount: T, dimension: stream.dimension,
                                     head: stream.head, training: options, featureNames: stream.featureNames)
            try plugins[i].prepare(model: &model, context: context)
        }
        if model.routeCount > 1 && model.routeCount < T {
            throw TrainingError.invalid("the model has \(model.routeCount) heads but the stream has \(T) experiences")
        }
        let ws = model.makeWorkspace(capacity: max(options.batchSize * 2, options.evaluationBatchSize))
        let clock = ContinuousClock()
        var start = clock.now
        var outcome = TrainingOutcome(
            accuracy: [], initialAccuracy: [], randomAccuracy: [], testSizes: experiences.map(\.test.count),
            trainSetSizes: [], samplesProcessed: [], steps: [], lossCurve: [], penaltyCurve: [],
            trainableParameters: [], trainSeconds: 0, evalSeconds: 0, finalModel: model, pluginReports: [])
        outcome.initialAccuracy = evaluateAll(experiences, ws)
        var baselineRNG = RandomSource(seed: seed, stream: "baseline.random")
        let randomModel = MLP(spec: model.spec, rng: &baselineRNG)
        let rws = randomModel.makeWorkspace(capacity: options.evaluationBatchSize)
        outcome.randomAccuracy = experiences.map {
            randomModel.accuracy(on: $0.test, route: randomModel.routeCount > 1 ? $0.index : 0, workspace: rws)
        }
        var evalTime = clock.now - start
        var trainTime = Duration.zero

        var curve = PrequentialCurve(window: window, recordEvery: recordEvery)
        var ring = [Bool](repeating: false, count: window)
        var ringCount = 0, ringCorrect = 0, seen = 0, correctTotal = 0
        var batch = Batch(dimension: stream.dimension, capacity: options.batchSize * 2)
        var gradient = [Float](repeating: 0, count: model.parameterCount)
        var taskGradient = [Float]()
        var before = [Float]()
        var single = Samples(dimension: stream.dimension, features: [Float](repeating: 0, count: stream.dimension), labels: [0])
        var prediction: Int32 = 0

        for i in 0..<T {
            start = clock.now
            let route = Int32(model.routeCount > 1 ? i : 0)
            let context = ExperienceContext(index: i, experiences: experiences, route: route)
            for p in plugins.indices { try plugins[p].beforeExperience(model: &model, context: context) }
            maskCache = [:]
            let observing = plugins.contains { $0.observesSteps }
            let transforming = plugins.contains { $0.transformsGradientPoint }
            if observing {
                taskGradient = [Float](repeating: 0, count: model.parameterCount)
                before = [Float](repeating: 0, count: model.parameterCount)
            }
            if optimizer.parameterCount != model.parameterCount {
                optimizer = Optimizer(spec: optimizer.spec, parameterCount: model.parameterCount)
            } else if options.resetOptimizerPerExperience {
                optimizer.reset()
            }
            if gradient.count != model.parameterCount { gradient = [Float](repeating: 0, count: model.parameterCount) }
            var trainSet = experiences[i].train
            for p in plugins.indices { plugins[p].adjustTrainingSet(&trainSet, context: context) }
            outcome.trainSetSizes.append(trainSet.count)
            outcome.trainableParameters.append(model.trainableCount)
            curve.experienceStarts.append(seen)
            let own = Self.ownRows(of: experiences[i].train, in: trainSet)
            var lossSum = 0.0, penaltySum = 0.0, rows = 0, steps = 0
            batch.removeAll()
            for k in 0..<trainSet.count {
                // Test: predict the new sample with the current model (or a plugin's override).
                // Rows a plugin added (joint's earlier experiences) were seen before: train only.
                if own[k] {
                    var overridden: [Int32]? = nil
                    single.features.replaceSubrange(0..<stream.dimension, with: trainSet.row(k))
                    single.labels[0] = trainSet.labels[k]
                    for p in plugins.indices {
                        overridden = plugins[p].predictions(model: model, samples: single, experienceIndex: i, workspace: ws)
                        if overridden != nil { break }
                    }
                    if let overridden {
                        prediction = overridden[0]
                    } else {
                        single.features.withUnsafeBufferPointer { x in
                            model.predict(x.baseAddress!, count: 1, route: model.routeCount > 1 ? Int(trainSet.routes?[k] ?? route) : 0, workspace: ws,
                                          into: &prediction)
                        }
                    }
                    let correct = prediction == trainSet.labels[k]
                    if ringCount == window {
                        if ring[seen % window] { ringCorrect -= 1 }
                    } else {
                        ringCount += 1
                    }
                    ring[seen % window] = correct
                    if correct {
                        ringCorrect += 1
                        correctTotal += 1
                    }
                    seen += 1
                    if seen % recordEvery == 0 {
                        curve.position.append(seen)
                        curve.windowAccuracy.append(Double(ringCorrect) / Double(ringCount))
                        curve.cumulativeAccuracy.append(Double(correctTotal) / Double(seen))
                        curve.experience.append(i)
                    }
                }
                // Train: the sample joins the batch; a full batch (or the end) makes one step.
                batch.append(from: trainSet, index: k, route: route)
                if batch.count == options.batchSize || k == trainSet.count - 1 {
                    batch.ownCount = batch.count
                    for p in plugins.indices { plugins[p].extendBatch(&batch, context: context) }
                    let (loss, penalty) = Trainer.step(
                        model: &model, optimizer: &optimizer, plugins: &plugins, batch: batch,
                        gradient: &gradient, taskGradient: &taskGradient, before: &before,
                        observing: observing, transforming: transforming, experience: i, step: steps,
                        maskCache: &maskCache, workspace: ws)
                    guard loss.isFinite, penalty.isFinite else {
                        throw TrainingError.diverged(experience: i, epoch: 0, loss: loss.isFinite ? penalty : loss)
                    }
                    lossSum += loss
                    penaltySum += penalty
                    rows += batch.count
                    steps += 1
                    batch.removeAll()
                }
            }
            let meanLoss = rows > 0 ? lossSum / Double(rows) : .nan
            if let limit = options.divergenceLoss, meanLoss > limit {
                throw TrainingError.diverged(experience: i, epoch: 0, loss: meanLoss)
            }
            if !model.parameters.allSatisfy({ $0.isFinite }) {
                throw TrainingError.diverged(experience: i, epoch: 0, loss: .nan)
            }
            outcome.lossCurve.append([meanLoss])
            outcome.penaltyCurve.append([steps > 0 ? penaltySum / Double(steps) : 0])
            outcome.samplesProcessed.append(rows)
            outcome.steps.append(steps)
            for p in plugins.indices { try plugins[p].afterExperience(model: &model, context: context, workspace: ws) }
            trainTime += clock.now - start
            start = clock.now
            outcome.accuracy.append(evaluateAll(experiences, ws))
            evalTime += clock.now - start
        }
        outcome.finalModel = model
        outcome.trainSeconds = trainTime.seconds
        outcome.evalSeconds = evalTime.seconds
        outcome.pluginReports = plugins.map { ($0.name, $0.report()) }
        return (outcome, curve)
    }

    /// Which rows of the adjusted training set are the experience's own (`own`, in order): matched
    /// from the end by features and label, since plugins such as joint put earlier data first.
    /// If the plugins changed the rows themselves, falls back to the last `own.count` rows.
    static func ownRows(of own: Samples, in adjusted: Samples) -> [Bool] {
        var mask = [Bool](repeating: false, count: adjusted.count)
        let d = own.dimension
        var j = own.count - 1
        var k = adjusted.count - 1
        while j >= 0 && k >= 0 {
            if adjusted.labels[k] == own.labels[j]
                && adjusted.features[(k * d)..<((k + 1) * d)].elementsEqual(own.features[(j * d)..<((j + 1) * d)]) {
                mask[k] = true
                j -= 1
            }
            k -= 1
        }
        if j >= 0 {
            mask = [Bool](repeating: false, count: adjusted.count)
            for k in max(0, adjusted.count - own.count)..<adjusted.count { mask[k] = true }
        }
        return mask
    }

    /// Accuracy on every test set, through the plugins' prediction override if any.
    private mutating func evaluateAll(_ experiences: [Experience], _ ws: Workspace) -> [Double] {
        Trainer.evaluate(model: model, plugins: &plugins, experiences: experiences, workspace: ws)
    }
}

/// The prequential accuracy curve: one point every `recordEvery` predicted samples.
public struct PrequentialCurve: Sendable, Equatable {
    public var window: Int
    public var recordEvery: Int
    /// Number of samples predicted so far at each point (1-based position in the stream).
    public var position: [Int] = []
    /// Accuracy over the last `window` predictions (fewer at the very start).
    public var windowAccuracy: [Double] = []
    /// Accuracy over all predictions so far.
    public var cumulativeAccuracy: [Double] = []
    /// Experience being streamed at each point.
    public var experience: [Int] = []
    /// Stream position (samples seen before it) where each experience starts.
    public var experienceStarts: [Int] = []

    public init(window: Int, recordEvery: Int) {
        self.window = window
        self.recordEvery = recordEvery
    }
}
