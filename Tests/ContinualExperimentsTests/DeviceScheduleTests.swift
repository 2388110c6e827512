import Foundation
import Testing
import ContinualCore
import ContinualHDF5
import ContinualMetrics
import ContinualScenarios
import ContinualStrategies
@testable import ContinualExperiments

/// Training schedules gated by device state, the prequential view, and the device results.
@Suite struct DeviceScheduleTests {
    static let closed = DeviceHour(charging: false, idle: true, wifi: true, battery: 0.9, thermal: .nominal)
    static let open = DeviceHour(charging: true, idle: true, wifi: true, battery: 0.9, thermal: .nominal)

    /// One experience of 140 training samples = 7 days of 20 samples: one simulated week.
    func week() throws -> ExperienceStream {
        try HabitDriftScenario(trainPerExperience: 140, testPerExperience: 40,
                               phases: [HabitPhase.presets["morning"]!]).makeStream(seed: 5)
    }

    func runWeek(openDays: Set<Int>) throws -> (ScheduledRunner.Plan, TrainingOutcome?, DeviceReport, ScheduleReport) {
        let stream = try week()
        let days = (0..<7).map { DeviceDay.constant(day: $0, openDays.contains($0) ? Self.open : Self.closed) }
        let schedule = ScheduleConfig(type: .daily, samplesPerDay: 20)
        let plan = ScheduledRunner.plan(stream: stream, schedule: schedule, device: DeviceStateOptions(), seed: 1,
                                        deviceDays: days)
        let spec = MLPSpec(inputs: 10, hidden: [8])
        let options = TrainingOptions(epochs: 3, batchSize: 16)
        let (outcome, trainer, report) = try ScheduledRunner.run(
            plan: plan, stream: stream, spec: spec, optimizer: .sgd(learningRate: 0.05), training: options,
            plugins: [Naive()], seed: 1, type: "daily")
        let device = DeviceReport(profile: .phoneNPU2023, model: outcome?.finalModel ?? trainer.model,
                                  optimizer: .sgd(learningRate: 0.05), training: options, outcome: outcome)
        return (plan, outcome, device, report)
    }

    @Test func dailyWithTheGateClosedAllWeekNeverTrains() throws {
        let (plan, outcome, device, report) = try runWeek(openDays: [])
        #expect(plan.daySamples.count == 7)
        #expect(report.gateOpen == [Bool](repeating: false, count: 7))
        #expect(report.sessionDays.isEmpty)
        #expect(outcome == nil)
        #expect(device.trainingJoules == 0)
        #expect(device.trainingFLOPs == 0)
        // Every day is still predicted, by the initial model.
        #expect(report.daySamples == [Int](repeating: 20, count: 7))
        #expect(report.prequentialAccuracy.isFinite)
    }

    @Test func openingTheGateOnOneDayGivesExactlyOneSession() throws {
        let (plan, outcome, device, report) = try runWeek(openDays: [3])
        #expect(report.sessionDays == [3])
        #expect(plan.sessions.count == 1)
        #expect(plan.sessions[0].train.count == 80)       // days 0...3
        let o = try #require(outcome)
        #expect(o.steps == [3 * 5])                        // 80 rows, batch 16, 3 epochs
        #expect(device.sessionEnergy.count == 1)
        let expected = EnergyEstimate(training: device.traffic, rows: 240, steps: 15, profile: .phoneNPU2023)
        #expect(device.trainingJoules == expected.joules)
        #expect(device.trainingJoules > 0)
        // Days 0...3 predicted by the initial model (= R_init on the session), days 4...6 by the final one.
        let initialCorrect = report.dayCorrect[0...3].reduce(0, +)
        #expect(abs(Double(initialCorrect) / 80 - o.initialAccuracy[0]) < 1e-12)
    }

    @Test func prequentialAccuracyOfASessionIsThePreviousRowOfR() throws {
        let (_, outcome, _, report) = try runWeek(openDays: [1, 4])
        #expect(report.sessionDays == [1, 4])
        let o = try #require(outcome)
        // Session 1 covers days 2...4 (60 samples): predicted by the model after session 0.
        let correct = report.dayCorrect[2...4].reduce(0, +)
        #expect(abs(Double(correct) / 60 - o.accuracy[0][1]) < 1e-12)
    }

    @Test func schedulesPickTheDocumentedDays() {
        let days = (0..<20).map { DeviceDay.constant(day: $0, $0 % 3 == 0 ? Self.open : Self.closed) }
        let samples = [Int](repeating: 10, count: 20)
        func sessions(_ s: ScheduleConfig) -> [Int] { s.sessionDays(days: days, samples: samples, experienceEnds: [4, 9, 19]) }
        #expect(sessions(ScheduleConfig(type: .always)) == [4, 9, 19])
        #expect(sessions(ScheduleConfig(type: .daily)) == [0, 3, 6, 9, 12, 15, 18])
        // Weekly: from day 6 on, at least 7 days apart, on open days.
        #expect(sessions(ScheduleConfig(type: .weekly)) == [6, 15])
        #expect(sessions(ScheduleConfig(type: .afterNewSamples, n: 50)) == [6, 12, 18])
        // Wi-Fi required, never available: the gate stays closed.
        var noWifi = ScheduleConfig(type: .daily)
        noWifi.when.wifi = true
        let offline = (0..<5).map { _ in DeviceDay.constant(day: 0, DeviceHour(charging: true, idle: true, wifi: false, battery: 1, thermal: .nominal)) }
        #expect(noWifi.sessionDays(days: offline, samples: [1, 1, 1, 1, 1], experienceEnds: []) == [])
    }

    @Test func generatedDevicePatternsBehave() {
        let overnight = DeviceStateOptions(pattern: .overnight, chargeProbability: 1).makeDays(count: 30, runSeed: 2)
        let gate = GateCondition()
        #expect(overnight.allSatisfy { gate.opens($0) })      // always charges while asleep
        let never = DeviceStateOptions(pattern: .never).makeDays(count: 30, runSeed: 2)
        #expect(!never.contains { gate.opens($0) })
        #expect(never.allSatisfy { $0.hours.count == 24 && $0.hours.allSatisfy { !$0.charging } })
        // Seeded: the same seed gives the same days, another seed other days.
        let a = DeviceStateOptions(pattern: .irregular).makeDays(count: 30, runSeed: 7)
        #expect(a == DeviceStateOptions(pattern: .irregular).makeDays(count: 30, runSeed: 7))
        #expect(a != DeviceStateOptions(pattern: .irregular).makeDays(count: 30, runSeed: 8))
    }

    @Test func scheduledExperimentWritesDeviceResults() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let text = """
        {"name": "dev", "seed": 2,
         "scenario": {"type": "habit_drift", "train_per_experience": 100, "test_per_experience": 40,
                      "phases": ["morning", "night"]},
         "model": {"hidden": [8]}, "optimizer": {"type": "sgd", "lr": 0.05},
         "training": {"epochs": 2, "batch_size": 16, "early_stopping": {"patience": 2, "min_delta": 0.001}},
         "device": {"profile": "lowend_cpu", "state": {"pattern": "overnight"}},
         "quantization": {"granularity": "per_tensor"},
         "variants": [{"name": "daily", "schedule": {"type": "daily", "samples_per_day": 10}},
                      {"name": "never", "schedule": {"type": "daily", "samples_per_day": 10},
                       "device": {"state": {"pattern": "never"}}},
                      {"name": "plain"}]}
        """
        let experiment = try ExperimentFile.parse(data: Data(text.utf8))
        #expect(experiment.runs[0].config.training.earlyStopping == EarlyStopping(patience: 2, minDelta: 0.001))
        let results = experiment.runs.map(RunExecutor.execute)
        #expect(results.allSatisfy { $0.status == .completed })
        let daily = try #require(results[0].device), never = try #require(results[1].device)
        #expect(daily.schedule!.daySamples.count == 20)
        #expect(daily.schedule!.sessionDays.count >= 15)       // charges nightly with p = 0.9
        #expect(daily.trainingJoules > 0)
        #expect(never.schedule!.sessionDays.isEmpty && never.trainingJoules == 0)
        #expect(results[1].outcome == nil)
        #expect(daily.quantization!.boundHolds)
        #expect(results[2].device!.schedule == nil && results[2].device!.trainingJoules > 0)
        let path = dir.path("dev.h5")
        try ResultsWriter.writeExperiment(results, experiment: experiment, to: path)
        let file = try HDF5File.open(path: path)
        let summary = try file.root.openDataset("summary").readTable()
        #expect(summary.columns.map(\.name) == ResultsSchema.summaryColumns.map(\.name))
        #expect(summary.column("energy_j")?[1].doubleValue == 0)
        #expect(summary.column("energy_j")?[0].doubleValue == daily.trainingJoules)
        let g = try file.root.openGroup("runs").openGroup(results[0].runId).openGroup("device")
        #expect(try g.openDataset("prequential_accuracy_curve").read(as: Double.self).count == 20)
    }
}
