import ContinualCore
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// `"few_shot"` runs: strict configuration, held-out users disjoint from meta-training, the
/// ε = 0 limit, determinism for any worker count, and the results layout.
@Suite("Few-shot initialisation")
struct FewShotTests {
    static func experiment(_ fewShot: String, users: Int = 6, jobs: Int = 1, extra: String = "") throws -> ExperimentFile {
        let json = """
        {"name": "fs", "seed": 3,
         "scenario": {"type": "habit_drift", "train_per_experience": 40, "test_per_experience": 30, "phases": ["morning", "night"]},
         "model": {"hidden": [8]},
         "population": {"users": \(users), "jobs": \(jobs)}, "few_shot": \(fewShot)\(extra)}
        """
        return try ExperimentFile.parse(data: Data(json.utf8))
    }

    static func message(_ body: () throws -> Any) -> String {
        do { _ = try body(); return "" } catch { return "\(error)" }
    }

    @Test("bad few_shot settings name their key path and what is allowed")
    func strictConfig() {
        let cases: [(String, String, String)] = [
            (#"{"method": "maml", "held_out_users": 2}"#, ".few_shot.method", "reptile, fomaml, fedavg, scratch"),
            (#"{"held_out_users": 2}"#, "method", "reptile, fomaml, fedavg, scratch"),
            (#"{"method": "reptile", "held_out_users": 2, "inner_rate": 0.1}"#, ".few_shot.inner_rate", "inner_lr"),
            (#"{"method": "reptile", "held_out_users": 6}"#, ".few_shot.held_out_users", "at most 5"),
            (#"{"method": "reptile", "held_out_users": 2, "k": [5, 1]}"#, ".few_shot.k", "increasing"),
            (#"{"method": "reptile", "held_out_users": 2, "outer_lr": -1}"#, ".few_shot.outer_lr", "0...100"),
        ]
        for (block, path, allowed) in cases {
            let m = Self.message { try Self.experiment(block) }
            #expect(m.contains(path) && m.contains(allowed), "\(block): \(m)")
        }
        let noPopulation = Self.message {
            try ExperimentFile.parse(data: Data(#"{"scenario": {"type": "habit_drift"}, "few_shot": {"method": "scratch", "held_out_users": 1}}"#.utf8))
        }
        #expect(noPopulation.contains(".few_shot") && noPopulation.contains("population"), "\(noPopulation)")
        let plugin = Self.message { try Self.experiment(#"{"method": "reptile", "held_out_users": 2}"#, extra: #", "strategy": [{"type": "ewc"}]"#) }
        #expect(plugin.contains(".strategy") && plugin.contains("naive"), "\(plugin)")
    }

    @Test("Reptile at ε = 0 personalises from exactly the scratch initialisation")
    func epsilonZeroIsScratch() throws {
        let reptile = RunExecutor.execute(try Self.experiment(#"{"method": "reptile", "held_out_users": 2, "meta_steps": 4, "outer_lr": 0}"#).runs[0])
        let scratch = RunExecutor.execute(try Self.experiment(#"{"method": "scratch", "held_out_users": 2}"#).runs[0])
        let r = try #require(reptile.fewShot, "\(reptile.message)"), s = try #require(scratch.fewShot, "\(scratch.message)")
        #expect(r.initialisation == s.initialisation)
        #expect(r.accuracy == s.accuracy)
        #expect(r.metaRows == 4 * 5 * 5 * 10 && s.metaRows == 0)
        #expect(r.heldOutUsers == [4, 5] && r.trainUsers == 4)
    }

    @Test("meta-training moves the initialisation, and the run is bit-identical for any number of workers")
    func deterministic() throws {
        for method in ["reptile", "fomaml", "fedavg"] {
            let block = #"{"method": "\#(method)", "held_out_users": 3, "meta_steps": 6, "k": [0, 1, 5]}"#
            let one = RunExecutor.execute(try Self.experiment(block, jobs: 1).runs[0])
            let two = RunExecutor.execute(try Self.experiment(block, jobs: 3).runs[0])
            let a = try #require(one.fewShot, "\(one.message)"), b = try #require(two.fewShot)
            #expect(one.status == .completed)
            #expect(a.initialisation == b.initialisation && a.accuracy == b.accuracy && a.metaLoss == b.metaLoss)
            #expect(a.accuracy.count == 3 && a.accuracy[0].count == 2 && a.accuracy[0][0].count == 3)
            let scratch = RunExecutor.execute(try Self.experiment(#"{"method": "scratch", "held_out_users": 3}"#).runs[0])
            #expect(a.initialisation != scratch.fewShot!.initialisation, "\(method)")
        }
    }

    @Test("held-out users never reach meta-training: changing a held-out user's data leaves the initialisation unchanged")
    func heldOutUnseen() throws {
        // 6 users with 2 held out vs 7 users with 3 held out: the same 4 training users (user i is
        // the same person in both populations), so the meta-learned initialisation is identical.
        let six = RunExecutor.execute(try Self.experiment(#"{"method": "fomaml", "held_out_users": 2, "meta_steps": 5}"#, users: 6).runs[0])
        let seven = RunExecutor.execute(try Self.experiment(#"{"method": "fomaml", "held_out_users": 3, "meta_steps": 5}"#, users: 7).runs[0])
        #expect(six.fewShot!.initialisation == seven.fewShot!.initialisation)
        #expect(Array(seven.fewShot!.accuracy[0..<2]) == six.fewShot!.accuracy)
    }

    @Test("the results record the protocol and the accuracy per user, experience and k")
    func resultsLayout() throws {
        let file = try Self.experiment(#"{"method": "reptile", "held_out_users": 2, "meta_steps": 3, "inner_lr": 0.07, "outer_lr": 0.5, "k": [0, 5]}"#)
        let r = RunExecutor.execute(file.runs[0])
        try withScenarioTempDir { dir in
            let path = dir + "/fs.h5"
            try ResultsWriter.writeExperiment([r], experiment: file, to: path)
            let h5 = try HDF5File.open(path: path)
            let g = try h5.root.openGroup("runs/\(r.runId)/few_shot")
            #expect(try g.attributes.string("method") == "reptile")
            #expect(try g.attributes.scalar("inner_lr", as: Double.self) == 0.07)
            #expect(try g.attributes.scalar("outer_lr", as: Double.self) == 0.5)
            #expect(try g.attributes.scalar("train_users", as: Int64.self) == 4)
            #expect(try g.attributes.scalar("inner_steps", as: Int64.self) == 5)
            #expect(try g.attributes.scalar("support", as: Int64.self) == 10)
            #expect(try g.attributes.scalar("meta_rows", as: Int64.self) == 3 * 5 * 5 * 10)
            let acc = try g.openDataset("accuracy")
            #expect(try acc.shape == [2, 2, 2])
            #expect(try g.openDataset("mean_accuracy").read(as: Double.self) == r.fewShot!.meanAccuracy)
        }
    }
}
