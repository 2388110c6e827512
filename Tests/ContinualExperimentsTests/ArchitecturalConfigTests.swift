import Foundation
import Testing
@testable import ContinualExperiments

/// PackNet and Progressive Neural Networks from JSON: refused where they cannot be right
/// (class-incremental, beside another method) with their own reasons and key paths, and their
/// runs are never exported as a network that predicts differently from the one evaluated.
@Suite struct ArchitecturalConfigTests {
    static func experiment(_ strategy: String, setting: String = "task", extra: String = "") -> String {
        """
        {"name": "arch", "seed": 2, \(extra)
         "scenario": {"type": "split_digits", "setting": "\(setting)"},
         "model": {"hidden": [16], "multi_head": \(setting == "task")}, "optimizer": {"type": "adam", "lr": 0.003},
         "training": {"epochs": 2, "batch_size": 64}, "strategy": [\(strategy)]}
        """
    }

    static func error(_ text: String) -> String? {
        do {
            _ = try ExperimentFile.parse(data: Data(text.utf8))
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: [("packnet", "packnet evaluates each experience with the weights"),
                      ("pnn", "pnn predicts each experience with its own column")])
    func classIncrementalIsRefusedWithTheMethodsReason(_ type: String, _ reason: String) {
        let e = Self.error(Self.experiment(#"{"type": "\#(type)"}"#, setting: "class"))
        #expect(e?.contains(".strategy") == true && e?.contains(reason) == true && e?.contains("allow_task_labels") == true,
                "\(e ?? "accepted")")
        #expect(Self.error(Self.experiment(#"{"type": "\#(type)"}"#)) == nil)
    }

    @Test(arguments: [("packnet", "decides which weights each task trains"), ("pnn", "trains only its own new column")])
    func theyAreListedAloneAndSayWhy(_ type: String, _ reason: String) {
        let e = Self.error(Self.experiment(#"{"type": "\#(type)"}, {"type": "ewc"}"#))
        #expect(e?.contains("must be listed alone") == true && e?.contains(reason) == true, "\(e ?? "accepted")")
    }

    @Test func badOptionsNameTheirKeyPath() {
        let e = Self.error(Self.experiment(#"{"type": "packnet", "prune_fraction": 1.5}"#))
        #expect(e?.contains(".strategy[0].prune_fraction") == true && e?.contains("(0, 1)") == true, "\(e ?? "accepted")")
        let p = Self.error(Self.experiment(#"{"type": "pnn", "lateral": 3}"#))
        #expect(p?.contains(".strategy[0].lateral") == true, "\(p ?? "accepted")")
        let u = Self.error(Self.experiment(#"{"type": "pnn", "laterals": true}"#))
        #expect(u?.contains(".strategy[0].laterals") == true, "\(u ?? "accepted")")
    }

    /// `validate`'s memory estimate bounds PNN's columns before the run: column k holds at most
    /// (1 + k) model-sized parameter sets, 4 bytes each; without laterals one each.
    @Test func pnnsColumnsAreInTheEstimate() throws {
        func memory(_ strategy: String) throws -> Double {
            let file = try ExperimentFile.parse(data: Data(Self.experiment(strategy).utf8))
            return try #require(try Preflight.checkAll(file.runs).estimates.first).memoryBytes
        }
        let naive = try memory(#""naive""#)
        // split digits: 5 tasks, model 64 → 16 → 5 binary heads.
        let parameters = Double(64 * 16 + 16 + 5 * (16 + 1))
        #expect(try memory(#"{"type": "pnn"}"#) - naive == 4 * Double(4 + 10) * parameters)
        #expect(try memory(#"{"type": "pnn", "lateral": false}"#) - naive == 4 * 4 * parameters)
    }

    /// The run's network is not what predicted: PackNet masks later tasks' weights, PNN's later
    /// columns live outside it. Export is refused, and nothing is written.
    @Test(arguments: [("packnet", "no single exported network reproduces"), ("pnn", "live outside the exported network")])
    func exportIsRefusedWithTheReason(_ type: String, _ reason: String) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("p.json", Self.experiment(#"{"type": "\#(type)"}"#, extra: #""output": "\#(dir.path("p.h5"))","#))
        let r = try runCLI(["run", exp, "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        let x = try runCLI(["export", dir.path("p.h5"), "--format", "onnx", "-o", dir.path("p.onnx")])
        #expect(x.status != 0 && x.stderr.contains(reason), "\(x.status) \(x.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("p.onnx")))
    }
}
