import ContinualCore
import ContinualMetrics
import ContinualScenarios

/// Executes one resolved run: builds the stream, the model and the plugins, trains, and computes
/// metrics and costs. Pure computation (no files), so it is safe to call from parallel tasks.
public enum RunExecutor {
    public static func execute(_ run: ResolvedRun) -> RunResult {
        execute(run, resumingFrom: RunCheckpoint?.none, stopAfter: nil)
    }

    /// Like `execute(_:)`, but resumes from a checkpoint and/or stops after experience
    /// `stopAfter` (then `checkpoint` holds the learner state). Batch, prequential and scheduled
    /// runs (experiences = sessions); populations fail with a message saying so.
    public static func execute(_ run: ResolvedRun, resumingFrom resume: TrainerCheckpoint?, stopAfter: Int?) -> RunResult {
        execute(run, resumingFrom: resume.map { .trainer($0) }, stopAfter: stopAfter)
    }

    /// Like `execute(_:)` with checkpoints of any kind of run (a population checkpoint for
    /// populations, a federated one for federated runs — whose `stopAfter` is a round, and which
    /// alone save `checkpoints` while they run — a trainer checkpoint otherwise).
    public static func execute(_ run: ResolvedRun, resumingFrom runCheckpoint: RunCheckpoint?, stopAfter: Int?,
                               checkpoints: RoundCheckpoints? = nil) -> RunResult {
        Kernels.resetThreadsUsed()
        var result = executeRun(run, resumingFrom: runCheckpoint, stopAfter: stopAfter, checkpoints: checkpoints)
        result.kernelThreads = Kernels.threads
        result.kernelThreadsUsed = Kernels.threadsUsed
        return result
    }

    /// Why a checkpoint of one kind cannot resume this run (nil: it can).
    static func checkpointKindProblem(_ config: RunConfig, trainer: Bool, population: Bool, federation: Bool,
                                      periodic: Bool) -> String? {
        if config.federation != nil {
            if trainer || population { return "this is a federated run; the checkpoint holds \(trainer ? "a single learner" : "a population")" }
            return nil
        }
        if federation { return "the checkpoint holds a federated run; this run is not federated" }
        if periodic { return "checkpoints every N rounds (--checkpoint-every) are for federated runs; stop this run with --stop-after instead" }
        if config.population != nil && trainer { return "this is a population run; the checkpoint holds a single learner" }
        if config.population == nil && population { return "the checkpoint holds a population; this run has none" }
        return nil
    }

    private static func executeRun(_ run: ResolvedRun, resumingFrom runCheckpoint: RunCheckpoint?, stopAfter: Int?,
                                   checkpoints: RoundCheckpoints?) -> RunResult {
        if let problem = run.config.consistencyProblem() {
            return RunResult(run: run, status: .failed, message: "." + problem.path.joined(separator: ".") + ": " + problem.message,
                             outcome: nil, metrics: nil, costs: nil, experienceNames: [], experienceMetadata: [],
                             featureNames: [], streamMetadata: [:], wallSeconds: 0)
        }
        if let problem = Preflight.resourceProblem(run) {
            return RunResult(run: run, status: .failed, message: problem.description,
                             outcome: nil, metrics: nil, costs: nil, experienceNames: [], experienceMetadata: [],
                             featureNames: [], streamMetadata: [:], wallSeconds: 0)
        }
        var resume: TrainerCheckpoint? = nil
        var users: [RunCheckpoint.PopulationUserCheckpoint]? = nil
        var rounds: FederationCheckpoint? = nil
        switch runCheckpoint {
        case .trainer(let c)?: resume = c
        case .population(let u)?: users = u
        case .federation(let f)?: rounds = f
        case nil: break
        }
        if let problem = checkpointKindProblem(run.config, trainer: resume != nil, population: users != nil,
                                               federation: rounds != nil, periodic: checkpoints != nil) {
            var result = RunResult.notStarted(run)
            result.message = problem
            return result
        }
        if let fewShot = run.config.fewShot, let population = run.config.population {
            guard runCheckpoint == nil && stopAfter == nil else {
                var result = RunResult.notStarted(run)
                result.message = "few-shot runs do not stop and resume at experience boundaries (meta-training spans every user); run them whole"
                return result
            }
            return FewShotExecutor.execute(run, fewShot: fewShot, population: population)
        }
        if run.config.federation != nil {
            return FederationRunner.execute(run, transport: FederationRunner.transport, resumingFrom: rounds,
                                            stopAfter: stopAfter, checkpoints: checkpoints)
        }
        if let population = run.config.population {
            return PopulationExecutor.execute(run, population: population, resumingFrom: users, stopAfter: stopAfter)
        }
        return executeSingle(run, resumingFrom: resume, stopAfter: stopAfter)
    }

    /// A single learner's run (batch, prequential or scheduled): its stream (validation split
    /// and poisoning applied), training, and metrics, costs and device figures.
    private static func executeSingle(_ run: ResolvedRun, resumingFrom resume: TrainerCheckpoint?, stopAfter: Int?) -> RunResult {
        let clock = ContinuousClock()
        let start = clock.now
        let config = run.config
        var result = RunResult.notStarted(run)
        do {
            let (stream, poisoned) = try preparedStream(run)
            result.experienceNames = stream.experiences.map(\.name)
            result.experienceMetadata = stream.experiences.map(\.metadata)
            result.featureNames = stream.featureNames
            result.streamMetadata = stream.metadata
            if let schedule = config.schedule {
                try executeScheduled(config, schedule: schedule, stream: stream, resumingFrom: resume,
                                     stopAfter: stopAfter, into: &result)
                if result.checkpoint != nil {
                    result.wallSeconds = (clock.now - start).seconds
                    return result
                }
                // A poisoned user on a device schedule (where the safe-refresh gate decides which
                // model the phone keeps): the attack success of the model it ended with.
                if let poisoning = config.poisoning, let poisoned, let model = result.outcome?.finalModel {
                    result.poisoning = PoisoningOutcome(config: poisoning, record: poisoned,
                        attackSuccess: poisoning.attackSuccessRate(model, stream: stream))
                }
            } else {
                try executeTrained(config, stream: stream, poisoned: poisoned, resumingFrom: resume, stopAfter: stopAfter,
                                   into: &result)
            }
        } catch let error as TrainingError {
            if error.isDivergence { result.status = .diverged } else { result.status = .failed }
            result.message = error.description
        } catch {
            result.status = .failed
            result.message = "\(error)"
        }
        result.wallSeconds = (clock.now - start).seconds
        return result
    }

    /// The run's stream (handed over by `validate`'s checks or built), with its validation split
    /// and poisoning applied, and the poisoning's record.
    private static func preparedStream(_ run: ResolvedRun) throws -> (ExperienceStream, StreamPoisoning.Record?) {
        let config = run.config
        var stream = try StreamHandoff.key(run).flatMap { StreamHandoff.shared.stream(for: $0) }
            ?? config.scenario.options.makeStream(seed: config.seed)
        if let split = config.validationSplit { stream = try split.apply(to: stream) }
        var poisoned: StreamPoisoning.Record? = nil
        if let poisoning = config.poisoning {
            if let problem = poisoning.problem(for: stream) {
                throw TrainingError.invalid(".poisoning.\(problem.key): \(problem.message)")
            }
            let (p, record) = poisoning.apply(to: stream, runSeed: config.seed)
            stream = p
            poisoned = record
        }
        return (stream, poisoned)
    }

    /// Batch or prequential training of one learner: the outcome, then (unless it stopped early
    /// with a checkpoint) its metrics, costs, device report and the poisoning's attack success.
    private static func executeTrained(_ config: RunConfig, stream: ExperienceStream, poisoned: StreamPoisoning.Record?,
                                       resumingFrom resume: TrainerCheckpoint?, stopAfter: Int?,
                                       into result: inout RunResult) throws {
        let (outcome, costs, curve, checkpoint) = try train(config, stream: stream, seed: config.seed,
                                                            resumingFrom: resume, stopAfter: stopAfter)
        result.checkpoint = checkpoint
        result.outcome = outcome
        if let checkpoint {
            // Stopped early: R has only the rows trained so far, so no metrics yet.
            result.status = .completed
            result.message = "stopped after experience \(checkpoint.experiencesDone - 1) of \(checkpoint.experienceCount)"
            return
        }
        result.prequential = curve
        result.metrics = MetricSet(matrix: AccuracyMatrix(outcome.accuracy),
                                   randomBaseline: outcome.randomAccuracy,
                                   initialBaseline: outcome.initialAccuracy)
        result.costs = costs
        result.device = deviceReport(config, stream: stream, model: outcome.finalModel, outcome: outcome)
        if var o = result.outcome {
            EarlyExitDeviceCosts.augment(&o, profile: result.device!.profile)
            result.outcome = o
        }
        if let poisoning = config.poisoning, let poisoned {
            result.poisoning = PoisoningOutcome(config: poisoning, record: poisoned,
                attackSuccess: poisoning.attackSuccessRate(outcome.finalModel, stream: stream))
        }
        result.status = .completed
    }

    /// Energy, bytes and latency of a finished run (default profile `phone_npu_2023`), plus the
    /// int8 evaluation when `quantization` is set (docs/on-device.md).
    static func deviceReport(_ config: RunConfig, stream: ExperienceStream, model: MLP, outcome: TrainingOutcome?)
        -> DeviceReport
    {
        let device = config.device ?? DeviceConfig()
        var d = DeviceReport(profile: device.profile, model: model, optimizer: config.optimizer.spec,
                             training: config.training.options, outcome: outcome)
        if let q = config.quantization {
            d.quantization = QuantizationReport(model: model, experiences: stream.experiences, granularity: q.granularity)
        }
        if !device.checkpointLayers.isEmpty {
            d.checkpointing = ActivationCheckpointing(model: model, droppedLayers: device.checkpointLayers)
        }
        return d
    }

    /// Scheduled run: the device gate and the schedule pick the session days; the Trainer's
    /// experiences are the sessions; every day is predicted prequentially (ScheduledRunner).
    static func executeScheduled(_ config: RunConfig, schedule: ScheduleConfig, stream: ExperienceStream,
                                 resumingFrom resume: TrainerCheckpoint? = nil, stopAfter: Int? = nil,
                                 into result: inout RunResult) throws {
        let spec = try config.model.spec(inputs: stream.dimension, head: stream.head, experiences: stream.experiences.count)
        let plugins = config.strategy.map { $0.options.makePlugin() }
        let device = config.device ?? DeviceConfig()
        let plan = ScheduledRunner.plan(stream: stream, schedule: schedule, device: device.state, seed: config.seed)
        if schedule.isAdaptive {
            guard resume == nil && stopAfter == nil else {
                throw TrainingError.invalid("runs whose sessions depend on the model (schedule type on_drift, safe_refresh) "
                    + "do not stop and resume at session boundaries; run them whole")
            }
            let (outcome, trainer, report) = try AdaptiveScheduledRunner.run(
                plan: plan, stream: stream, schedule: schedule, spec: spec, optimizer: config.optimizer.spec,
                training: config.training.options, plugins: plugins, seed: config.seed,
                initialParameters: try config.model.initFrom?.parameters(for: spec))
            result.experienceNames = report.sessionDays.indices.map { "session_\($0)" }
            result.experienceMetadata = report.sessionDays.enumerated().map { k, d in
                ["first_day": "\(k == 0 ? 0 : report.sessionDays[k - 1] + 1)", "last_day": "\(d)",
                 "accepted": report.sessionAccepted[k] ? "1" : "0"]
            }
            finishScheduled(config, stream: stream, outcome: outcome, trainer: trainer, report: report, into: &result)
            return
        }
        let (outcome, trainer, report) = try ScheduledRunner.run(
            plan: plan, stream: stream, spec: spec, optimizer: config.optimizer.spec,
            training: config.training.options, plugins: plugins, seed: config.seed, type: schedule.type.rawValue,
            resumingFrom: resume, stopAfter: stopAfter,
            initialParameters: resume == nil ? try config.model.initFrom?.parameters(for: spec) : nil)
        result.experienceNames = plan.sessions.map(\.name)
        result.experienceMetadata = plan.sessions.map(\.metadata)
        result.outcome = outcome
        if let checkpoint = trainer.checkpoint {
            result.checkpoint = checkpoint
            result.status = .completed
            result.message = "stopped after session \(checkpoint.experiencesDone - 1) of \(checkpoint.experienceCount)"
            return
        }
        finishScheduled(config, stream: stream, outcome: outcome, trainer: trainer, report: report, into: &result)
    }

    /// Metrics, costs and the device report of a finished scheduled run (planned or adaptive).
    static func finishScheduled(_ config: RunConfig, stream: ExperienceStream, outcome: TrainingOutcome?, trainer: Trainer,
                                report: ScheduleReport, into result: inout RunResult) {
        result.outcome = outcome
        let model = outcome?.finalModel ?? trainer.model
        if let outcome {
            result.metrics = MetricSet(matrix: AccuracyMatrix(outcome.accuracy),
                                       randomBaseline: outcome.randomAccuracy,
                                       initialBaseline: outcome.initialAccuracy)
        } else {
            result.message = report.detector != nil
                ? "no training session: the detector never fired before a day the device gate opened"
                : "no training session: the device gate never opened"
        }
        result.costs = CostModel(model: model, optimizer: trainer.optimizer)
        var d = deviceReport(config, stream: stream, model: model, outcome: outcome)
        d.schedule = report
        if var o = result.outcome {
            EarlyExitDeviceCosts.augment(&o, profile: d.profile)
            result.outcome = o
        }
        result.device = d
        result.status = .completed
    }

    /// Builds the model and plugins of `config` and trains `stream` in the configured mode on the
    /// one training loop (batch: `EpochSource`; prequential: `StreamSource` with a
    /// `PrequentialProbe` observer, whose curve is returned).
    public static func train(_ config: RunConfig, stream: ExperienceStream, seed: UInt64) throws
        -> (TrainingOutcome, CostModel, PrequentialCurve?)
    {
        let (outcome, costs, curve, _) = try train(config, stream: stream, seed: seed, resumingFrom: nil, stopAfter: nil)
        return (outcome, costs, curve)
    }

    /// Loads `model.init_from`'s parameters (if any) over the freshly built model's first entries.
    static func warmStart(_ model: inout MLP, _ config: RunConfig, spec: MLPSpec) throws {
        guard let w = config.model.initFrom else { return }
        let p = try w.parameters(for: spec)
        model.parameters.replaceSubrange(0..<p.count, with: p)
    }

    /// `train` with checkpoints: resumes from `resume` and stops after experience `stopAfter`,
    /// returning the checkpoint when it stopped early.
    public static func train(_ config: RunConfig, stream: ExperienceStream, seed: UInt64,
                             resumingFrom resume: TrainerCheckpoint?, stopAfter: Int?) throws
        -> (TrainingOutcome, CostModel, PrequentialCurve?, TrainerCheckpoint?)
    {
        let spec = try config.model.spec(inputs: stream.dimension, head: stream.head, experiences: stream.experiences.count)
        let plugins = config.strategy.map { $0.options.makePlugin() }
        let prequential = config.training.mode == .prequential
        var observers: [any LoopObserver] = prequential
            ? [PrequentialProbe(window: config.training.window, recordEvery: config.training.recordEvery,
                                dimension: stream.dimension)]
            : []
        if let every = config.metrics.continualEvalEvery {
            observers.append(ContinualEvaluationProbe(every: every, tests: stream.experiences.map(\.test)))
        }
        let model = ModelHandoff.shared.take(spec: spec, seed: seed) ?? Trainer.initialModel(spec: spec, seed: seed)
        var trainer = Trainer(model: model, optimizer: config.optimizer.spec, options: config.training.options,
                              plugins: plugins, observers: observers, seed: seed)
        if resume == nil { try warmStart(&trainer.model, config, spec: spec) }
        var outcome: TrainingOutcome
        if prequential {
            outcome = try trainer.run(stream, source: StreamSource(), resumingFrom: resume, stopAfter: stopAfter)
        } else {
            outcome = try trainer.run(stream, source: EpochSource(), resumingFrom: resume, stopAfter: stopAfter)
        }
        let curve = (trainer.observers.first as? PrequentialProbe)?.curve
        outcome.continualEvaluation = trainer.observers.lazy.compactMap { ($0 as? ContinualEvaluationProbe)?.curve }.first
        return (outcome, CostModel(model: outcome.finalModel, optimizer: trainer.optimizer), curve, trainer.checkpoint)
    }
}
