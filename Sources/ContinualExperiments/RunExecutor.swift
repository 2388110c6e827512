import ContinualCore
import ContinualMetrics

/// Executes one resolved run: builds the stream, the model and the plugins, trains, and computes
/// metrics and costs. Pure computation (no files), so it is safe to call from parallel tasks.
public enum RunExecutor {
    public static func execute(_ run: ResolvedRun) -> RunResult {
        if let problem = run.config.consistencyProblem() {
            return RunResult(run: run, status: .failed, message: "." + problem.path.joined(separator: ".") + ": " + problem.message,
                             outcome: nil, metrics: nil, costs: nil, experienceNames: [], experienceMetadata: [],
                             featureNames: [], streamMetadata: [:], wallSeconds: 0)
        }
        if let population = run.config.population { return PopulationExecutor.execute(run, population: population) }
        let clock = ContinuousClock()
        let start = clock.now
        let config = run.config
        var result = RunResult(run: run, status: .failed, message: "", outcome: nil, metrics: nil, costs: nil,
                               experienceNames: [], experienceMetadata: [], featureNames: [], streamMetadata: [:],
                               wallSeconds: 0)
        do {
            let stream = try config.scenario.options.makeStream(seed: config.seed)
            result.experienceNames = stream.experiences.map(\.name)
            result.experienceMetadata = stream.experiences.map(\.metadata)
            result.featureNames = stream.featureNames
            result.streamMetadata = stream.metadata
            let (outcome, costs, curve) = try train(config, stream: stream, seed: config.seed)
            result.outcome = outcome
            result.prequential = curve
            result.metrics = MetricSet(matrix: AccuracyMatrix(outcome.accuracy),
                                       randomBaseline: outcome.randomAccuracy,
                                       initialBaseline: outcome.initialAccuracy)
            result.costs = costs
            result.status = .completed
        } catch let error as TrainingError {
            if case .diverged = error { result.status = .diverged } else { result.status = .failed }
            result.message = error.description
        } catch {
            result.status = .failed
            result.message = "\(error)"
        }
        result.wallSeconds = (clock.now - start).seconds
        return result
    }

    /// Builds the model and plugins of `config` and trains `stream` in the configured mode
    /// (batch: `Trainer`; prequential: `PrequentialTrainer`, which also returns its curve).
    public static func train(_ config: RunConfig, stream: ExperienceStream, seed: UInt64) throws
        -> (TrainingOutcome, CostModel, PrequentialCurve?)
    {
        let spec = config.model.spec(inputs: stream.dimension, head: stream.head, experiences: stream.experiences.count)
        let plugins = config.strategy.map { $0.options.makePlugin() }
        if config.training.mode == .prequential {
            var trainer = PrequentialTrainer(spec: spec, optimizer: config.optimizer.spec, options: config.training.options,
                                             window: config.training.window, recordEvery: config.training.recordEvery,
                                             plugins: plugins, seed: seed)
            let (outcome, curve) = try trainer.run(stream)
            return (outcome, CostModel(model: outcome.finalModel, optimizer: trainer.optimizer), curve)
        }
        var trainer = Trainer(spec: spec, optimizer: config.optimizer.spec, options: config.training.options,
                              plugins: plugins, seed: seed)
        let outcome = try trainer.run(stream)
        return (outcome, CostModel(model: outcome.finalModel, optimizer: trainer.optimizer), nil)
    }
}
