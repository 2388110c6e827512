import ContinualCore
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// Populations in every view (issue 44 item 3): every user's final model is kept and exported by
/// name, and the users show in `run`, `validate` and `inspect`.
@Suite("Users of a population")
struct PopulationUsersTests {
    /// The three people of `DatasetUsersTests` in one CSV (shuffled rows; `day` orders them).
    func peopleCSV(_ dir: String) throws -> String {
        var rows = DatasetUsersTests.rows()
        var rng = RandomSource(seed: 5)
        rng.shuffle(&rows)
        let path = dir + "/people.csv"
        try DatasetUsersTests.csv(rows, withUser: true).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A person's test labels of their second experience, in time order.
    func aloneLabels(_ own: [DatasetUsersTests.Row]) -> [Int32] {
        own.filter { $0.experience == 1 && $0.split == "test" }.sorted { $0.day < $1.day }.map { Int32($0.label) }
    }

    func scenario(_ csv: String) -> String {
        #"{"type": "dataset", "path": "\#(csv)", "user_column": "user", "time_column": "day", "classes": 2}"#
    }

    @Test("each user's stored model is the one training that user alone makes, and export rebuilds it by name")
    func keptModels() throws {
        try withScenarioTempDir { dir in
            let scenario = scenario(try peopleCSV(dir))
            let experiment = try DatasetUsersTests.experiment(scenario, extra: #", "population": {"users": 3, "jobs": 2}"#)
            let run = experiment.runs[0]
            let result = RunExecutor.execute(run)
            let p = try #require(result.population)
            #expect(p.finalParameters.count == 3)
            let out = dir + "/r.h5"
            try ResultsWriter.writeExperiment([result], experiment: experiment, to: out)
            for (i, person) in DatasetUsersTests.people.enumerated() {
                let own = DatasetUsersTests.rows().filter { $0.user == person }
                let path = dir + "/\(person).csv"
                try DatasetUsersTests.csv(own, withUser: false).write(toFile: path, atomically: true, encoding: .utf8)
                var alone = DatasetScenario(path: path)
                alone.classes = 2
                let (outcome, _, _) = try RunExecutor.train(run.config, stream: try alone.makeStream(seed: 0), seed: p.modelSeeds[i])
                #expect(p.finalParameters[i] == outcome.finalModel.parameters, "user \(person)")
                // Exported by name: that model, with that person's own test sets.
                let stored = try StoredModel.load(results: out, run: run.runId, user: person)
                #expect(stored.model.parameters == outcome.finalModel.parameters && stored.user == person)
                #expect(stored.stream.experiences.map(\.test.count) == [6, 6])
                #expect(stored.stream.experiences[1].test.labels == aloneLabels(own))
            }
            #expect(Set(p.finalParameters.map { "\($0)" }).count == 3)   // three different people, three models
            // The user id works too; an unknown name lists the names; no user: the message says --user.
            #expect(try StoredModel.load(results: out, run: run.runId, user: "1").user == "ben")
            let unknown = #expect(throws: StoredModel.Failure.self) { try StoredModel.load(results: out, run: run.runId, user: "dan") }
            #expect(unknown?.description.contains("ana, ben, cy") == true)
            let none = #expect(throws: StoredModel.Failure.self) { try StoredModel.load(results: out, run: run.runId) }
            #expect(none?.description.contains("--user") == true)

            // keep_models false: nothing kept, the run id unchanged by the key's default, export says why.
            let off = try DatasetUsersTests.experiment(scenario, extra: #", "population": {"users": 3, "keep_models": false}"#)
            #expect(off.runs[0].runId != run.runId)
            let withDefault = try DatasetUsersTests.experiment(scenario, extra: #", "population": {"users": 3, "keep_models": true, "jobs": 2}"#)
            #expect(withDefault.runs[0].runId == run.runId)
            let plain = RunExecutor.execute(off.runs[0])
            #expect(plain.population?.finalParameters.isEmpty == true)
            let out2 = dir + "/off.h5"
            try ResultsWriter.writeExperiment([plain], experiment: off, to: out2)
            let refused = #expect(throws: StoredModel.Failure.self) { try StoredModel.load(results: out2, run: plain.runId, user: "ana") }
            #expect(refused?.description.contains("keep_models") == true)
        }
    }

    @Test("the stored users read back with names, status and metrics; the headline fits its width")
    func rows() throws {
        try withScenarioTempDir { dir in
            let experiment = try DatasetUsersTests.experiment(scenario(try peopleCSV(dir)), extra: #", "population": {"users": 3}"#)
            let result = RunExecutor.execute(experiment.runs[0])
            let out = dir + "/r.h5"
            try ResultsWriter.writeExperiment([result], experiment: experiment, to: out)
            let stored = try #require(try ResultsReader.read(path: out).runs[0].population)
            #expect(stored == PopulationRows(try #require(result.population)))
            #expect(stored.names == DatasetUsersTests.people && stored.named && stored.completed == 3 && stored.modelsKept)
            #expect(stored.metrics["acc"] == result.population!.values[0])
            #expect(stored.headline() == "population: 3 people (ana, ben, cy), 3 completed")
            let many = PopulationRows(names: (0..<500).map { "user-\($0)" }, named: true, status: Array(repeating: "completed", count: 500),
                                      metrics: [:], modelsKept: true)
            #expect(many.headline().count <= 80 && many.headline().contains("more"))
            let table = stored.table().split(separator: "\n")
            #expect(table.count == 4 && table[2].hasPrefix("ben") && table.allSatisfy { $0.count <= 80 })
        }
    }

    @Test("run, validate, inspect --users and export --user show and use the people by name")
    func cli() throws {
        try withScenarioTempDir { dir in
            let exp = dir + "/e.json"
            try """
            {"name": "people", "seed": 3, "scenario": \(scenario(try peopleCSV(dir))), "model": {"hidden": [6]},
             "optimizer": {"type": "sgd", "lr": 0.1}, "training": {"epochs": 3, "batch_size": 4},
             "population": {"users": 3}, "output": "\(dir)/r.h5"}
            """.write(toFile: exp, atomically: true, encoding: .utf8)
            let v = try runCLI(["validate", exp])
            #expect(v.status == 0 && v.stdout.contains("population: 3 users, one model each"), "\(v.stderr)")
            let r = try runCLI(["run", exp])
            #expect(r.status == 0 && r.stdout.contains("population: 3 people (ana, ben, cy), 3 completed"), "\(r.stdout)\(r.stderr)")
            let i = try runCLI(["inspect", dir + "/r.h5", "--brief", "--users"])
            #expect(i.status == 0 && i.stdout.contains("population: 3 people") && i.stdout.contains("\ncy "), "\(i.stdout)")
            let onnx = dir + "/ben.onnx"
            let e = try runCLI(["export", dir + "/r.h5", "--user", "ben", "--format", "onnx", "-o", onnx])
            #expect(e.status == 0 && FileManager.default.fileExists(atPath: onnx), "\(e.stdout)\(e.stderr)")
            let missing = try runCLI(["export", dir + "/r.h5", "--format", "onnx", "-o", onnx])
            #expect(missing.status == 2 && missing.stderr.contains("--user"))
        }
    }

    @Test("a sweep's population runs that agree share one inspect line, and every line fits 80 columns")
    func sweepLines() throws {
        try withScenarioTempDir { dir in
            let exp = dir + "/e.json"
            try """
            {"name": "people_sweep_with_a_long_name_for_the_header", "seed": 3,
             "scenario": \(scenario(try peopleCSV(dir))), "model": {"hidden": [6]},
             "optimizer": {"type": "sgd", "lr": 0.1}, "training": {"epochs": 2, "batch_size": 4},
             "population": {"users": 3}, "sweep": {"parameters": {"seed": [1, 2, 3]}}}
            """.write(toFile: exp, atomically: true, encoding: .utf8)
            let out = dir + "/a_results_file_whose_path_makes_the_first_line_long.h5"
            let r = try runCLI(["sweep", exp, "-o", out])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            let i = try runCLI(["inspect", out])
            #expect(i.status == 0 && i.stdout.contains("\n3 runs: population: 3 people (ana, ben, cy), 3 completed"), "\(i.stdout)")
            #expect(!i.stdout.contains("seed=1: population"), "\(i.stdout)")
            let wide = i.stdout.split(separator: "\n").filter { $0.count > 80 && !$0.hasPrefix(dir) }
            #expect(wide.isEmpty, "\(wide)")
            let each = try runCLI(["inspect", out, "--users"])
            #expect(each.stdout.components(separatedBy: ": population: 3 people").count - 1 == 3, "\(each.stdout)")
        }
    }
}
