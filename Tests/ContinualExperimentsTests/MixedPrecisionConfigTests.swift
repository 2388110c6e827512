import Foundation
import Testing
import ContinualCore
@testable import ContinualExperiments

/// `"training": {"precision", "loss_scale", "early_stopping": {"window", "tolerance"}}` and
/// `"device": {"checkpoint_layers"}`: parsing, key-path errors, and runs end to end with their
/// cost figures.
@Suite struct MixedPrecisionConfigTests {
    func experiment(training: String, device: String = "") -> String {
        tinyExperiment(extra: "\"device\": {\"profile\": \"phone_npu_2023\"\(device)},")
            .replacingOccurrences(of: "\"training\": {\"epochs\": 3, \"batch_size\": 16}", with: "\"training\": {\(training)}")
    }

    func parse(_ training: String, device: String = "") throws -> ExperimentFile {
        try ExperimentFile.parse(data: Data(experiment(training: training, device: device).utf8), path: "x.json")
    }

    func error(_ training: String, device: String = "") -> ConfigError? {
        do {
            _ = try parse(training, device: device)
            return nil
        } catch let e as ConfigError {
            return e
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }

    @Test func defaultsAndRoundTrips() throws {
        let plain = try parse("\"epochs\": 3, \"batch_size\": 16")
        #expect(plain.runs[0].config.training.precision == .float32)
        #expect(!plain.runs[0].canonicalJSON.contains("precision") && !plain.runs[0].canonicalJSON.contains("checkpoint_layers"))
        let bf = try parse("\"epochs\": 3, \"precision\": \"bfloat16\"")
        #expect(bf.runs[0].config.training.precision == TrainingPrecision(format: .bfloat16, lossScaling: LossScaling.none))
        let fp = try parse("\"epochs\": 3, \"precision\": \"float16\"")
        #expect(fp.runs[0].config.training.precision.lossScaling == .dynamic(initial: 65536, growthInterval: 2000))
        let fixed = try parse("\"epochs\": 3, \"precision\": \"float16\", \"loss_scale\": 1024")
        #expect(fixed.runs[0].config.training.precision.lossScaling == .fixed(1024))
        let dyn = try parse("\"epochs\": 3, \"precision\": \"float16\", \"loss_scale\": {\"initial\": 256, \"growth_interval\": 50}")
        #expect(dyn.runs[0].config.training.precision.lossScaling == .dynamic(initial: 256, growthInterval: 50))
        let es = try parse("\"epochs\": 3, \"early_stopping\": {\"window\": 2, \"tolerance\": 0.01}", device: ", \"checkpoint_layers\": [0]")
        #expect(es.runs[0].config.training.earlyStopping == EarlyStopping(window: 2, tolerance: 0.01))
        #expect(es.runs[0].config.device?.checkpointLayers == [0])
        for file in [bf, fp, fixed, dyn, es] {
            let decoded = try JSONDecoder().decode(RunConfig.self, from: Data(file.runs[0].canonicalJSON.utf8))
            #expect(decoded == file.runs[0].config)
        }
    }

    @Test func badValuesNameTheirPath() {
        #expect(error("\"precision\": \"float8\"")?.location == ".training.precision")
        #expect(error("\"loss_scale\": 128")?.location == ".training.loss_scale")
        #expect(error("\"precision\": \"float16\", \"loss_scale\": \"auto\"")?.location == ".training.loss_scale")
        #expect(error("\"precision\": \"float16\", \"loss_scale\": -2")?.location == ".training.loss_scale")
        #expect(error("\"precision\": \"float16\", \"loss_scale\": {\"growth_interval\": 0}")?.location == ".training.loss_scale.growth_interval")
        #expect(error("\"precision\": \"float16\", \"loss_scale\": {\"backoff\": 0.5}")?.location == ".training.loss_scale.backoff")
        #expect(error("\"early_stopping\": {\"window\": 2, \"patience\": 3}")?.location == ".training.early_stopping.window")
        #expect(error("\"early_stopping\": {\"window\": 0, \"tolerance\": 0.1}")?.location == ".training.early_stopping.window")
        #expect(error("\"early_stopping\": {\"window\": 2, \"tolerance\": -1}")?.location == ".training.early_stopping.tolerance")
        #expect(error("\"epochs\": 3", device: ", \"checkpoint_layers\": [1]")?.location == ".device.checkpoint_layers")
        #expect(error("\"epochs\": 3", device: ", \"checkpoint_layers\": [0, 0]")?.location == ".device.checkpoint_layers")
        #expect(error("\"precision\": \"bfloat16\", \"mode\": \"prequential\"")?.location == ".training.precision")
    }

    /// 16-bit runs train, count half-size activations and gradients, and record skipped steps;
    /// the window rule stops early and reports the energy the untaken steps would have cost.
    @Test func runsReportTheirCosts() throws {
        func run(_ training: String, device: String = "") throws -> RunResult {
            let file = try parse(training, device: device)
            let r = RunExecutor.execute(file.runs[0])
            #expect(r.status == .completed, "\(training): \(r.message)")
            return r
        }
        let base = try run("\"epochs\": 6, \"batch_size\": 16")
        let bf = try run("\"epochs\": 6, \"batch_size\": 16, \"precision\": \"bfloat16\"")
        let fp = try run("\"epochs\": 6, \"batch_size\": 16, \"precision\": \"float16\", \"loss_scale\": {\"initial\": 1099511627776}")
        let b = try #require(base.device), h = try #require(bf.device), f = try #require(fp.device)
        #expect(h.peakMemory.activations * 2 == b.peakMemory.activations)
        #expect(h.peakMemory.gradients * 2 == b.peakMemory.gradients)
        #expect(h.trainingJoules < b.trainingJoules && h.trainingFLOPs == b.trainingFLOPs)
        #expect(try #require(bf.metrics?.acc) > 0.5)
        #expect(bf.outcome?.finalModel.parameters != base.outcome?.finalModel.parameters)
        // Starting at 2^40 the float16 scaler skips steps until the scaled gradients fit under 65504.
        #expect(f.skippedSteps[0] >= 15 && f.skippedSteps[0] <= 40)
        #expect(try #require(fp.metrics?.acc) > 0.5)

        let stopped = try run("\"epochs\": 30, \"batch_size\": 16, \"early_stopping\": {\"window\": 2, \"tolerance\": 0.02}",
                              device: ", \"checkpoint_layers\": [0]")
        let s = try #require(stopped.device), o = try #require(stopped.outcome)
        #expect(s.plannedSteps == [Int](repeating: 30 * 13, count: 3))
        #expect(o.steps.reduce(0, +) < 3 * 30 * 13)
        for i in 0..<3 { #expect((s.joulesSaved[i] > 0) == (o.steps[i] < 390)) }
        #expect(s.checkpointing?.checkpointedPeakFloatsPerRow ?? 0 > 0)
    }
}
