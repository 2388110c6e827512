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
        self.init(model: Self.initialModel(spec: spec, seed: seed), optimizer: optimizer, options: options,
                  plugins: plugins, observers: observers, seed: seed)
    }

    /// The model `init(spec:…)` starts from: `spec` drawn from `seed`'s "init" stream.
    public static func initialModel(spec: MLPSpec, seed: UInt64) -> MLP {
        var rng = RandomSource(seed: seed, stream: "init")
        return MLP(spec: spec, rng: &rng)
    }

    /// Starts from `model` as given (e.g. `initialModel(spec:seed:)` drawn earlier, which gives
    /// `init(spec:…)`'s trainer bit for bit); `seed` still derives every other stream.
    public init(model: MLP, optimizer: OptimizerSpec, options: TrainingOptions,
                plugins: [any StrategyPlugin], observers: [any LoopObserver] = [], seed: UInt64) {
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
        try prepareRun(stream, experiences: experiences)
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
            try evaluateBaselines(experiences, workspace: work.network, into: &progress)
            evalTime += clock.now - start
        }
        var seenClasses = seenClasses(of: experiences[0..<first], head: stream.head)
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

    /// The checks and preparation before a run's first step: experiences and options, the
    /// plugins' `prepare`, heads against experiences, and the data at the API boundary (labels,
    /// routes and features, once per run, before any of them reaches the loss (row[label]) or the
    /// layer offsets (route)).
    private mutating func prepareRun(_ stream: ExperienceStream, experiences: [Experience]) throws {
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
    }

    /// Baselines: the run's own initial weights, and an independently initialised model (always
    /// the spec's plain network: b must not depend on the strategy).
    private mutating func evaluateBaselines(_ experiences: [Experience], workspace: Workspace, into progress: inout TrainingProgress) throws {
        let initial = evaluateAll(experiences, workspace: workspace)
        try Self.requireFinite(initial, evaluation: "initial")
        progress.initialAccuracy = initial.map(\.accuracy)
        progress.initialEvaluation = initial.map(\.record)
        var baselineRNG = RandomSource(seed: seed, stream: "baseline.random")
        let randomModel = MLP(spec: model.spec, rng: &baselineRNG)
        let rws = randomModel.makeWorkspace(capacity: options.evaluationBatchSize)
        let random = experiences.map {
            TestEvaluation(model: randomModel, samples: $0.test, route: route(for: $0.index, randomModel), workspace: rws)
        }
        try Self.requireFinite(random, evaluation: "random baseline")
        progress.randomAccuracy = random.map(\.accuracy)
        progress.randomEvaluation = random.map(\.record)
    }

    /// Active outputs ("seen"): the classes of the training sets of `done` (nil when every
    /// output is active).
    private func seenClasses(of done: ArraySlice<Experience>, head: OutputHead) -> [Bool]? {
        guard options.activeOutputs == .seen, case .multiclass(let k) = head else { return nil }
        var seen = [Bool](repeating: false, count: k)
        for e in done { for y in e.train.labels where y >= 0 && Int(y) < k { seen[Int(y)] = true } }
        return seen
    }

    /// Begins every phase due at `step` (`TrainingPhases`): the plugins' `beginPhase` in list
    /// order, then a fresh optimizer state and fresh step masks.
    mutating func beginPhases(at step: Int, _ starts: inout [(step: Int, plugin: Int, phase: Int)],
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
}

extension Duration {
    /// The duration in seconds as a Double.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}
