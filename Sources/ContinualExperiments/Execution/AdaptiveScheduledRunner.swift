import ContinualCore
import ContinualMetrics
import ContinualScenarios

/// Runs a scenario under a schedule whose session days depend on the model itself: the `on_drift`
/// trigger (a drift detector over the held model's prequential 0/1 errors) and/or the
/// safe-refresh gate (a session's candidate is kept only if it passes a held-out window).
///
/// Such a plan cannot be fixed up front, so this runner goes day by day, as a device does:
/// 1. predict the day's samples with the model held that day (prequential accuracy) and feed
///    each sample's error, in order, to the detector;
/// 2. add them to the pending samples;
/// 3. if the schedule says a session is due (the trigger fired, the `when` gate opens, and with
///    safe refresh more than `window` samples are pending), train one session through the Core
///    loop (`Trainer.trainSession`, the code path of `PersonalModel`); with safe refresh, train on
///    all but the newest `window` pending samples, then keep the candidate or roll the learner
///    back (`SafeRefreshGate`).
///
/// The plugins are prepared for `capacity` = the number of days (the most sessions the run can
/// have; `RunContext.experienceCount`), since the session count is unknown when training starts.
/// A `PersonalModel` with `sessionCapacity` = that number of days is bit-identical to this run.
///
/// The run's accuracy matrix is over its sessions (R[i][j]: the model held after session i on
/// session j's training samples), like a planned scheduled run's; `phaseAccuracy` in the report
/// is over the scenario's experiences (the same test sets for every schedule).
public enum AdaptiveScheduledRunner {
    public static func run(plan: ScheduledRunner.Plan, stream: ExperienceStream, schedule: ScheduleConfig, spec: MLPSpec,
                           optimizer: OptimizerSpec, training: TrainingOptions, plugins: [any StrategyPlugin], seed: UInt64,
                           initialParameters: [Float]? = nil) throws -> (TrainingOutcome?, Trainer, ScheduleReport) {
        let clock = ContinuousClock()
        var trainer = Trainer(spec: spec, optimizer: optimizer, options: training, plugins: plugins, seed: seed)
        if let p = initialParameters { trainer.model.parameters.replaceSubrange(0..<p.count, with: p) }
        let D = plan.daySamples.count
        var loop = try trainer.beginSessions(capacity: max(1, D), dimension: stream.dimension, head: stream.head,
                                             featureNames: stream.featureNames)
        let initialModel = trainer.model
        var trigger = schedule.type == .onDrift ? schedule.detector.map { DriftTrigger(spec: $0) } : nil
        let gate = schedule.safeRefresh
        let phaseEnds = ScheduledRunner.phaseEndDays(dayExperience: plan.dayExperience, phases: stream.experiences.count)
        let experienceEnds = experienceEndDays(plan.dayExperience, days: D)

        var pending = Samples(dimension: stream.dimension)
        var history: [Experience] = []
        var sessionSets: [Samples] = [], sessionModels: [MLP] = []
        var progress = TrainingProgress()
        var report = ScheduleReport(type: schedule.type.rawValue, gateOpen: plan.gateOpen, daySamples: plan.daySamples.map(\.count),
                                    dayExperience: plan.dayExperience, sessionDays: [], dayCorrect: [], finalExperienceAccuracy: [])
        var phaseRows: [[Double]] = []
        var last = -1
        let start = clock.now
        // Phases without a day (no training samples) are scored with the initial model.
        for i in phaseEnds.indices where phaseEnds[i] < 0 { phaseRows.append(evaluate(trainer.model, stream.experiences)) }
        for d in 0..<D {
            let day = plan.daySamples[d]
            let wrong = mispredicted(trainer.model, day)
            report.dayCorrect.append(day.count - wrong.filter { $0 }.count)
            for w in wrong { if trigger?.observe(error: w) == true { report.firingDays.append(d) } }
            pending.append(day)
            if schedule.runsSession(day: d, device: plan.days[d], pendingSamples: pending.count, lastSessionDay: last,
                                    endsExperience: experienceEnds.contains(d), driftPending: trigger?.pending ?? false) {
                let (trainSet, holdout) = gate?.split(pending) ?? (pending, Samples(dimension: stream.dimension))
                let before = (trainer, loop)
                var row = try trainer.trainSession(trainSet, history: history, state: &loop)
                let k = history.count
                history.append(Experience(index: k, name: "session_\(k)", train: trainSet, test: trainSet))
                var accepted = true
                if let gate {
                    let decision = gate.decide(current: before.0.model, candidate: trainer.model, holdout: holdout)
                    report.holdoutAccuracyCurrent.append(decision.currentAccuracy)
                    report.holdoutAccuracyCandidate.append(decision.candidateAccuracy)
                    accepted = decision.accepted
                    if !accepted {
                        // Roll back the whole learner: parameters, mask, optimizer, plugins, loop position.
                        (trainer, loop) = before
                        history.removeLast()
                    }
                    pending = holdout
                } else {
                    pending = Samples(dimension: stream.dimension)
                }
                trigger?.sessionRan()
                last = d
                report.sessionDays.append(d)
                report.sessionAccepted.append(accepted)
                row.trainSeconds = 0
                append(row, to: &progress)
                sessionSets.append(trainSet)
                sessionModels.append(trainer.model)
            }
            for i in phaseEnds.indices where phaseEnds[i] == d { phaseRows.append(evaluate(trainer.model, stream.experiences)) }
        }
        progress.trainSeconds = (clock.now - start).seconds
        report.finalExperienceAccuracy = evaluate(trainer.model, stream.experiences)
        report.phaseAccuracy = phaseRows
        report.detector = trigger?.spec.canonicalDescription
        report.firingSamples = trigger?.firings ?? []
        report.safeRefresh = gate
        guard !sessionSets.isEmpty else { return (nil, trainer, report) }
        let outcome = sessionOutcome(progress, sets: sessionSets, models: sessionModels, initialModel: initialModel,
                                     trainer: trainer, spec: spec, seed: seed)
        return (outcome, trainer, report)
    }

    /// The days among the first `D` that end an experience (the last day, or one whose next day
    /// is in another experience).
    static func experienceEndDays(_ dayExperience: [Int], days D: Int) -> Set<Int> {
        var experienceEnds = Set<Int>()
        for d in 0..<D where d == D - 1 || dayExperience[d + 1] != dayExperience[d] { experienceEnds.insert(d) }
        return experienceEnds
    }

    /// The run's outcome over its sessions: R[i][j] is the model held after session i on session
    /// j's training samples (no test sets exist for sessions), with the initial and random baselines.
    static func sessionOutcome(_ trained: TrainingProgress, sets sessionSets: [Samples], models sessionModels: [MLP],
                               initialModel: MLP, trainer: Trainer, spec: MLPSpec, seed: UInt64) -> TrainingOutcome {
        let clock = ContinuousClock()
        var progress = trained
        let evalStart = clock.now
        progress.accuracy = sessionModels.map { m in evaluate(m, sessionSets) }
        progress.initialAccuracy = evaluate(initialModel, sessionSets)
        var baselineRNG = RandomSource(seed: seed, stream: "baseline.random")
        progress.randomAccuracy = evaluate(MLP(spec: spec, rng: &baselineRNG), sessionSets)
        progress.experiencesDone = sessionSets.count
        progress.evalSeconds = (clock.now - evalStart).seconds
        return TrainingOutcome(progress: progress, testSizes: sessionSets.map(\.count), finalModel: trainer.model,
                               pluginReports: trainer.plugins.map { ($0.name, $0.report()) },
                               pluginResources: trainer.plugins.map(\.resources))
    }

    /// Whether `model` mispredicts each row of `samples` (route 0, one decision per row).
    static func mispredicted(_ model: MLP, _ samples: Samples) -> [Bool] {
        guard !samples.isEmpty else { return [] }
        let ws = model.makeWorkspace(capacity: samples.count)
        var out = [Int32](repeating: 0, count: samples.count)
        samples.features.withUnsafeBufferPointer { x in
            model.predict(x.baseAddress!, count: samples.count, route: 0, workspace: ws, into: &out)
        }
        return zip(out, samples.labels).map { $0 != $1 }
    }

    static func evaluate(_ model: MLP, _ experiences: [Experience]) -> [Double] {
        evaluate(model, experiences.map(\.test))
    }

    static func evaluate(_ model: MLP, _ sets: [Samples]) -> [Double] {
        let ws = model.makeWorkspace(capacity: 512)
        return sets.map { model.accuracy(on: $0, route: 0, workspace: ws) }
    }

    /// Appends one session's row of progress (`Trainer.trainSession`'s) to the run's.
    static func append(_ row: TrainingProgress, to p: inout TrainingProgress) {
        p.trainSetSizes += row.trainSetSizes
        p.samplesProcessed += row.samplesProcessed
        p.steps += row.steps
        p.lossCurve += row.lossCurve
        p.penaltyCurve += row.penaltyCurve
        p.trainableParameters += row.trainableParameters
        p.extraFLOPs += row.extraFLOPs
    }
}
