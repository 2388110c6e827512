import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// A tune block's `"extend"` (`GridExtension`): values beyond a grid's edge are trained only
/// while the choice sits at that edge, so a final choice is at an edge only where the extension
/// ran out — and that is recorded.
@Suite("Tuning grids that extend at their edges")
struct GridExtensionTests {
    func text(grid: String = "[0.0003, 0.001]", extend: String = #"{"optimizer.lr": [0.0001, 0.003, 0.01, 0.03, 0.1]}"#) -> String {
        """
        {"name": "extend_test", "seed": 1,
         "scenario": {"type": "split_digits", "path": "\(digitsPath)", "setting": "class"},
         "model": {"hidden": [16]}, "optimizer": {"type": "adam", "lr": 0.001},
         "training": {"steps_per_experience": 6, "batch_size": 32},
         "tune": {"parameters": {"optimizer.lr": \(grid)}, "extend": \(extend),
                  "validation_fraction": 0.2, "experiences": 2, "seeds": [7]},
         "variants": [
           {"name": "naive", "strategy": ["naive"]},
           {"name": "ewc", "strategy": [{"type": "ewc", "lambda": 10}],
            "tune": {"parameters": {"strategy[0].lambda": [1, 100]}, "extend": {"strategy[0].lambda": [0.01, 10000]}}}
         ]}
        """
    }

    func values(_ r: TuningRecord, _ path: String) -> [Double] {
        let j = r.parameters.firstIndex(of: path)!
        return Array(Set(r.points.map { $0[j].numberValue! })).sorted()
    }

    @Test("the rule: the nearest unused value on the chosen side, none from inside")
    func rule() throws {
        var e = GridExtension(below: [.double(0.0001)], above: [.double(0.01), .double(0.1)])
        let grid: [JSONValue] = [.double(0.001), .double(0.003)]
        #expect(e.step(chosen: .double(0.003), values: grid) == .double(0.01))
        #expect(e.step(chosen: .double(0.01), values: grid + [.double(0.01)]) == .double(0.1))
        #expect(e.step(chosen: .double(0.1), values: grid + [.double(0.01), .double(0.1)]) == nil)
        #expect(e.step(chosen: .double(0.003), values: grid + [.double(0.01), .double(0.1)]) == nil)
        #expect(e.step(chosen: .double(0.001), values: grid) == .double(0.0001))
        #expect(GridExtension.edge(of: .int(1), in: [.int(1)]) == nil)
        #expect(GridExtension.edge(of: .int(1), in: [.int(3), .double(1.0), .int(2)]) == .lower)
    }

    @Test("bad extensions name their key path")
    func errors() throws {
        func message(_ tune: String) -> String {
            let t = """
            {"name": "t", "scenario": {"type": "split_digits", "path": "\(digitsPath)"}, "tune": \(tune)}
            """
            do { _ = try ExperimentFile.parse(data: Data(t.utf8), path: "x.json"); return "" } catch { return "\(error)" }
        }
        let at = #".tune.extend["optimizer.lr"]"#
        #expect(message(#"{"parameters": {"optimizer.lr": [0.1, 1]}, "extend": {"optimizer.lr": [0.5]}}"#).contains(at + ": 0.5 lies within"))
        #expect(message(#"{"parameters": {"optimizer.lr": [0.1, 1]}, "extend": {"optimizer.lr": [2, 2.0]}}"#).contains("twice"))
        #expect(message(#"{"parameters": {"optimizer.lr": [0.1]}, "extend": {"optimizer.lr": [2]}}"#).contains("two or more values"))
        #expect(message(#"{"parameters": {"optimizer.lr": [0.1, 1]}, "extend": {"optimizer.lr": ["fast"]}}"#).contains(at + ": expected numbers"))
        #expect(message(#"{"parameters": {"optimizer.lr": [0.1, 1]}, "extend": {"optimizer.momentum": [2]}}"#).contains("is not a tuned parameter"))
        #expect(message(#"{"parameters": {"optimizer.type": ["sgd", "adam"]}, "extend": {"optimizer.type": [2]}}"#).contains("grid of numbers"))
        #expect(message(#"{"parameters": {"optimizer.lr": [0.1, 1]}, "extend": [2]}"#).contains(".tune.extend: expected an object"))
    }

    @Test("a choice rests at an edge only where the extension ran out; the trained points stay a cartesian grid")
    func rounds() async throws {
        let file = try ExperimentFile.parse(data: Data(text().utf8), path: "e.json")
        let records = try await Tuner.tune(file, jobs: 2)
        let fullLR = [0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1]
        for r in records {
            let c = try #require(r.chosen)
            #expect(c == TuningRecord.best(r.meanScores))
            #expect(r.scores.joined().allSatisfy { $0.isFinite })
            // Trained values are a contiguous stretch of grid ∪ extension holding the grid.
            let lr = values(r, "optimizer.lr")
            let first = try #require(fullLR.firstIndex(of: lr[0]))
            #expect(Array(fullLR[first..<first + lr.count]) == lr && Set(lr).isSuperset(of: [0.0003, 0.001]))
            // Every combination of the trained values was trained, once.
            let sizes = r.parameters.map { values(r, $0).count }
            #expect(r.points.count == sizes.reduce(1, *) && Set(r.points).count == r.points.count)
            // At an edge only where nothing is left on that side.
            for (path, edge) in r.edges {
                let all = path == "optimizer.lr" ? fullLR : [0.01, 1, 100, 10000]
                #expect(values(r, path).contains(edge == .upper ? all.last! : all.first!), "\(r.variant): \(path) \(edge)")
            }
        }
        // Six Adam steps: 0.001 beats 0.0003, so the learning rate moved up at least once.
        #expect(values(records[0], "optimizer.lr").contains(0.003))
        #expect(!values(records[0], "optimizer.lr").contains(0.0001))
        let again = try await Tuner.tune(file, jobs: 1)
        #expect(again.map(\.points) == records.map(\.points) && again.map(\.chosen) == records.map(\.chosen))
        #expect(again.flatMap { $0.scores.joined() }.map(\.bitPattern) == records.flatMap { $0.scores.joined() }.map(\.bitPattern))
        // Through the MPI exchange (`TuningShare`) of a world of one: the entries' bit patterns
        // survive it (the ranks of mpi_check.sh go through the same encoding).
        let shared = try await Tuner.tune(file, jobs: 2, world: .local())
        #expect(shared.map(\.jsonValue) == records.map(\.jsonValue))
        #expect(shared.flatMap { $0.scores.joined() }.map(\.bitPattern) == records.flatMap { $0.scores.joined() }.map(\.bitPattern))
        // A stop under a world still goes through the round's exchange (the flag every rank reads)
        // and ends the tuning with `TuningInterrupted`, not a missing entry.
        await #expect(throws: TuningInterrupted.self) {
            _ = try await Tuner.tune(file, jobs: 1, world: .local(), shouldStop: { true })
        }
    }

    @Test("an extended tuning resumes from its journal with the uninterrupted records")
    func resume() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let file = try ExperimentFile.parse(data: Data(text().utf8), path: dir.path("e.json"))
        let full = TuningJournal(results: dir.path("full.h5"))
        try full.start()
        let whole = try await Tuner.tune(file, jobs: 2, journal: full)
        let entries = full.entries()
        #expect(entries.count == whole.reduce(0) { $0 + $1.points.count * $1.seeds.count })
        let roundOne = try Tuner.trials(file)
        #expect(entries.count > roundOne.count)
        // Keep round one and one later run: the rest runs again and agrees bit for bit.
        let later = entries.keys.sorted().first { id in !roundOne.contains { $0.run.runId == id } }!
        var kept = Dictionary(uniqueKeysWithValues: roundOne.map { ($0.run.runId, entries[$0.run.runId]!) })
        kept[later] = entries[later]
        let partial = TuningJournal(results: dir.path("partial.h5"))
        try partial.start(with: kept)
        let resumed = try await Tuner.tune(file, jobs: 2, journal: partial)
        #expect(resumed.map(\.points) == whole.map(\.points) && resumed.map(\.chosen) == whole.map(\.chosen))
        #expect(resumed.flatMap { $0.scores.joined() }.map(\.bitPattern) == whole.flatMap { $0.scores.joined() }.map(\.bitPattern))
    }

    @Test("validate resolves every extension value and counts the most it may run")
    func validate() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let good = dir.write("good.json", text())
        let v = try runCLI(["validate", good])
        #expect(v.status == 0 && v.stdout.contains("6 selection runs") && v.stdout.contains("up to 35"), "\(v.stdout)")
        let bad = dir.write("bad.json", text(extend: #"{"optimizer.lr": [-0.5, 0.01]}"#))
        let b = try runCLI(["validate", bad])
        #expect(b.status != 0 && b.stderr.contains(#".tune.extend["optimizer.lr"]: .optimizer.lr: must be"#), "\(b.stderr)")
        // A combination only a later round would train: 3 users cannot fill 4 clients per round.
        let fed = dir.write("fed.json", """
            {"name": "fed", "seed": 1, "scenario": {"type": "habit_drift", "train_per_experience": 40, "test_per_experience": 10},
             "population": {"users": 20}, "model": {"hidden": [16]}, "optimizer": {"type": "sgd", "lr": 0.05},
             "training": {"batch_size": 16}, "strategy": ["naive"],
             "federation": {"rounds": 2, "clients_per_round": 2, "local_epochs": 1},
             "tune": {"parameters": {"federation.clients_per_round": [2, 4], "population.users": [20, 8]},
                      "extend": {"population.users": [3]}, "seeds": [7]}}
            """)
        for command in [["validate", fed], ["sweep", fed, "-o", dir.path("fed.h5")]] {
            let f = try runCLI(command)
            #expect(f.status != 0 && f.stderr.contains(#".tune.extend["population.users"]"#) && !f.stdout.contains("tuning: 1/"),
                    "\(command[0]): \(f.stderr)")
        }
    }

    @Test("null turns extension off, for one path or the block; two grid values of one configuration are refused")
    func nullAndDuplicates() throws {
        func spec(_ tune: String) throws -> TuneSpec {
            let t = """
            {"name": "t", "scenario": {"type": "split_digits", "path": "\(digitsPath)"}, "tune": \(tune)}
            """
            return try #require(try ExperimentFile.parse(data: Data(t.utf8), path: "x.json").tuneTargets.first).spec
        }
        #expect(try spec(#"{"parameters": {"optimizer.lr": [0.1, 1]}, "extend": null}"#).extensions.isEmpty)
        #expect(try spec(#"{"parameters": {"optimizer.lr": [0.1, 1]}, "extend": {"optimizer.lr": null}}"#).extensions.isEmpty)
        let dup = """
            {"name": "t", "scenario": {"type": "split_digits", "path": "\(digitsPath)"},
             "tune": {"parameters": {"optimizer.lr": [0.001, 1e-3]}}}
            """
        let file = try ExperimentFile.parse(data: Data(dup.utf8), path: "x.json")
        #expect { try Tuner.trials(file) } throws: { "\($0)".contains("resolve to the same configuration") }
    }

    @Test("inspect prints each variant's choice and validation score, and a note where a choice rests at an edge")
    func inspectShowsEdges() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("e.json", text(extend: "null"))
        let out = dir.path("r.h5")
        let tuned = try runCLI(["sweep", exp, "-o", out, "--tune-only"])
        #expect(tuned.status == 0, "\(tuned.stderr)")
        let records = try TuningReader.read(path: out)
        #expect(try ResultsReader.read(path: out).tuning == records)
        let shown = try runCLI(["inspect", out])
        #expect(shown.status == 0, "\(shown.stderr)")
        for r in records {
            let c = try #require(r.chosen)
            let score = String(format: "%.2f %%", r.meanScores[c] * 100)
            #expect(shown.stdout.contains("\(r.variant): \(r.chosenText)  (validation ACC \(score))"), "\(shown.stdout)")
        }
        // Every trained lr column has two values here, so every choice sits at one of its edges.
        let notes = shown.stdout.components(separatedBy: "at an edge of the values trained: lr (upper)").count - 1
        #expect(notes == records.count && records.allSatisfy { $0.edgeText != nil })
    }
}
