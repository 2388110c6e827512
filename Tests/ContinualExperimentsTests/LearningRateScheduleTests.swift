import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// Learning-rate schedules: factors at hand-computed points, the rate the optimizer actually
/// used (one SGD step moves the parameters by rate × gradient), no change for runs without a
/// schedule, and key-path errors for bad options.
@Suite struct LearningRateScheduleTests {
    @Test func factorsAtHandComputedPoints() {
        let step = LearningRateSchedule(.step(everyEpochs: 2, gamma: 0.5))
        #expect([0, 1, 2, 3, 4, 7].map { step.factor(step: 0, epoch: $0, plannedSteps: 10) } == [1, 1, 0.5, 0.5, 0.25, 0.125])
        let cosine = LearningRateSchedule(.cosine(minimumFactor: 0.1))
        // t = 0 → 1; t = T/2 → 0.1 + 0.9 · 0.5 = 0.55; t = T − 1 of T = 4 → 0.1 + 0.9 (1 + cos(3π/4)) / 2.
        #expect(cosine.factor(step: 0, epoch: 0, plannedSteps: 4) == 1)
        #expect(abs(cosine.factor(step: 2, epoch: 0, plannedSteps: 4) - 0.55) < 1e-15)
        #expect(abs(cosine.factor(step: 3, epoch: 0, plannedSteps: 4) - (0.1 + 0.9 * (1 + cos(3 * Double.pi / 4)) / 2)) < 1e-15)
        let warm = LearningRateSchedule(.constant, warmupSteps: 4)
        #expect((0..<6).map { warm.factor(step: $0, epoch: 0, plannedSteps: 100) } == [0.25, 0.5, 0.75, 1, 1, 1])
        #expect(LearningRateSchedule().isConstant && !warm.isConstant)
    }

    /// One experience of plain SGD (no momentum, no decay) on a fixed batch: Δθ = −η_t · g.
    static func oneStep(_ schedule: LearningRateSchedule, lr: Float) throws -> (before: [Float], after: [Float]) {
        let spec = MLPSpec(inputs: 3, hidden: [], head: .binary)
        let data = Samples(dimension: 3, features: [1, 0.5, -1, 0.2, -0.3, 0.8], labels: [1, 0])
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: lr),
                              options: TrainingOptions(epochs: 1, batchSize: 2, shuffle: false, learningRateSchedule: schedule),
                              plugins: [], seed: 4)
        let before = trainer.model.parameters
        let stream = ExperienceStream(name: "s", featureNames: ["a", "b", "c"], head: .binary,
                                      experiences: [Experience(index: 0, name: "e", train: data, test: data)])
        let after = try trainer.run(stream).finalModel.parameters
        return (before, after)
    }

    @Test func theOptimizerUsesTheScheduledRate() throws {
        // Warm-up of 4 steps: the first (only) step uses η/4 — the same step as a constant η/4.
        let warm = try Self.oneStep(LearningRateSchedule(.constant, warmupSteps: 4), lr: 0.8)
        let quarter = try Self.oneStep(LearningRateSchedule(), lr: 0.2)
        #expect(warm.before == quarter.before)
        #expect(warm.after == quarter.after)
        // A constant schedule passes no rate: bit-identical to the plain rate.
        let full = try Self.oneStep(LearningRateSchedule(), lr: 0.8)
        #expect(full.after != warm.after)
        for (b, (a, q)) in zip(warm.before, zip(full.after, quarter.after)) {
            #expect(abs((a - b) - 4 * (q - b)) < 1e-6)
        }
    }

    @Test func runsWithoutAScheduleKeepTheirIdsAndBits() throws {
        let plain = try ExperimentFile.parse(data: Data(tinyExperiment().utf8)).runs[0]
        #expect(!plain.canonicalJSON.contains("lr_schedule"))
        let explicit = try ExperimentFile.parse(data: Data(tinyExperiment().replacingOccurrences(
            of: "\"training\": {\"epochs\": 3, \"batch_size\": 16}",
            with: "\"training\": {\"epochs\": 3, \"batch_size\": 16, \"lr_schedule\": {\"type\": \"constant\"}}").utf8)).runs[0]
        #expect(explicit.canonicalJSON.contains("lr_schedule"))
        let a = RunExecutor.execute(plain), b = RunExecutor.execute(explicit)
        #expect(a.outcome?.finalModel.parameters == b.outcome?.finalModel.parameters)
        let cosine = try ExperimentFile.parse(data: Data(tinyExperiment().replacingOccurrences(
            of: "\"training\": {\"epochs\": 3, \"batch_size\": 16}",
            with: "\"training\": {\"epochs\": 3, \"batch_size\": 16, \"lr_schedule\": {\"type\": \"cosine\", \"warmup_steps\": 5}}").utf8)).runs[0]
        let c = RunExecutor.execute(cosine)
        #expect(c.status == .completed)
        #expect(c.outcome?.finalModel.parameters != a.outcome?.finalModel.parameters)
    }

    @Test func badOptionsNameTheirKeyPath() {
        let cases: [(String, String, String)] = [
            (#"{"type": "linear"}"#, ".training.lr_schedule.type", "allowed values: constant, step, cosine"),
            (#"{"warmup_steps": 3}"#, ".training.lr_schedule.type", "required key is missing"),
            (#"{"type": "step", "gamma": 0}"#, ".training.lr_schedule.gamma", "must be in (0, 1]"),
            (#"{"type": "step", "every_epochs": 0}"#, ".training.lr_schedule.every_epochs", "must be ≥ 1"),
            (#"{"type": "cosine", "gamma": 0.5}"#, ".training.lr_schedule.gamma", "a cosine schedule takes: min_factor, type, warmup_steps"),
            (#"{"type": "cosine", "min_factor": 2}"#, ".training.lr_schedule.min_factor", "must be in [0, 1]"),
            (#"{"type": "constant", "warmup_steps": -1}"#, ".training.lr_schedule.warmup_steps", "must be in 0...1000000000"),
            (#"{"type": "cosine", "period": 3}"#, ".training.lr_schedule.period", "unknown key"),
        ]
        for (schedule, location, says) in cases {
            let json = tinyExperiment().replacingOccurrences(
                of: "\"training\": {\"epochs\": 3, \"batch_size\": 16}",
                with: "\"training\": {\"epochs\": 3, \"batch_size\": 16, \"lr_schedule\": \(schedule)}")
            do {
                _ = try ExperimentFile.parse(data: Data(json.utf8))
                Issue.record("accepted \(schedule)")
            } catch let e as ConfigError {
                #expect(e.location == location, "\(schedule): \(e)")
                #expect(e.message.contains(says), "\(schedule): \(e)")
            } catch {
                Issue.record("\(schedule): \(error)")
            }
        }
    }
}
