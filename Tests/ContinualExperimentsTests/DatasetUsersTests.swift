import ContinualCore
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// Users in a data file: a `user_column` is never a feature, picks each user's rows, and turns
/// the file into a population of its users.
@Suite("Users in data files")
struct DatasetUsersTests {
    /// Three people, two experiences each, 12 train and 6 test rows per person and experience;
    /// each person's label follows their own rule, and the rows are written in shuffled order (the
    /// `day` column restores each person's time order).
    static let people = ["ana", "ben", "cy"]

    struct Row {
        var user: String
        var day: Int
        var experience: Int
        var split: String
        var x: [Float]
        var label: Int
    }

    static func rows() -> [Row] {
        var rng = RandomSource(seed: 11)
        var rows: [Row] = []
        for (p, person) in people.enumerated() {
            var day = 0
            for e in 0..<2 {
                for k in 0..<18 {
                    let x = (0..<3).map { _ in Float(rng.normal()) }
                    // Person p's rule flips with the experience (real drift), differently per person.
                    let w: [Float] = [[1, -1, 0.5], [-0.5, 1, 1], [0.3, 0.3, -1]][p]
                    let score = zip(w, x).map(*).reduce(0, +) * (e == 0 ? 1 : -1)
                    rows.append(Row(user: person, day: day, experience: e, split: k % 3 == 2 ? "test" : "train", x: x,
                                    label: score > 0 ? 1 : 0))
                    day += 1
                }
            }
        }
        return rows
    }

    static func csv(_ rows: [Row], withUser: Bool) -> String {
        var text = (withUser ? "user,day," : "") + "experience,split,f0,f1,f2,label\n"
        for r in rows {
            text += (withUser ? "\(r.user),\(r.day)," : "") + "\(r.experience),\(r.split),"
                + r.x.map { "\($0)" }.joined(separator: ",") + ",\(r.label)\n"
        }
        return text
    }

    static func experiment(_ scenario: String, extra: String = "") throws -> ExperimentFile {
        let json = """
        {"name": "u", "seed": 3, "scenario": \(scenario), "model": {"hidden": [6]},
         "optimizer": {"type": "sgd", "lr": 0.1}, "training": {"epochs": 3, "batch_size": 4}\(extra)}
        """
        return try ExperimentFile.parse(data: Data(json.utf8))
    }

    @Test("a CSV with a user column runs as a population; each user's matrix equals running that user's rows alone")
    func populationMatchesEachUserAlone() throws {
        try withScenarioTempDir { dir in
            var rows = Self.rows()
            var rng = RandomSource(seed: 5)
            rng.shuffle(&rows)  // file order is not time order
            let all = dir + "/people.csv"
            try Self.csv(rows, withUser: true).write(toFile: all, atomically: true, encoding: .utf8)
            let scenario = #"{"type": "dataset", "path": "\#(all)", "user_column": "user", "time_column": "day", "classes": 2}"#
            let run = try Self.experiment(scenario, extra: #", "population": {"users": 3, "jobs": 2}"#).runs[0]
            let result = RunExecutor.execute(run)
            #expect(result.status == .completed, "\(result.message)")
            let p = try #require(result.population)
            #expect(p.userNames == Self.people)  // every user, in text order
            #expect(result.featureNames == ["f0", "f1", "f2"])  // user and day are never features

            for (i, person) in Self.people.enumerated() {
                // The same person alone: their rows in time order, no user column.
                let own = Self.rows().filter { $0.user == person }
                let path = dir + "/\(person).csv"
                try Self.csv(own, withUser: false).write(toFile: path, atomically: true, encoding: .utf8)
                var alone = DatasetScenario(path: path)
                alone.classes = 2
                let stream = try alone.makeStream(seed: 0)
                #expect(stream.experiences.map(\.train.count) == [12, 12] && stream.experiences.map(\.test.count) == [6, 6])
                let seed = p.modelSeeds[i]
                let (outcome, _, _) = try RunExecutor.train(run.config, stream: stream, seed: seed)
                #expect(p.matrices[i] == outcome.accuracy, "user \(person)")
            }
            // Users differ (their rules differ), so the matrices are not all the same.
            #expect(Set(p.matrices.map { "\($0)" }).count > 1)

            // The results file names each index's user.
            let out = dir + "/r.h5"
            try ResultsWriter.writeExperiment([result], experiment: try Self.experiment(scenario), to: out)
            let h5 = try HDF5File.open(path: out)
            defer { try? h5.close() }
            let g = try h5.root.openGroup("runs/\(result.runId)/population")
            #expect(try g.openDataset("user_name").readStrings() == Self.people)
            #expect(try g.openDataset("accuracy_matrices").shape == [3, 2, 2])
        }
    }

    @Test("a sample of users is drawn from the population seed; a list picks users; one user runs alone")
    func selection() throws {
        try withScenarioTempDir { dir in
            let all = dir + "/people.csv"
            try Self.csv(Self.rows(), withUser: true).write(toFile: all, atomically: true, encoding: .utf8)
            var s = DatasetScenario(path: all)
            s.userColumn = "user"
            s.timeColumn = "day"
            let two = try s.forPopulation(users: 2, seed: 1)
            #expect(two.memberIds.count == 2 && Set(two.memberIds).isSubset(of: Self.people))
            #expect(try s.forPopulation(users: 2, seed: 1).memberIds == two.memberIds)  // deterministic
            let samples = Set((1...20).map { try! s.forPopulation(users: 2, seed: UInt64($0)).memberIds })
            #expect(samples.count > 1)  // the seed picks the sample
            var listed = s
            listed.users = ["cy", "ana"]
            #expect(try listed.forPopulation(users: 2, seed: 1).memberIds == ["cy", "ana"])
            var one = s
            one.user = "ben"
            let stream = try one.makeStream(seed: 0)
            #expect(stream.experiences.map(\.train.count) == [12, 12])
            #expect(stream.experiences[0].metadata["user"] == "ben")
            // Pooled: every user's rows, still without the user column as a feature. An undeclared
            // `day` is refused (it looks like a time); listing it in `feature_columns` keeps it.
            var undeclared = s
            undeclared.timeColumn = nil
            #expect(throws: ScenarioError.self) { try undeclared.makeStream(seed: 0) }
            var kept = undeclared
            kept.featureColumns = ["day", "f0", "f1", "f2"]
            let pooled = try kept.makeStream(seed: 0)
            #expect(pooled.featureNames == ["day", "f0", "f1", "f2"] && pooled.experiences.map(\.train.count) == [36, 36])
            // Equalised: every member truncated to the smallest member's sizes.
            var eq = s
            eq.equaliseUsers = true
            let member = try eq.forPopulation(users: 3, seed: 1)
            var rng = RandomSource(seed: 0)
            #expect(try member.user(0, spread: 0, rng: &rng).makeStream(seed: 0).experiences.map(\.test.count) == [6, 6])
        }
    }

    @Test("unknown or missing user columns and impossible populations are clear errors naming the key path")
    func errors() throws {
        try withScenarioTempDir { dir in
            let all = dir + "/people.csv"
            try Self.csv(Self.rows(), withUser: true).write(toFile: all, atomically: true, encoding: .utf8)
            func message(_ body: () throws -> Void) -> String {
                do { try body(); return "" } catch { return "\(error)" }
            }
            // Unknown user column (CSV): the key and the columns found.
            var bad = DatasetScenario(path: all)
            bad.userColumn = "person"
            let m1 = message { _ = try bad.makeStream(seed: 0) }
            #expect(m1.contains(".scenario.user_column") && m1.contains("no column \"person\"") && m1.contains("found: user, day"))
            // A population of a data file without a user column.
            let m0 = message { _ = try Self.experiment(#"{"type": "dataset", "path": "\#(all)"}"#, extra: #", "population": {"users": 2}"#) }
            #expect(m0.contains(".scenario.user_column") && m0.contains("needs \"user_column\""), "\(m0)")
            // More members than users.
            var s = DatasetScenario(path: all)
            s.userColumn = "user"
            s.timeColumn = "day"
            let m2 = message { _ = try s.forPopulation(users: 4, seed: 1) }
            #expect(m2.contains(".population.users") && m2.contains("3 users"))
            // A listed user not in the file.
            s.users = ["ana", "zed"]
            let m3 = message { _ = try s.makeStream(seed: 0) }
            #expect(m3.contains(".scenario.users") && m3.contains("\"zed\""))
            // A time column that is not numeric.
            var t = DatasetScenario(path: all)
            t.userColumn = "day"
            t.timeColumn = "user"
            let m4 = message { _ = try t.makeStream(seed: 0) }
            #expect(m4.contains(".scenario.time_column") && m4.contains("not a finite number"))
            // JSON: "users" without "user_column".
            #expect(throws: ConfigError.self) {
                try Self.experiment(#"{"type": "dataset", "path": "\#(all)", "users": ["ana"]}"#)
            }
            // HDF5: a key column the file does not have.
            let h5 = dir + "/s.h5"
            var plain = DatasetScenario(path: all)
            plain.userColumn = "user"
            plain.timeColumn = "day"
            plain.classes = 2
            try ScenarioArchive.write(try plain.makeStream(seed: 0), to: h5)
            var k = DatasetScenario(path: h5)
            k.userColumn = "user"
            let m5 = message { _ = try k.makeStream(seed: 0) }
            #expect(m5.contains(".scenario.user_column") && m5.contains("train/user"))
            // A missing converted file names the command that makes it.
            let m6 = message { _ = try DatasetScenario(path: dir + "/hapt.h5").makeStream(seed: 0) }
            #expect(m6.contains("continualkit datasets hapt -o"))
        }
    }

    /// `stream` as an HDF5 scenario with its key columns as per-split datasets: `user` (text)
    /// and the CSV's `day` as integers named `time`.
    static func writeWithKeys(_ stream: ExperienceStream, _ keys: [SampleKeys], to h5: String, time: String) throws {
        try ScenarioArchive.write(stream, to: h5)
        let file = try HDF5File.open(path: h5, mode: .readWrite)
        for (i, k) in keys.enumerated() {
            let g = try file.root.openGroup("experiences/" + ScenarioArchive.groupName(i, count: keys.count))
            for (split, cols) in [("train", k.train), ("test", k.test)] {
                let s = try g.openGroup(split)
                _ = try s.write(cols["user"]!, name: "user")
                _ = try s.write(cols["day"]!.map { Int64($0)! }, shape: [cols["day"]!.count], name: time)
            }
        }
        try file.close()
    }

    @Test("HDF5 key columns: per-split user and time datasets pick and order each user's rows")
    func hdf5Keys() throws {
        try withScenarioTempDir { dir in
            let csv = dir + "/people.csv"
            let rows = Self.rows()
            try Self.csv(rows, withUser: true).write(toFile: csv, atomically: true, encoding: .utf8)
            var c = DatasetScenario(path: csv)
            c.userColumn = "user"
            c.timeColumn = "day"
            c.classes = 2
            // The pooled CSV stream and its keys, written as an HDF5 scenario with key datasets.
            let (stream, keys) = try c.readFile()
            let h5 = dir + "/people.h5"
            try Self.writeWithKeys(stream, keys, to: h5, time: "time")
            var h = DatasetScenario(path: h5)
            h.userColumn = "user"
            h.timeColumn = "time"
            for person in Self.people {
                c.user = person
                h.user = person
                let a = try c.makeStream(seed: 0), b = try h.makeStream(seed: 0)
                #expect(a.experiences.map(\.train) == b.experiences.map(\.train))
                #expect(a.experiences.map(\.test) == b.experiences.map(\.test))
            }
        }
    }
}
