import Foundation
import Testing
import ContinualCore
import ContinualHDF5
import ContinualMetrics
import ContinualScenarios
import ContinualStrategies
@testable import ContinualExperiments

/// Schedules decided day by day (`on_drift`, `safe_refresh`): the research runner.
@Suite struct AdaptiveScheduleTests {
    static let open = DeviceHour(charging: true, idle: true, wifi: true, battery: 1, thermal: .nominal)

    /// Two phases of 300 all-zero samples: phase 0 labelled with `c`, phase 1 with `1 − c`.
    static func flipStream(c: Int32) -> ExperienceStream {
        func phase(_ k: Int, _ label: Int32) -> Experience {
            let s = Samples(dimension: 3, features: [Float](repeating: 0, count: 900), labels: [Int32](repeating: label, count: 300))
            return Experience(index: k, name: "p\(k)", train: s, test: s)
        }
        return ExperienceStream(name: "flip", featureNames: ["a", "b", "c"], head: .binary, experiences: [phase(0, c), phase(1, 1 - c)])
    }

    @Test("sessions start on the days the detector fires, at its exact drift indices", arguments: ["adwin", "ddm"])
    func triggerFiresAtTheDetectorsDriftIndex(type: String) throws {
        let spec = MLPSpec(inputs: 3, hidden: [4])
        var rng = RandomSource(seed: 3, stream: "init")
        let initial = MLP(spec: spec, rng: &rng)
        // The class the untrained model predicts on a zero input: phase 0 is all right, phase 1 all wrong.
        let c = AdaptiveScheduledRunner.mispredicted(initial, Self.zeroRow(label: 0))[0] ? Int32(1) : 0
        let stream = Self.flipStream(c: c)
        let detector = try DriftDetectorSpec(type: type)
        // n beyond the stream: no bootstrap session, only firings start sessions.
        let schedule = ScheduleConfig(type: .onDrift, samplesPerDay: 20, n: 1_000_000, detector: detector)
        let days = (0..<30).map { DeviceDay.constant(day: $0, Self.open) }
        let plan = ScheduledRunner.plan(stream: stream, schedule: schedule, device: DeviceStateOptions(), seed: 3, deviceDays: days)
        // Zero epochs: the model never changes, so the error stream is known in advance.
        let (outcome, _, report) = try AdaptiveScheduledRunner.run(
            plan: plan, stream: stream, schedule: schedule, spec: spec, optimizer: .sgd(learningRate: 0.1),
            training: TrainingOptions(epochs: 0, batchSize: 8), plugins: [Naive()], seed: 3)
        var offline = detector.makeDetector()
        let errors = (0..<600).map { $0 >= 300 }
        let expected = errors.enumerated().compactMap { i, e in offline.update(e ? 1 : 0) == .drift ? i : nil }
        #expect(!expected.isEmpty)
        #expect(report.firingSamples == expected)
        #expect(report.firingDays == expected.map { $0 / 20 })
        // The gate is open every day: a session on each day with a firing, and on no other.
        #expect(report.sessionDays == Array(Set(expected.map { $0 / 20 })).sorted())
        #expect(report.dayCorrect == (0..<30).map { $0 < 15 ? 20 : 0 })
        #expect(outcome?.steps.count == report.sessionDays.count)
        #expect(report.phaseAccuracy == [[1, 0], [1, 0]])
    }

    static func zeroRow(label: Int32) -> Samples { Samples(dimension: 3, features: [0, 0, 0], labels: [label]) }

    static func experiment(_ schedule: String, noise: Double = 0.3, seeds: String = "[1, 2]") -> String {
        """
        {"name": "adaptive", "allow_task_labels": true,
         "scenario": {"type": "habit_drift", "train_per_experience": 100, "test_per_experience": 40,
                      "phases": ["morning", "night", "weekend_only"], "label_noise": \(noise)},
         "model": {"hidden": [8]}, "optimizer": {"type": "adam", "lr": 0.01},
         "training": {"epochs": 3, "batch_size": 8},
         "device": {"state": {"pattern": "overnight"}},
         "schedule": \(schedule),
         "strategy": [{"type": "replay", "capacity": 30}],
         "sweep": {"parameters": {"seed": \(seeds)}}}
        """
    }

    @Test func safeRefreshRollsBackSomeSessionsAndRecordsThem() throws {
        let e = try ExperimentFile.parse(data: Data(Self.experiment(
            #"{"type": "daily", "samples_per_day": 10, "safe_refresh": {"window": 10, "margin": 0}}"#).utf8))
        let r = RunExecutor.execute(e.runs[0])
        #expect(r.status == .completed, "\(r.message)")
        let s = try #require(r.device?.schedule)
        #expect(s.sessionAccepted.count == s.sessionDays.count && s.holdoutAccuracyCandidate.count == s.sessionDays.count)
        #expect(s.rollbacks > 0 && s.rollbacks < s.sessionDays.count, "\(s.rollbacks) of \(s.sessionDays.count)")
        for k in s.sessionDays.indices {
            #expect(s.sessionAccepted[k] == (s.holdoutAccuracyCandidate[k] >= s.holdoutAccuracyCurrent[k]))
        }
        // Rolled-back sessions cost energy too.
        #expect(r.device!.sessionEnergy.count == s.sessionDays.count)
        #expect(s.phaseAccuracy.count == 3 && s.phaseAccuracy.last == s.finalExperienceAccuracy)
        #expect(r.metrics != nil)
        // A rolled-back session leaves the held model as it was: its row of R repeats the previous one.
        let R = try #require(r.outcome).accuracy
        for k in 1..<R.count where !s.sessionAccepted[k] { #expect(R[k] == R[k - 1]) }
    }

    @Test func plannedSchedulesGainAPhaseMatrixWithoutChangingTraining() throws {
        let e = try ExperimentFile.parse(data: Data(Self.experiment(#"{"type": "daily", "samples_per_day": 10}"#, noise: 0).utf8))
        let r = RunExecutor.execute(e.runs[0])
        let s = try #require(r.device?.schedule)
        #expect(s.phaseAccuracy.count == 3 && s.phaseAccuracy.allSatisfy { $0.count == 3 })
        #expect(s.phaseAccuracy.last == s.finalExperienceAccuracy)
        #expect(s.sessionAccepted.isEmpty && s.detector == nil)
        #expect(s.phaseForgetting.isFinite && s.phaseACC == AccuracyMatrix(s.phaseAccuracy).acc)
    }

    @Test func adaptiveRunsAreIdenticalWithOneAndTwoJobsAndWriteTheirDecisions() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let e = try SweepFixtures.experiment(Self.experiment(
            #"{"type": "on_drift", "samples_per_day": 10, "n": 30, "detector": {"type": "page_hinkley", "threshold": 5}, "safe_refresh": {"window": 10, "margin": 0.05}, "when": {"charging": false, "idle": true}}"#,
            seeds: "[1, 2, 3, 4]"))
        try await SweepFixtures.sweep(e, to: scratch.path("one.h5"), jobs: 1)
        try await SweepFixtures.sweep(e, to: scratch.path("two.h5"), jobs: 2)
        #expect(try SweepFixtures.comparableSummary(scratch.path("one.h5")).rows == SweepFixtures.comparableSummary(scratch.path("two.h5")).rows)
        let file = try HDF5File.open(path: scratch.path("two.h5"), mode: .readOnly)
        defer { try? file.close() }
        let dev = try file.root.openGroup("runs/\(e.runs[0].runId)/device")
        #expect(try dev.attributes.string("detector")?.hasPrefix("page_hinkley(") == true)
        #expect(try dev.attributes.scalar("safe_refresh_margin", as: Double.self) == 0.05)
        #expect(try dev.attributes.scalar("safe_refresh_window", as: Int64.self) == 10)
        #expect(dev.exists("session_accepted") && dev.exists("detector_firing_samples") && dev.exists("phase_accuracy"))
        var firings: Int64 = 0
        for run in e.runs {
            let g = try file.root.openGroup("runs/\(run.runId)/device")
            firings += try #require(try g.attributes.scalar("detector_firings", as: Int64.self))
            #expect(try g.attributes.scalar("adaptive", as: Int64.self) == 1)
        }
        #expect(firings > 0)
    }

    @Test func adaptiveRunsRefuseToStopMidway() throws {
        let e = try ExperimentFile.parse(data: Data(Self.experiment(
            #"{"type": "on_drift", "samples_per_day": 10, "detector": {"type": "adwin"}}"#).utf8))
        let r = RunExecutor.execute(e.runs[0], resumingFrom: TrainerCheckpoint?.none, stopAfter: 1)
        #expect(r.status == .failed && r.message.contains("do not stop and resume"))
    }
}
