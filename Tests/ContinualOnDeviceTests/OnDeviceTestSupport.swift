import ContinualCore
import ContinualExperiments
import ContinualOnDevice
import ContinualScenarios
import ContinualStrategies
import Foundation

/// A scheduled experiment (the research side) and the inputs a device would see day by day.
struct ScheduledExperiment {
    var run: ResolvedRun
    var stream: ExperienceStream
    var plan: ScheduledRunner.Plan

    /// The habit-drift experiment of these tests: two phases, 10 samples a day (12 days), the
    /// device gate (charging + idle) from the seeded irregular-charging user, early stopping,
    /// and `strategy` (JSON entries).
    static func habit(strategy: String, schedule: String = #"{"type": "daily", "samples_per_day": 10}"#,
                      seed: Int = 4) throws -> ScheduledExperiment {
        let text = """
        {"name": "ondevice", "seed": \(seed), "allow_task_labels": true,
         "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 20,
                      "phases": ["morning", "night"]},
         "model": {"hidden": [8]}, "optimizer": {"type": "adam", "lr": 0.01},
         "training": {"epochs": 4, "batch_size": 8, "early_stopping": {"patience": 1, "min_delta": 0.001}},
         "device": {"profile": "phone_npu_2023", "state": {"pattern": "irregular", "charge_probability": 0.6}},
         "schedule": \(schedule),
         "strategy": [\(strategy)]}
        """
        let run = try ExperimentFile.parse(data: Data(text.utf8)).runs[0]
        let stream = try run.config.scenario.options.makeStream(seed: run.config.seed)
        let plan = ScheduledRunner.plan(stream: stream, schedule: run.config.schedule!, device: run.config.device!.state,
                                        seed: run.config.seed)
        return ScheduledExperiment(run: run, stream: stream, plan: plan)
    }

    /// The `PersonalModel` configuration equal to the experiment's run (capacity = its sessions).
    func configuration() throws -> PersonalModel.Configuration {
        let c = run.config
        return PersonalModel.Configuration(
            model: try c.model.spec(inputs: stream.dimension, head: stream.head, experiences: stream.experiences.count),
            optimizer: c.optimizer.spec, training: c.training.options, strategy: c.strategy.map(\.options),
            schedule: c.schedule!, profile: c.device!.profile, seed: c.seed,
            sessionCapacity: max(plan.sessions.count, 1), featureNames: stream.featureNames)
    }
}

/// What a device did when driven day by day.
struct DeviceRun {
    var model: PersonalModel
    /// Samples of each day predicted correctly by the model the device held that day.
    var dayCorrect: [Int] = []
    var sessionDays: [Int] = []
    var reports: [TrainingSessionReport] = []
    /// p(class 1) of every sample, in order (bit patterns).
    var probabilityBits: [UInt32] = []
}

/// Drives `model` through `days` (each day's samples, then the night's device state): observe and
/// predict every sample, label it the same day, then `trainIfDue`. `checkpointEvery` > 0 saves the
/// model and restores it from the bytes alone after every that many days (an app relaunch).
func drive(_ model: PersonalModel, days: [Samples], device: [DeviceDay], checkpointEvery: Int = 0) throws -> DeviceRun {
    var run = DeviceRun(model: model)
    for (d, samples) in days.enumerated() {
        var correct = 0
        for i in 0..<samples.count {
            let x = Array(samples.row(i))
            try run.model.observe(features: x, day: d)
            if try run.model.predictClass(x) == Int(samples.labels[i]) { correct += 1 }
            run.probabilityBits.append(try run.model.predict(x).last!.bitPattern)
        }
        for i in 0..<samples.count { try run.model.label(day: d, outcome: Int(samples.labels[i])) }
        run.dayCorrect.append(correct)
        if let report = try run.model.trainIfDue(device: device[d]) {
            run.sessionDays.append(d)
            run.reports.append(report)
        }
        if checkpointEvery > 0 && (d + 1) % checkpointEvery == 0 {
            run.model = try PersonalModel(checkpoint: run.model.checkpoint(), configuration: run.model.configuration)
        }
    }
    return run
}

/// A 4-class stream of Gaussian blobs in 10 dimensions, cut into days of 8 samples (for plugins
/// that refuse binary heads, e.g. iCaRL).
func blobDays(count: Int, seed: UInt64) -> [Samples] {
    var rng = RandomSource(seed: seed)
    let centres = (0..<4).map { _ in (0..<10).map { _ in Float(rng.normal() * 1.5) } }
    return (0..<count).map { d in
        var s = Samples(dimension: 10)
        for i in 0..<8 {
            // Classes arrive in a class-incremental order: {0, 1} first, then 2, then 3.
            let y = d < count / 3 ? Int32(i % 2) : d < 2 * count / 3 ? 2 : 3
            s.features += centres[Int(y)].map { $0 + Float(rng.normal()) }
            s.labels.append(y)
        }
        return s
    }
}

/// A device that allows training every day (charging, idle, Wi-Fi, full battery, cool).
func openDevice(days: Int) -> [DeviceDay] {
    (0..<days).map { DeviceDay.constant(day: $0, DeviceHour(charging: true, idle: true, wifi: true, battery: 1, thermal: .nominal)) }
}
