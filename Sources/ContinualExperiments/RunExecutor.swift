import ContinualCore
import ContinualMetrics

/// Executes one resolved run: builds the stream, the model and the plugins, trains, and computes
/// metrics and costs. Pure computation (no files), so it is safe to call from parallel tasks.
public enum RunExecutor {
    public static func execute(_ run: ResolvedRun) -> RunResult {
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
            let spec = config.model.spec(inputs: stream.dimension, head: stream.head,
                                         experiences: stream.experiences.count)
            let plugins = config.strategy.map { $0.options.makePlugin() }
            let device = config.device ?? DeviceConfig()
            if let schedule = config.schedule {
                // Scheduled (prequential) run: the Trainer's experiences are the training sessions.
                let plan = ScheduledRunner.plan(stream: stream, schedule: schedule, device: device.state, seed: config.seed)
                let (outcome, trainer, report) = try ScheduledRunner.run(
                    plan: plan, stream: stream, spec: spec, optimizer: config.optimizer.spec,
                    training: config.training.options, plugins: plugins, seed: config.seed, type: schedule.type.rawValue)
                result.experienceNames = plan.sessions.map(\.name)
                result.experienceMetadata = plan.sessions.map(\.metadata)
                result.outcome = outcome
                let model = outcome?.finalModel ?? trainer.model
                if let outcome {
                    result.metrics = MetricSet(matrix: AccuracyMatrix(outcome.accuracy),
                                               randomBaseline: outcome.randomAccuracy,
                                               initialBaseline: outcome.initialAccuracy)
                } else {
                    result.message = "no training session: the device gate never opened"
                }
                result.costs = CostModel(model: model, optimizer: trainer.optimizer)
                var d = DeviceReport(profile: device.profile, model: model, optimizer: config.optimizer.spec,
                                     training: config.training.options, outcome: outcome)
                d.schedule = report
                if let q = config.quantization {
                    d.quantization = QuantizationReport(model: model, experiences: stream.experiences, granularity: q.granularity)
                }
                result.device = d
                result.status = .completed
            } else {
                var trainer = Trainer(spec: spec, optimizer: config.optimizer.spec, options: config.training.options,
                                      plugins: plugins, seed: config.seed)
                let outcome = try trainer.run(stream)
                result.outcome = outcome
                result.metrics = MetricSet(matrix: AccuracyMatrix(outcome.accuracy),
                                           randomBaseline: outcome.randomAccuracy,
                                           initialBaseline: outcome.initialAccuracy)
                result.costs = CostModel(model: outcome.finalModel, optimizer: trainer.optimizer)
                var d = DeviceReport(profile: device.profile, model: outcome.finalModel, optimizer: config.optimizer.spec,
                                     training: config.training.options, outcome: outcome)
                if let q = config.quantization {
                    d.quantization = QuantizationReport(model: outcome.finalModel, experiences: stream.experiences,
                                                        granularity: q.granularity)
                }
                result.device = d
                result.status = .completed
            }
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
}
