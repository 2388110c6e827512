import ContinualCore
import ContinualExperiments
import ContinualOnDevice
import ContinualScenarios
import ContinualStrategies
import Testing

/// `PersonalModel`, driven day by day with a scheduled experiment's samples and device states,
/// is the research run: the same session days, the same prediction for every sample of every
/// day, the same final parameters (bit for bit) and the same energy per session.
@Suite struct BitIdentityTests {
    static let strategies: [(String, String)] = [
        ("naive", #""naive""#),
        ("ewc", #"{"type": "ewc", "lambda": 100, "mode": "online", "gamma": 0.9}"#),
        ("si", #"{"type": "si", "c": 0.5}"#),
        ("replay", #"{"type": "replay", "capacity": 40, "replay_per_batch": 8}"#),
        ("adapters", #"{"type": "adapters", "bottleneck": 2}"#),
        ("adapters_context", #"{"type": "adapters", "bottleneck": 2, "routing": "context", "freeze_core_after": 2}"#),
        ("lora", #"{"type": "lora", "rank": 2}"#),
        ("replay+ewc", #"{"type": "replay", "capacity": 40}, {"type": "ewc", "lambda": 10}"#),
    ]

    @Test("driving PersonalModel day by day equals the scheduled experiment", arguments: strategies.map(\.0))
    func personalModelIsTheScheduledRun(_ name: String) throws {
        let strategy = Self.strategies.first { $0.0 == name }!.1
        let experiment = try ScheduledExperiment.habit(strategy: strategy)
        let research = RunExecutor.execute(experiment.run)
        #expect(research.status == .completed, "\(research.message)")
        let outcome = try #require(research.outcome)
        let schedule = try #require(research.device?.schedule)
        // The gate must have both opened and stayed closed, or the test proves little.
        #expect(schedule.sessionDays.count >= 3 && schedule.sessionDays.count < experiment.plan.days.count)

        let device = try drive(PersonalModel(configuration: experiment.configuration()),
                               days: experiment.plan.daySamples, device: experiment.plan.days)
        #expect(device.sessionDays == schedule.sessionDays)
        #expect(device.dayCorrect == schedule.dayCorrect)
        #expect(device.model.parameters == outcome.finalModel.parameters)
        #expect(device.model.model.trainable == outcome.finalModel.trainable)
        #expect(device.reports.map(\.steps) == outcome.steps)
        #expect(device.reports.map(\.energy) == research.device!.sessionEnergy)
        #expect(device.reports.map(\.epochLosses) == outcome.progress.lossCurve)
    }

    @Test("relaunching from a checkpoint every day changes nothing", arguments: ["replay+ewc", "si", "adapters"])
    func relaunchesAreInvisible(_ name: String) throws {
        let strategy = Self.strategies.first { $0.0 == name }!.1
        let experiment = try ScheduledExperiment.habit(strategy: strategy)
        let model = try PersonalModel(configuration: experiment.configuration())
        let straight = try drive(model, days: experiment.plan.daySamples, device: experiment.plan.days)
        let relaunched = try drive(model, days: experiment.plan.daySamples, device: experiment.plan.days, checkpointEvery: 1)
        #expect(relaunched.probabilityBits == straight.probabilityBits)
        #expect(relaunched.model.parameters == straight.model.parameters)
        #expect(relaunched.model.checkpoint() == straight.model.checkpoint())
    }

    @Test("weekly and after-n schedules gate like the experiment's")
    func otherSchedules() throws {
        for schedule in [#"{"type": "weekly", "samples_per_day": 10}"#,
                         #"{"type": "after_n_new_samples", "n": 25, "samples_per_day": 10, "when": {"charging": false, "idle": true}}"#] {
            let experiment = try ScheduledExperiment.habit(strategy: #""naive""#, schedule: schedule)
            let research = RunExecutor.execute(experiment.run)
            let report = try #require(research.device?.schedule)
            let device = try drive(PersonalModel(configuration: experiment.configuration()),
                                   days: experiment.plan.daySamples, device: experiment.plan.days)
            #expect(device.sessionDays == report.sessionDays, "\(schedule)")
            #expect(device.dayCorrect == report.dayCorrect, "\(schedule)")
            if let outcome = research.outcome { #expect(device.model.parameters == outcome.finalModel.parameters) }
        }
    }
}
