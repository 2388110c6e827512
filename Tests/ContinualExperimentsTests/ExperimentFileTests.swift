import Foundation
import Testing
@testable import ContinualExperiments

/// Experiment files: strict decoding with key-path errors, variants, defaults and run ids.
@Suite struct ExperimentFileTests {
    func error(_ json: String) -> ConfigError? {
        do {
            _ = try ExperimentFile.parse(data: Data(json.utf8), path: "x.json")
            return nil
        } catch let e as ConfigError {
            return e
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }

    @Test func variantsExpandWithDefaultsAndStableIds() throws {
        let file = try ExperimentFile.parse(data: Data(tinyExperiment().utf8))
        #expect(file.name == "tiny" && file.output == "results/tiny.h5")
        #expect(file.runs.map(\.config.name) == ["naive", "joint"])
        #expect(file.runs.map(\.config.strategyLabel) == ["naive", "joint"])
        #expect(file.runs[0].config.training.epochs == 3)
        #expect(file.runs[0].config.training.shuffle == true)          // default filled in
        #expect(file.runs[0].config.model.hidden == [8])
        #expect(file.runs[0].runId != file.runs[1].runId)
        #expect(file.runs[0].runId.count == 16)
        // Same content ⇒ same id, whatever the key order or whitespace in the file.
        let reordered = """
        {"variants": [{"strategy": "naive", "name": "naive"}], "training": {"batch_size": 16, "epochs": 3},
         "optimizer": {"momentum": 0.9, "lr": 0.05, "type": "sgd"}, "model": {"hidden": [8]},
         "scenario": {"phases": ["morning", "night", "morning"], "test_per_experience": 60,
                      "train_per_experience": 200, "type": "habit_drift"}, "seed": 3, "name": "tiny"}
        """
        let again = try ExperimentFile.parse(data: Data(reordered.utf8))
        #expect(again.runs[0].runId == file.runs[0].runId)
        // The resolved config decodes back to itself.
        let decoded = try JSONDecoder().decode(RunConfig.self, from: Data(file.runs[0].canonicalJSON.utf8))
        #expect(decoded == file.runs[0].config)
        #expect(ResolvedRun(config: decoded).runId == file.runs[0].runId)
    }

    /// `threads` is an execution setting: accepted at the top level, not part of any run's id.
    @Test func threadsIsAnExecutionSettingOutsideTheRunIds() throws {
        let plain = try ExperimentFile.parse(data: Data(tinyExperiment().utf8))
        #expect(plain.threads == 1)
        let four = try ExperimentFile.parse(data: Data(tinyExperiment().replacingOccurrences(
            of: "\"seed\": 3", with: "\"seed\": 3, \"threads\": 4").utf8))
        #expect(four.threads == 4)
        #expect(four.runs.map(\.runId) == plain.runs.map(\.runId))
        for bad in ["0", "65", "2.5", "\"4\""] {
            let e = error(tinyExperiment().replacingOccurrences(of: "\"seed\": 3", with: "\"seed\": 3, \"threads\": \(bad)"))
            #expect(e?.location == ".threads", "threads \(bad)")
            #expect(e?.message.contains("expected an integer from 1 to 64") == true, "threads \(bad)")
        }
    }

    @Test func wrongTypeAtANestedKeyNamesThePath() {
        let e = error(tinyExperiment().replacingOccurrences(of: "\"epochs\": 3", with: "\"epochs\": \"three\""))
        #expect(e?.location == ".training.epochs")
        #expect(e?.message.contains("expected an integer") == true)
        #expect(e?.description.hasPrefix("x.json: .training.epochs:") == true)
    }

    @Test func unknownKeysNameThePathAndTheAllowedKeys() {
        let e = error(tinyExperiment().replacingOccurrences(of: "\"epochs\": 3", with: "\"epochs\": 3, \"epoch\": 2"))
        #expect(e?.location == ".training.epoch")
        #expect(e?.message.contains("allowed keys: active_outputs, batch_size, divergence_loss, early_stopping, epochs") == true)
        let top = error(tinyExperiment().replacingOccurrences(of: "\"seed\": 3", with: "\"seed\": 3, \"sed\": 1"))
        #expect(top?.location == ".sed")
        let opt = error(tinyExperiment().replacingOccurrences(of: "\"type\": \"sgd\"", with: "\"type\": \"adam\""))
        #expect(opt?.location == ".optimizer.momentum")
        #expect(opt?.message.contains("not an option of adam") == true)
        let phase = error(tinyExperiment().replacingOccurrences(of: "\"night\"", with: "{\"preset\": \"night\", \"bais\": 1}"))
        #expect(phase?.location == ".scenario.phases[1].bais")
    }

    @Test func badValuesAndChoicesAreExplained() {
        let lr = error(tinyExperiment().replacingOccurrences(of: "\"lr\": 0.05", with: "\"lr\": -1"))
        #expect(lr?.location == ".optimizer.lr")
        let act = error(tinyExperiment().replacingOccurrences(of: "\"hidden\": [8]", with: "\"hidden\": [8], \"activation\": \"gelu\""))
        #expect(act?.location == ".model.activation")
        #expect(act?.message.contains("allowed values: relu, tanh, sigmoid, identity") == true)
        let strategy = error(tinyExperiment().replacingOccurrences(of: "\"strategy\": \"naive\"", with: "\"strategy\": \"magic\""))
        #expect(strategy?.location == ".strategy[0].type")
        #expect(strategy?.message.contains("unknown strategy \"magic\"") == true)
        #expect(strategy?.message.contains("variant \"naive\"") == true)
        let preset = error(tinyExperiment().replacingOccurrences(of: "\"night\"", with: "\"nite\""))
        #expect(preset?.location == ".scenario.phases[1]")
        let missing = error("{\"name\": \"x\"}")
        #expect(missing?.location == ".scenario")
        #expect(missing?.message.contains("required") == true)
        let dup = error(tinyExperiment().replacingOccurrences(of: "{\"name\": \"joint\"", with: "{\"name\": \"naive\""))
        #expect(dup?.location == ".variants[1].name")
        let badName = error(tinyExperiment().replacingOccurrences(of: "\"name\": \"tiny\"", with: "\"name\": \"a/b\""))
        #expect(badName?.location == ".name")
    }

    @Test func fractionalOrHugeIntegersNameTheirKeyPath() {
        let e = error(tinyExperiment().replacingOccurrences(of: "\"epochs\": 3", with: "\"epochs\": 2.5"))
        #expect(e?.location == ".training.epochs")
        #expect(e?.message.contains("expected an integer") == true)
        let hidden = error(tinyExperiment().replacingOccurrences(of: "\"hidden\": [8]", with: "\"hidden\": [8, 1e30]"))
        #expect(hidden?.location == ".model.hidden[1]")
    }

    @Test func seedsAboveInt64MaxAreExactAndDistinct() throws {
        let a = try ExperimentFile.parse(data: Data(tinyExperiment().replacingOccurrences(
            of: "\"seed\": 3", with: "\"seed\": 9223372036854775809").utf8))
        let b = try ExperimentFile.parse(data: Data(tinyExperiment().replacingOccurrences(
            of: "\"seed\": 3", with: "\"seed\": 9223372036854775810").utf8))
        let max = try ExperimentFile.parse(data: Data(tinyExperiment().replacingOccurrences(
            of: "\"seed\": 3", with: "\"seed\": 18446744073709551615").utf8))
        #expect(a.runs[0].config.seed == 9_223_372_036_854_775_809)
        #expect(b.runs[0].config.seed == 9_223_372_036_854_775_810)
        #expect(max.runs[0].config.seed == UInt64.max)
        #expect(a.runs[0].runId != b.runs[0].runId)
    }

    @Test func aVariantCanSwitchTheOptimizerType() throws {
        let file = try ExperimentFile.parse(data: Data(tinyExperiment().replacingOccurrences(
            of: "{\"name\": \"joint\", \"strategy\": [\"joint\"]}",
            with: "{\"name\": \"adam\", \"optimizer\": {\"type\": \"adam\", \"lr\": 0.001}}").utf8))
        #expect(file.runs[1].config.optimizer.kind == .adam)
        #expect(file.runs[1].config.optimizer.learningRate == 0.001)
        #expect(file.runs[0].config.optimizer.momentum == 0.9)   // the base is unchanged
    }

    @Test func theFirstUnknownKeyInSortedOrderIsReported() {
        for _ in 0..<5 {
            let e = error(tinyExperiment().replacingOccurrences(
                of: "\"epochs\": 3", with: "\"epochs\": 3, \"zzz\": 1, \"ccc\": 1, \"aaa\": 1, \"mmm\": 1"))
            #expect(e?.location == ".training.aaa")
        }
    }

    @Test func syntaxErrorsGiveLineAndColumn() {
        let e = error("{\n  \"name\": \"x\",\n  \"seed\": 1,,\n}")
        #expect(e?.message.hasPrefix("expected") == true, "\(String(describing: e))")
        #expect(e?.location.hasPrefix("line 3") == true)
    }

    @Test func missingFileNamesThePath() {
        #expect(throws: ConfigError.self) { try ExperimentFile.load(path: "/nonexistent/exp.json") }
        do { _ = try ExperimentFile.load(path: "/nonexistent/exp.json") } catch {
            #expect("\(error)" == "/nonexistent/exp.json: no such file")
        }
    }

    @Test func shippedExperimentsAreValid() throws {
        let dir = packageRoot.appendingPathComponent("Experiments")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }
        #expect(files.contains("quickstart.json"))
        for f in files { _ = try ExperimentFile.load(path: dir.appendingPathComponent(f).path) }
    }
}
