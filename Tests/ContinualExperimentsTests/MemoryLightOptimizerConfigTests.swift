import Foundation
import Testing
import ContinualCore
@testable import ContinualExperiments

/// `"optimizer": {"type": "adafactor" | "adam8bit", …}`: defaults, key-path errors, and runs that
/// train end to end with their state bytes in peak memory.
@Suite struct MemoryLightOptimizerConfigTests {
    func experiment(_ optimizer: String) -> String {
        tinyExperiment(extra: "\"device\": {\"profile\": \"lowend_cpu\"},")
            .replacingOccurrences(of: "{\"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9}", with: optimizer)
    }

    func error(_ optimizer: String) -> ConfigError? {
        do {
            _ = try ExperimentFile.parse(data: Data(experiment(optimizer).utf8), path: "x.json")
            return nil
        } catch let e as ConfigError {
            return e
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }

    @Test func defaultsAreThePapersAndTheResolvedConfigRoundTrips() throws {
        let a = try ExperimentFile.parse(data: Data(experiment("{\"type\": \"adafactor\", \"lr\": 0.01}").utf8))
        #expect(a.runs[0].config.optimizer.spec == .adafactor(AdafactorOptions(learningRate: 0.01)))
        let rel = try ExperimentFile.parse(data: Data(experiment("{\"type\": \"adafactor\", \"relative_step\": true}").utf8))
        #expect(rel.runs[0].config.optimizer.spec == .adafactor(AdafactorOptions(learningRate: 0.01, relativeStep: true)))
        let b = try ExperimentFile.parse(data: Data(experiment("{\"type\": \"adam8bit\", \"lr\": 0.002, \"block_size\": 64}").utf8))
        #expect(b.runs[0].config.optimizer.spec == .adam8bit(Adam8bitOptions(learningRate: 0.002, blockSize: 64)))
        #expect(try ExperimentFile.parse(data: Data(experiment("{\"type\": \"adam8bit\", \"min_8bit_size\": 0}").utf8)).runs[0].config.optimizer.spec == .adam8bit(Adam8bitOptions(learningRate: 0.05, minQuantizedSize: 0)))
        for file in [a, rel, b] {
            let decoded = try JSONDecoder().decode(RunConfig.self, from: Data(file.runs[0].canonicalJSON.utf8))
            #expect(decoded == file.runs[0].config)
        }
    }

    @Test func badKeysAndValuesNameTheirPath() {
        let beta2 = error("{\"type\": \"adafactor\", \"beta2\": 0.9}")
        #expect(beta2?.location == ".optimizer.beta2")
        #expect(beta2?.message.contains("not an option of adafactor") == true)
        #expect(beta2?.message.contains("decay_rate") == true)
        #expect(error("{\"type\": \"adafactor\", \"decay_rate\": 0.8}")?.location == ".optimizer.decay_rate")
        #expect(error("{\"type\": \"adafactor\", \"clip_threshold\": 0}")?.location == ".optimizer.clip_threshold")
        #expect(error("{\"type\": \"adam8bit\", \"block_size\": 0}")?.location == ".optimizer.block_size")
        #expect(error("{\"type\": \"adam8bit\", \"min_8bit_size\": -1}")?.location == ".optimizer.min_8bit_size")
        #expect(error("{\"type\": \"adam8bit\", \"factored\": false}")?.location == ".optimizer.factored")
        #expect(error("{\"type\": \"sgd\", \"block_size\": 8}")?.location == ".optimizer.block_size")
    }

    @Test func runsTrainAndCountTheirStateBytesInPeakMemory() throws {
        var peak: [String: Int] = [:]
        for (name, optimizer) in [("adam", "{\"type\": \"adam\", \"lr\": 0.01}"),
                                  ("adafactor", "{\"type\": \"adafactor\", \"lr\": 0.01}"),
                                  ("adam8bit", "{\"type\": \"adam8bit\", \"lr\": 0.01, \"min_8bit_size\": 0}")] {
            let file = try ExperimentFile.parse(data: Data(experiment(optimizer).utf8))
            let result = RunExecutor.execute(file.runs[0])
            #expect(result.status == .completed, "\(name): \(result.message)")
            let model = try #require(result.outcome?.finalModel)
            let acc = try #require(result.metrics?.acc)
            #expect(acc > 0.5, "\(name) learns: ACC \(acc)")
            let state = try #require(result.device?.peakMemory.optimizerState)
            #expect(state == file.runs[0].config.optimizer.spec.stateBytes(parameterCount: model.parameterCount,
                                                                                   matrices: model.weightMatrices))
            peak[name] = state
        }
        // 8-bit: 2 bytes per parameter + 8 per tensor (every tensor here is one block) vs Adam's 8.
        #expect(peak["adam8bit"]! < peak["adam"]! / 3)
        #expect(peak["adafactor"]! < peak["adam"]! / 2)
    }
}
