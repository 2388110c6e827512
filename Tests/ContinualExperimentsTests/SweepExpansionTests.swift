import Foundation
import Testing
import ContinualCore
@testable import ContinualExperiments

@Suite("Sweep expansion")
struct SweepExpansionTests {
    static let base = """
      "scenario": {"type": "habit_drift", "train_per_experience": 50, "test_per_experience": 20, "phases": ["morning", "night"]},
      "strategy": ["naive"]
    """

    func parse(_ sweep: String, extra: String = "") throws -> ExperimentFile {
        try SweepFixtures.experiment("{\"name\": \"x\", \(Self.base)\(extra), \"sweep\": \(sweep)}")
    }

    func configError(_ sweep: String, extra: String = "") -> ConfigError? {
        do { _ = try parse(sweep, extra: extra); return nil } catch let e as ConfigError { return e } catch { return nil }
    }

    @Test func gridIsTheCartesianProductWithSeedFastest() throws {
        let e = try parse(#"{"parameters": {"seed": {"range": [0, 3]}, "optimizer.lr": [0.01, 0.1], "training.epochs": [1, 2]}}"#)
        #expect(e.runs.count == 12)
        #expect(e.sweptPaths == ["optimizer.lr", "training.epochs", "seed"])
        #expect(e.runs.map(\.config.seed).prefix(4) == [0, 1, 2, 0])
        #expect(e.runs[0].config.optimizer.learningRate == 0.01 && e.runs[0].config.training.options.epochs == 1)
        #expect(e.runs[11].config.optimizer.learningRate == 0.1 && e.runs[11].config.training.options.epochs == 2)
        #expect(e.runs.map(\.sweepIndex) == Array(0..<12))
        #expect(e.runs[4].config.name == "lr=0.01_epochs=2_seed=1")
        #expect(Set(e.runs.map(\.runId)).count == 12)
    }

    @Test func zipTakesListsTogetherAndRejectsUnequalLengths() throws {
        let e = try parse(#"{"mode": "zip", "parameters": {"seed": [5, 6, 7], "optimizer.lr": [0.01, 0.02, 0.03]}}"#)
        #expect(e.runs.count == 3)
        #expect(e.runs.map(\.config.seed) == [5, 6, 7])
        #expect(e.runs.map(\.config.optimizer.learningRate) == [0.01, 0.02, 0.03])
        let error = configError(#"{"mode": "zip", "parameters": {"seed": [5, 6], "optimizer.lr": [0.01]}}"#)
        #expect(error?.location == ".sweep.parameters")
        #expect(error?.message.contains("equal length") == true)
    }

    @Test func randomDrawsAreSeededAndInRange() throws {
        let text = #"{"mode": "random", "samples": 20, "seed": 3, "parameters": {"optimizer.lr": {"log_uniform": [0.001, 0.1]}, "training.epochs": [1, 2, 3], "optimizer.momentum": {"uniform": [0, 0.5]}}}"#
        let a = try parse(text), b = try parse(text)
        #expect(a.runs.count == 20)
        #expect(a.runs.map(\.runId) == b.runs.map(\.runId))
        for r in a.runs {
            #expect(r.config.optimizer.learningRate >= 0.001 && r.config.optimizer.learningRate <= 0.1)
            #expect(r.config.optimizer.momentum >= 0 && r.config.optimizer.momentum < 0.5)
            #expect([1, 2, 3].contains(r.config.training.options.epochs))
        }
        #expect(Set(a.runs.map(\.config.training.options.epochs)).count > 1)
        let c = try parse(text.replacingOccurrences(of: "\"seed\": 3", with: "\"seed\": 4"))
        #expect(c.runs.map(\.runId) != a.runs.map(\.runId))
        #expect(configError(#"{"parameters": {"optimizer.lr": {"uniform": [0, 1]}}}"#)?.message.contains("random") == true)
        #expect(configError(#"{"mode": "random", "parameters": {"seed": [1]}}"#)?.location == ".sweep.samples")
    }

    @Test func randomSearchDropsDuplicatePointsDeterministically() throws {
        // 2 distinct configs: asking for 3 used to fail with "resolve to the same configuration".
        let small = #"{"mode": "random", "samples": 3, "parameters": {"model.hidden": [[8], [16]]}}"#
        let e = try parse(small)
        #expect(e.runs.count == 2)
        #expect(Set(e.runs.map(\.config.model.hidden)) == [[8], [16]])
        #expect(e.notes.count == 1 && e.notes[0].contains("only 2 distinct"))
        #expect(try parse(small).runs.map(\.runId) == e.runs.map(\.runId))
        // A categorical space larger than samples: exactly `samples` distinct points, no note.
        let cat = try parse(#"{"mode": "random", "samples": 5, "seed": 1, "parameters": {"training.epochs": [1, 2, 3], "optimizer.lr": [0.01, 0.1]}}"#)
        #expect(cat.runs.count == 5 && Set(cat.runs.map(\.runId)).count == 5 && cat.notes.isEmpty)
        // Searches without duplicates keep their points (run ids unchanged by the dedup).
        let spec = try SweepSpec.parse(.object(["mode": .string("random"), "samples": .int(4), "seed": .int(3),
                                                "parameters": .object(["optimizer.lr": .object(["uniform": .array([.double(0.1), .double(0.2)])])])]),
                                       at: ".sweep", file: "", runKeys: ["optimizer"])
        var rng = RandomSource(seed: 3, stream: "sweep")
        #expect(spec.points() == (0..<4).map { _ in [JSONValue.double(SweepSpec.rounded(rng.uniform(0.1, 0.2)))] })
    }

    @Test func roundedUniformDrawsStayBelowHigh() throws {
        // 0.99999999 rounds to 1 at 6 significant digits, which [0, 1) excludes.
        #expect(SweepSpec.rounded(0.99999999) == 1)
        #expect(SweepSpec.roundedBelow(0.99999999, 0, 1) < 1)
        #expect(SweepSpec.roundedBelow(0.99999999, 0, 1) >= 0.99999)
        #expect(SweepSpec.roundedBelow(0.5, 0, 1) == 0.5)
        // A narrow range where most draws round onto `high`: all stay in [low, high).
        let e = try parse(#"{"mode": "random", "samples": 50, "parameters": {"optimizer.momentum": {"uniform": [0.8999999, 0.9]}}}"#)
        #expect(e.runs.count == 50)
        let drawn = e.runs.map { $0.sweepValues[0].value.numberValue! }
        #expect(drawn.allSatisfy { $0 >= 0.8999999 && $0 < 0.9 })
    }

    @Test func rangesHonourStepAndExcludeTheEnd() throws {
        let e = try parse(#"{"parameters": {"scenario.train_per_experience": {"range": [10, 41], "step": 10}}}"#)
        #expect(e.runs.map { $0.sweepValues[0].value } == [.int(10), .int(20), .int(30), .int(40)])
        #expect(configError(#"{"parameters": {"seed": {"range": [3, 3]}}}"#)?.message.contains("empty") == true)
    }

    @Test func keyPathErrorsNameThePath() throws {
        // Unknown option: the strict decode names it.
        let unknown = configError(#"{"parameters": {"strategy[0].lamda": [1, 2]}}"#)
        #expect(unknown?.location == ".strategy[0].lamda")
        #expect(unknown?.message.contains("sweep point") == true)
        // Index out of range.
        let index = configError(#"{"parameters": {"strategy[1].lambda": [1]}}"#)
        #expect(index?.location == ".sweep.parameters[\"strategy[1].lambda\"]")
        #expect(index?.message.contains("1 element") == true)
        // Not a run key / bad syntax / wrong type.
        #expect(configError(#"{"parameters": {"sweep.x": [1]}}"#)?.message.contains("not a run setting") == true)
        #expect(configError(#"{"parameters": {"optimizer..lr": [1]}}"#)?.location == ".sweep.parameters[\"optimizer..lr\"]")
        #expect(configError(#"{"parameters": {"optimizer.lr": ["fast"]}}"#)?.location == ".optimizer.lr")
        #expect(configError(#"{"parameters": {"scenario.type.x": [1]}}"#)?.message.contains("not an object") == true)
        #expect(configError(#"{"parameters": {"seed": 3}}"#)?.message.contains("expected a list") == true)
        #expect(configError(#"{"parametres": {"seed": [1]}}"#)?.location == ".sweep.parametres")
    }

    @Test func anyOptionCanBeSwept() throws {
        let e = try parse(#"{"parameters": {"scenario.train_per_experience": [30, 40], "model.hidden": [[4], [8, 4]], "strategy": [["naive"], ["joint"]]}}"#)
        #expect(e.runs.count == 8)
        #expect(Set(e.runs.map(\.config.strategyLabel)) == ["naive", "joint"])
        #expect(Set(e.runs.map(\.config.model.hidden)) == [[4], [8, 4]])
        let layout = SummaryLayout(experiment: e)
        #expect(layout.swept.map(\.name) == ["model.hidden", "scenario.train_per_experience", "sweep:strategy"])
        #expect(layout.swept.map(\.kind) == [.string, .int64, .string])
    }

    @Test func variantsTimesSweepPointsWithReadableNames() throws {
        let e = try parse(#"{"parameters": {"optimizer.lr": [0.01, 0.1], "seed": [0, 1]}}"#,
                          extra: #", "variants": [{"name": "a"}, {"name": "b", "training": {"epochs": 2}}, {"name": "c", "sweep": null}]"#)
        #expect(e.runs.count == 9)
        #expect(e.runs.map(\.variant) == Array(repeating: "a", count: 4) + Array(repeating: "b", count: 4) + ["c"])
        #expect(e.runs[5].config.name == "b_lr=0.01_seed=1")
        #expect(e.runs[8].config.name == "c" && e.runs[8].sweepValues.isEmpty)
        let layout = SummaryLayout(experiment: e)
        #expect(layout.sweptColumnNames == ["optimizer.lr", "seed"])
        #expect(layout.swept.first?.kind == .float64)
    }

    @Test func runIdsAreStableHashesOfTheResolvedConfig() throws {
        let text = #"{"parameters": {"optimizer.lr": [0.01, 0.1], "seed": [0, 1]}}"#
        let a = try parse(text), b = try parse(text)
        #expect(a.runs.map(\.runId) == b.runs.map(\.runId))
        // Same resolved config ⇒ same id however it is written (0.1 vs 0.10, defaults spelled out).
        let c = try parse(#"{"parameters": {"optimizer.lr": [0.010, 0.10], "seed": [0, 1]}}"#, extra: #", "training": {}"#)
        #expect(c.runs.map(\.runId) == a.runs.map(\.runId))
        for r in a.runs { #expect(r.runId == r.config.runId) }
        #expect(a.runs[0].runId.count == 16)
        #expect(configError(#"{"parameters": {"optimizer.lr": [0.1, 0.10]}}"#)?.message.contains("same configuration") == true)
    }

    @Test func keyPathParsing() throws {
        let p = try JSONKeyPath("strategy[0].lambda")
        #expect(p.components == [.key("strategy"), .index(0), .key("lambda")])
        #expect(p.flatText == "strategy.0.lambda" && p.lastKey == "lambda")
        for bad in ["", "a.", ".a", "a[x]", "a[1", "a b"] {
            #expect(throws: KeyPathError.self) { try JSONKeyPath(bad) }
        }
        let set = try p.setting(.int(5), in: .object(["strategy": .array([.object(["type": .string("ewc")])])]))
        #expect(set == .object(["strategy": .array([.object(["type": .string("ewc"), "lambda": .int(5)])])]))
    }

    @Test func shardsAreDisjointAndCoverTheSweep() throws {
        let e = try SweepFixtures.experiment(SweepFixtures.twentyFour())
        let shards = try (0..<5).map { try SweepShard(index: $0, count: 5).select(e.runs).map(\.runId) }
        #expect(shards.flatMap { $0 }.sorted() == e.runs.map(\.runId).sorted())
        #expect(Set(shards.flatMap { $0 }).count == 24)
        let slurm = try SweepShard.parse("slurm", environment: ["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"])
        #expect(slurm == (try SweepShard(index: 2, count: 4)))
        #expect(throws: ShardError.self) { try SweepShard.parse("3/3") }
        #expect(throws: ShardError.self) { try SweepShard.parse("slurm", environment: [:]) }
        #expect(throws: ShardError.self) { try SweepShard.parse("1-3") }
    }
}

@Suite("Sweep block lists")
struct SweepBlockListTests {
    @Test func aListOfBlocksIsTheirCartesianProduct() throws {
        let e = try SweepFixtures.experiment("""
        {"name": "x", "scenario": {"type": "habit_drift", "train_per_experience": 50, "test_per_experience": 20}, "strategy": ["naive"],
         "sweep": [{"mode": "random", "samples": 4, "seed": 1, "parameters": {"optimizer.lr": {"log_uniform": [0.001, 0.1]}}},
                   {"parameters": {"seed": {"range": [0, 3]}}}]}
        """)
        #expect(e.runs.count == 12)
        #expect(e.sweptPaths == ["optimizer.lr", "seed"])
        #expect(e.runs.map(\.config.seed) == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2])
        #expect(Set(e.runs.map(\.config.optimizer.learningRate)).count == 4)
        #expect(e.runs[0].config.optimizer.learningRate == e.runs[2].config.optimizer.learningRate)
        do {
            _ = try SweepFixtures.experiment(#"{"name": "x", "scenario": "habit_drift", "sweep": [{"parameters": {"seed": [1]}}, {"parameters": {"seed": [2]}}]}"#)
            Issue.record("a path swept in two blocks was accepted")
        } catch let error as ConfigError {
            #expect(error.location == ".sweep[1].parameters[\"seed\"]")
        }
    }
}
