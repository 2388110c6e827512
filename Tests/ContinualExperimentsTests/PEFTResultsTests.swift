import Foundation
import Testing
import ContinualExperiments
import ContinualHDF5

/// The PEFT plugins through the whole pipeline: JSON options, registry, run, HDF5 results.
@Suite struct PEFTResultsTests {
    static let json = """
    {
      "name": "peft_test",
      "seed": 4,
      "scenario": {"type": "habit_drift", "train_per_experience": 200, "test_per_experience": 100,
                   "phases": ["morning", "night", "weekend_only"]},
      "model": {"hidden": [16, 8]},
      "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
      "training": {"epochs": 2, "batch_size": 32},
      "variants": [
        {"name": "adapters_entropy", "strategy": [{"type": "adapters", "routing": "entropy"}]},
        {"name": "lora", "allow_task_labels": true, "strategy": [{"type": "lora", "rank": 3, "alpha": 3, "layers": [0, 2]}]},
        {"name": "bitfit", "strategy": [{"type": "bitfit"}]},
        {"name": "last_layer", "strategy": [{"type": "last_layer", "freeze_core_after": 1}]}
      ]
    }
    """

    @Test func routingAccuracyAndParameterCountsLandInTheResultsFile() throws {
        let experiment = try ExperimentFile.parse(data: Data(Self.json.utf8))
        let results = experiment.runs.map(RunExecutor.execute)
        #expect(results.allSatisfy { $0.status == .completed }, "\(results.map(\.message))")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("peft-\(UUID().uuidString).h5").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try ResultsWriter.writeExperiment(results, experiment: experiment, to: path)

        let file = try HDF5File.open(path: path)
        defer { try? file.close() }
        func plugin(_ run: Int, _ name: String) throws -> HDF5Group {
            try file.root.openGroup("runs/\(results[run].runId)/plugins/0_\(name)")
        }
        let adapters = try plugin(0, "adapters")
        let routing = try adapters.openDataset("routing_accuracy")
        #expect(try routing.shape == [3, 3])
        let values: [Double] = try routing.read()
        // Lower triangle (experiences seen so far) in 0...1, NaN above the diagonal.
        #expect(values.filter { !$0.isNaN }.count == 6)
        #expect(values.filter { !$0.isNaN }.allSatisfy { (0...1).contains($0) })
        #expect(try adapters.attributes.string("routing") == "entropy")
        // Hand count, adapters r = 4 after both hidden layers: 148 + 76 = 224 per experience;
        // experience 0 also trains the plain core (321).
        #expect(try adapters.openDataset("trainable_parameters").read() == [545.0, 224, 224])
        #expect(try adapters.openDataset("bytes_added").read() == [896.0, 896, 896])
        // LoRA rank 3 on layers 0 and 2: 3·(10+16) + 3·(8+1) = 105 per experience.
        let lora = try plugin(1, "lora")
        #expect(try lora.openDataset("trainable_parameters").read() == [426.0, 105, 105])
        #expect(try lora.openDataset("routing_accuracy_final").read() == [1.0, 1, 1])
        // BitFit: 16 + 8 + 1 biases; last-layer with the core trained on experiences 0 and 1.
        #expect(try plugin(2, "bitfit").openDataset("trainable_parameters").read() == [321.0, 25, 25])
        #expect(try plugin(3, "last_layer").openDataset("trainable_parameters").read() == [321.0, 321, 9])
        // The run-level vector written by the Trainer agrees.
        let runLevel: [Int64] = try file.root.openDataset("runs/\(results[0].runId)/trainable_parameters").read()
        #expect(runLevel == [545, 224, 224])
    }

    @Test func optionsAreStrictAndEncodeEveryDefault() throws {
        let bad = Self.json.replacingOccurrences(of: "\"routing\": \"entropy\"", with: "\"routing\": \"oracle\"")
        #expect(throws: (any Error).self) { try ExperimentFile.parse(data: Data(bad.utf8)) }
        let unknown = Self.json.replacingOccurrences(of: "\"rank\": 3", with: "\"rnak\": 3")
        #expect(throws: (any Error).self) { try ExperimentFile.parse(data: Data(unknown.utf8)) }
        let badLayers = Self.json.replacingOccurrences(of: "[0, 2]", with: "\"some\"")
        #expect(throws: (any Error).self) { try ExperimentFile.parse(data: Data(badLayers.utf8)) }
        let experiment = try ExperimentFile.parse(data: Data(Self.json.utf8))
        let encoded = String(decoding: try JSONEncoder().encode(experiment.runs[0].config), as: UTF8.self)
        for key in ["\"bottleneck\":4", "\"freeze_core_after\":0", "\"layers\":\"all\"", "\"context_feature\":\"weekend_tomorrow\""] {
            #expect(encoded.contains(key), "\(key) missing in \(encoded)")
        }
    }
}
