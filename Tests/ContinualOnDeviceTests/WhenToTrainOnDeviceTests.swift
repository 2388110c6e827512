import ContinualCore
import ContinualExperiments
import ContinualMetrics
@testable import ContinualOnDevice
import ContinualScenarios
import ContinualStrategies
import Testing

/// `PersonalModel` with the `on_drift` trigger and the safe-refresh gate: the research runner's
/// decisions, bit for bit, and rollbacks that restore the learner exactly.
@Suite struct WhenToTrainOnDeviceTests {
    /// Detector settings sensitive enough to fire on this short stream (checked below), so the
    /// trigger, not only the first `n`-sample session, is compared.
    static let schedules: [String] = [
        #"{"type": "on_drift", "samples_per_day": 10, "n": 30, "detector": {"type": "page_hinkley", "threshold": 3, "min_instances": 10}, "when": {"charging": false, "idle": true}}"#,
        #"{"type": "on_drift", "samples_per_day": 10, "n": 30, "detector": {"type": "ddm", "warm_start": 10, "drift_threshold": 2}, "when": {"charging": false, "idle": true}}"#,
        #"{"type": "on_drift", "samples_per_day": 10, "n": 30, "detector": {"type": "eddm", "warm_start": 10}, "when": {"charging": false, "idle": true}}"#,
        #"{"type": "daily", "samples_per_day": 10, "safe_refresh": {"window": 10, "margin": 0}}"#,
        #"{"type": "on_drift", "samples_per_day": 10, "n": 30, "detector": {"type": "page_hinkley", "threshold": 3, "min_instances": 10}, "safe_refresh": {"window": 10, "margin": 0.05}, "when": {"charging": false, "idle": true}}"#,
    ]

    @Test("PersonalModel makes the research runner's trigger and gate decisions", arguments: schedules)
    func personalModelIsTheAdaptiveRun(schedule: String) throws {
        var firings = 0, rollbacks = 0
        for strategy in [#""naive""#, #"{"type": "replay", "capacity": 40}, {"type": "ewc", "lambda": 10}"#] {
            let experiment = try ScheduledExperiment.habit(strategy: strategy, schedule: schedule)
            let research = RunExecutor.execute(experiment.run)
            #expect(research.status == .completed, "\(research.message)")
            let report = try #require(research.device?.schedule)
            #expect(!report.sessionDays.isEmpty, "\(schedule): no session, the test would prove little")
            var configuration = try experiment.configuration()
            configuration.sessionCapacity = experiment.plan.days.count   // the adaptive runner's capacity
            let device = try drive(PersonalModel(configuration: configuration),
                                   days: experiment.plan.daySamples, device: experiment.plan.days)
            #expect(device.sessionDays == report.sessionDays, "\(schedule)")
            #expect(device.dayCorrect == report.dayCorrect, "\(schedule)")
            #expect(device.reports.map(\.accepted) == (report.sessionAccepted.isEmpty ? device.reports.map { _ in true } : report.sessionAccepted))
            #expect(device.model.trigger?.firings ?? [] == report.firingSamples)
            #expect(device.model.rollbacks == report.rollbacks)
            #expect(device.reports.map(\.energy) == research.device!.sessionEnergy)
            let finalParameters = research.outcome?.finalModel.parameters ?? []
            #expect(device.model.parameters == finalParameters, "\(schedule) \(strategy)")
            if let candidate = device.reports.last?.holdoutAccuracyCandidate {
                #expect(candidate == report.holdoutAccuracyCandidate.last)
            }
            firings += report.firingSamples.count
            rollbacks += report.rollbacks
        }
        // The decisions under test happened: firings (on_drift) and rollbacks (safe refresh).
        if schedule.contains("on_drift") { #expect(firings > 0, "\(schedule)") }
        if schedule.contains("safe_refresh") { #expect(rollbacks > 0, "\(schedule)") }
    }

    @Test func relaunchingFromACheckpointKeepsTheDetectorAndTheRollbackCount() throws {
        let experiment = try ScheduledExperiment.habit(strategy: #""naive""#, schedule: Self.schedules[4])
        var configuration = try experiment.configuration()
        configuration.sessionCapacity = experiment.plan.days.count
        let model = try PersonalModel(configuration: configuration)
        let straight = try drive(model, days: experiment.plan.daySamples, device: experiment.plan.days)
        let relaunched = try drive(model, days: experiment.plan.daySamples, device: experiment.plan.days, checkpointEvery: 1)
        #expect(relaunched.model.parameters == straight.model.parameters)
        #expect(relaunched.sessionDays == straight.sessionDays)
        #expect(relaunched.model.trigger?.firings == straight.model.trigger?.firings)
        #expect(relaunched.model.checkpoint() == straight.model.checkpoint())
    }

    /// A model whose every parameter is −1 predicts class 0 on all-zero inputs (dead ReLUs, bias −1).
    static func gated(margin: Double = 0) throws -> PersonalModel {
        let spec = MLPSpec(inputs: 3, hidden: [4])
        var rng = RandomSource(seed: 1)
        let count = MLP(spec: spec, rng: &rng).parameterCount
        return try PersonalModel(configuration: .init(
            model: spec, optimizer: .sgd(learningRate: 0.5), training: TrainingOptions(epochs: 10, batchSize: 5),
            strategy: [Replay.Options(capacity: 10)],
            schedule: ScheduleConfig(type: .always, safeRefresh: SafeRefreshGate(window: 5, margin: margin)),
            initialParameters: [Float](repeating: -1, count: count)))
    }

    /// Ten observations of zeros on day 0: the first five labelled 1 (trained on), the newest five `heldOut`.
    static func feed(_ m: inout PersonalModel, heldOut: Int) throws {
        for _ in 0..<10 { try m.observe(features: [0, 0, 0], day: 0) }
        for i in 0..<10 { try m.label(day: 0, outcome: i < 5 ? 1 : heldOut) }
    }

    @Test func aWorseCandidateIsRolledBackToTheBitIdenticalLearner() throws {
        var m = try Self.gated()
        try Self.feed(&m, heldOut: 0)
        let before = m.trainer.sessionCheckpoint(m.loop).encoded()
        let parameters = m.parameters, resources = m.strategyResources
        let report = try #require(try m.trainIfDue(day: 0, now: DeviceHour(charging: true, idle: true, wifi: true, battery: 1, thermal: .nominal)))
        // Training on five 1s moves the bias up: the candidate says 1 where the window says 0.
        #expect(report.holdoutAccuracyCurrent == 1 && report.holdoutAccuracyCandidate == 0)
        #expect(!report.accepted && report.steps > 0 && report.energy.joules > 0)
        #expect(m.rollbacks == 1 && m.sessionsTrained == 0)
        #expect(m.parameters == parameters && m.strategyResources == resources)
        #expect(m.trainer.sessionCheckpoint(m.loop).encoded() == before)   // optimizer, replay buffer, loop position
        #expect(m.pending.labels == [0, 0, 0, 0, 0])                         // the window stays pending
        #expect(m.pendingDays == [0, 0, 0, 0, 0])
    }

    @Test func aBetterCandidateReplacesTheModel() throws {
        var m = try Self.gated()
        try Self.feed(&m, heldOut: 1)
        let parameters = m.parameters
        let report = try m.train(day: 0)
        #expect(report.holdoutAccuracyCurrent == 0 && report.holdoutAccuracyCandidate == 1 && report.accepted)
        #expect(m.rollbacks == 0 && m.sessionsTrained == 1 && m.parameters != parameters)
        #expect(try m.predictClass([0, 0, 0]) == 1)
        #expect(m.pending.count == 5)
        // With only the window pending, nothing is left to train on.
        #expect(throws: PersonalModelError.nothingToTrain) { _ = try m.train(day: 1) }
    }

    @Test func onDriftWithoutADetectorIsRefused() throws {
        #expect(throws: PersonalModelError.self) {
            _ = try PersonalModel(configuration: .init(model: MLPSpec(inputs: 3, hidden: [4]), schedule: ScheduleConfig(type: .onDrift)))
        }
    }
}
