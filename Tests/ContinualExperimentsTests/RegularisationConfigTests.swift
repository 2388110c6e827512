import ContinualCore
import ContinualExperiments
import ContinualHDF5
import ContinualStrategies
import Foundation
import Testing

/// EWC and SI from experiment JSON: validation names the key path, resolved configs carry every
/// option, composed strategy lists run, and importance vectors land in the HDF5 run group.
@Suite("Regularisation config")
struct RegularisationConfigTests {
    /// A small experiment whose strategy list is `strategy` (a JSON array text).
    private func experiment(_ strategy: String, name: String = "reg") -> Data {
        Data("""
        {"name": "\(name)", "seed": 3,
         "scenario": {"type": "habit_drift", "train_per_experience": 150, "test_per_experience": 60,
                      "phases": ["morning", "night", "morning"]},
         "model": {"hidden": [8]}, "optimizer": {"type": "adam", "lr": 0.01},
         "training": {"epochs": 2, "batch_size": 16},
         "strategy": \(strategy)}
        """.utf8)
    }

    private func error(_ strategy: String) -> ConfigError? {
        do {
            _ = try ExperimentFile.parse(data: experiment(strategy))
            return nil
        } catch let e as ConfigError {
            return e
        } catch {
            return ConfigError(location: "?", message: "\(error)")
        }
    }

    @Test(arguments: [
        (#"["naive", {"type": "ewc", "lambda": -1}]"#, ".strategy[1].lambda", "≥ 0"),
        (#"[{"type": "ewc", "mode": "online", "gamma": 0}]"#, ".strategy[0].gamma", "(0, 1]"),
        (#"[{"type": "ewc", "mode": "online", "gamma": 1.01}]"#, ".strategy[0].gamma", "(0, 1]"),
        (#"[{"type": "ewc", "lamda": 5}]"#, ".strategy[0].lamda", "unknown key"),
        (#"[{"type": "ewc", "fisher": "diagonal"}]"#, ".strategy[0].fisher", "exact, sample, empirical, batched"),
        (#"[{"type": "ewc", "fisher_samples": 0}]"#, ".strategy[0].fisher_samples", "positive integer"),
        (#"[{"type": "ewc", "fisher_samples": "most"}]"#, ".strategy[0].fisher_samples", "\"all\""),
        (#"[{"type": "ewc", "fisher_batch_size": 0}]"#, ".strategy[0].fisher_batch_size", "≥ 1"),
        (#"[{"type": "ewc", "save_importance": "yes"}]"#, ".strategy[0].save_importance", "\"auto\""),
        (#"[{"type": "ewc", "mode": "continual"}]"#, ".strategy[0].mode", "separate, online"),
        (#"["naive", {"type": "si", "xi": 0}]"#, ".strategy[1].xi", "> 0"),
        (#"[{"type": "si", "xi": -0.5}]"#, ".strategy[0].xi", "> 0"),
        (#"[{"type": "si", "c": -1}]"#, ".strategy[0].c", "≥ 0"),
        (#"[{"type": "si", "damping": 0.1}]"#, ".strategy[0].damping", "unknown key"),
        (#"[{"type": "si", "gradient": "avalanche"}]"#, ".strategy[0].gradient", "task, total"),
    ])
    func invalidOptionsNameTheirKeyPath(strategy: String, location: String, fragment: String) {
        let e = error(strategy)
        #expect(e?.location == location, "\(String(describing: e))")
        #expect(e?.message.contains(fragment) == true, "\(String(describing: e))")
    }

    /// Absent options resolve to their defaults, all written into the canonical config.
    @Test func resolvedConfigWritesEveryOption() throws {
        let file = try ExperimentFile.parse(data: experiment(#"["ewc", "si"]"#))
        let json = file.runs[0].canonicalJSON
        for fragment in [#""fisher":"exact""#, #""fisher_samples":"all""#, #""fisher_batch_size":32"#,
                         #""half":true"#, #""mode":"separate""#, #""gamma":1"#, #""lambda":100"#,
                         #""save_importance":"auto""#, #""c":1"#, #""xi":0.1"#, #""gradient":"task""#] {
            #expect(json.contains(fragment), "\(fragment) missing from \(json)")
        }
        // The canonical config parses back to the same run.
        let again = try ExperimentFile.parse(data: experiment(
            #"[{"type":"ewc","lambda":100,"fisher":"exact","fisher_samples":"all","fisher_batch_size":32,"half":true,"mode":"separate","gamma":1,"save_importance":"auto"},{"type":"si","c":1,"xi":0.1,"gradient":"task","save_importance":"auto"}]"#))
        #expect(again.runs[0].canonicalJSON == json)
        let explicit = try ExperimentFile.parse(data: experiment(
            #"[{"type":"ewc","fisher_samples":500,"save_importance":false,"half":false}]"#))
        let ewc = try #require(explicit.runs[0].config.strategy[0].options as? EWC.Options)
        #expect(ewc.fisherSamples == 500 && ewc.saveImportance == false && !ewc.half)
    }

    /// `["ewc", "si"]` composes: both penalties act, both report, and the vectors reach HDF5.
    @Test func composedStrategyRunsAndWritesImportance() throws {
        let file = try ExperimentFile.parse(data: experiment(
            #"[{"type":"ewc","lambda":50,"mode":"online","gamma":0.8}, {"type":"si","c":0.5}]"#))
        let result = RunExecutor.execute(file.runs[0])
        #expect(result.status == .completed, "\(result.message)")
        let outcome = try #require(result.outcome)
        #expect(outcome.pluginReports.map(\.name) == ["ewc", "si"])
        #expect(outcome.penaltyCurve[0].allSatisfy { $0 == 0 })
        #expect(outcome.penaltyCurve[1].allSatisfy { $0 > 0 })
        let p = outcome.finalModel.parameterCount

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("reg-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("reg.h5").path
        try ResultsWriter.writeExperiment([result], experiment: file, to: path)
        let h5 = try HDF5File.open(path: path)
        let ewc = try h5.root.openGroup("runs/\(result.runId)/plugins/0_ewc")
        #expect(try ewc.openDataset("fisher").read(as: Double.self).count == p)
        #expect(try ewc.openDataset("importance").read(as: Double.self).count == p)
        #expect(try ewc.openDataset("anchor").read(as: Double.self).map(Float.init) == outcome.finalModel.parameters)
        #expect(try ewc.attributes.string("penalty_convention") == "(lambda/2) * sum_i F_i (theta_i - theta*_i)^2, F <- gamma F + F_new")
        #expect(try ewc.attributes.scalar("gamma", as: Double.self) == 0.8)
        let si = try h5.root.openGroup("runs/\(result.runId)/plugins/1_si")
        #expect(try si.openDataset("importance").read(as: Double.self).count == p)
        #expect(try si.attributes.string("gradient") == "task")
        try h5.close()
    }
}
