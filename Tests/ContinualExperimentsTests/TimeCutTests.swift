import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 44 item 1: a CSV of `user,day,f1,f2,label` with no experience or split column runs per
/// user and as a population, experiences cut by `time_column` and test rows that never precede a
/// training row of their experience, per user.
@Suite("Time-based cuts and leak-free splits")
struct TimeCutTests {
    /// Three people with different first days, lengths and gaps (every 7th day missing; ben has
    /// two rows on even days), rows shuffled in the file.
    static func rows() -> [(user: String, day: Int, x: [Double], label: Int)] {
        var rng = RandomSource(seed: 21)
        var rows: [(user: String, day: Int, x: [Double], label: Int)] = []
        for (user, first, days) in [("ana", 0, 40), ("ben", 5, 45), ("cy", 100, 50)] {
            for day in first..<(first + days) where day % 7 != 3 {
                for _ in 0..<(user == "ben" && day % 2 == 0 ? 2 : 1) {
                    let x = [rng.normal(), rng.normal()]
                    rows.append((user, day, x, x[0] + (day % 20 < 10 ? x[1] : -x[1]) > 0 ? 1 : 0))
                }
            }
        }
        rng.shuffle(&rows)
        return rows
    }

    static func write(_ dir: String) throws -> String {
        let path = dir + "/days.csv"
        let text = "user,day,f1,f2,label\n" + rows().map { "\($0.user),\($0.day),\($0.x[0]),\($0.x[1]),\($0.label)\n" }.joined()
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func scenario(_ path: String, _ cut: String = #""experiences": {"every": 10, "unit": "days"}, "test": {"last": 3}"#) -> String {
        #"{"type": "dataset", "path": "\#(path)", "user_column": "user", "time_column": "day", "classes": 2, \#(cut)}"#
    }

    static func experiment(_ scenario: String, extra: String = "") throws -> ExperimentFile {
        try ExperimentFile.parse(data: Data("""
            {"name": "t", "seed": 2, "scenario": \(scenario), "model": {"hidden": [4]},
             "optimizer": {"type": "sgd", "lr": 0.1}, "training": {"epochs": 2, "batch_size": 4}\(extra)}
            """.utf8))
    }

    static func dataset(_ json: String) throws -> DatasetScenario {
        try #require(try experiment(json).runs[0].config.scenario.options as? DatasetScenario)
    }

    @Test("every 10 days from each user's first day; the last 3 days of each are test; no test row precedes a training row")
    func everyAndLast() throws {
        try withScenarioTempDir { dir in
            let s = try Self.dataset(Self.scenario(try Self.write(dir)))
            let (stream, keys) = try s.readFile()
            #expect(stream.experiences.map(\.name) == ["days 0–10", "days 10–20", "days 20–30", "days 30–40", "days 40–50"])
            let expected = Self.rows()
            for user in ["ana", "ben", "cy"] {
                let mine = expected.filter { $0.user == user }
                let first = mine.map(\.day).min()!
                for (k, key) in keys.enumerated() {
                    let days = { (cols: [String: [String]]) in zip(cols["user"]!, cols["day"]!).filter { $0.0 == user }.map { Int($0.1)! } }
                    let train = days(key.train), test = days(key.test)
                    // Exactly the user's rows of the span [first + 10k, first + 10k + 10) …
                    let inSpan = mine.filter { ($0.day - first) / 10 == k }.map(\.day)
                    #expect((train + test).sorted() == inSpan.sorted(), "\(user) experience \(k)")
                    // … the test rows those of its last 3 days, and none before a training row.
                    guard let last = inSpan.max() else { continue }
                    #expect(test.sorted() == inSpan.filter { $0 > last - 3 }.sorted(), "\(user) experience \(k)")
                    if let latestTrain = train.max(), let earliestTest = test.min() {
                        #expect(latestTrain < earliestTest, "\(user) experience \(k): train day \(latestTrain), test day \(earliestTest)")
                    }
                }
            }
            // ana has days 0–39 only: no rows in the fifth span, so running ana alone names it.
            var ana = s
            ana.user = "ana"
            #expect(throws: ScenarioError.self) { try ana.makeStream(seed: 0) }
            var ben = s
            ben.user = "ben"
            let own = try ben.makeStream(seed: 0)
            #expect(own.experiences.count == 5 && own.featureNames == ["f1", "f2"])
        }
    }

    @Test("every n-th day of each user's experience is test (interleaved), counted from the user's first day in it")
    func everyNth() throws {
        try withScenarioTempDir { dir in
            let s = try Self.dataset(Self.scenario(try Self.write(dir), #""experiences": {"every": 10, "unit": "days"}, "test": {"every": 4}"#))
            let (_, keys) = try s.readFile()
            let expected = Self.rows()
            for user in ["ana", "ben", "cy"] {
                let mine = expected.filter { $0.user == user }
                let first = mine.map(\.day).min()!
                for (k, key) in keys.enumerated() {
                    let days = { (cols: [String: [String]]) in zip(cols["user"]!, cols["day"]!).filter { $0.0 == user }.map { Int($0.1)! } }
                    let inSpan = mine.filter { ($0.day - first) / 10 == k }.map(\.day)
                    guard let start = inSpan.min() else { continue }
                    // Days start+3, start+7, … (the 4th, 8th, … day from the user's first day in the span).
                    #expect(days(key.test).sorted() == inSpan.filter { ($0 - start + 1) % 4 == 0 }.sorted(), "\(user) experience \(k)")
                    #expect(!days(key.train).isEmpty)
                }
            }
            let m = #expect(throws: (any Error).self) { _ = try Self.dataset(Self.scenario("x.csv", #""test": {"every": 1}"#)) }
            #expect("\(m!)".contains(".scenario.test.every"))
            let both = #expect(throws: (any Error).self) { _ = try Self.dataset(Self.scenario("x.csv", #""test": {"every": 3, "last": 2}"#)) }
            #expect("\(both!)".contains("exactly one"))
        }
    }

    @Test("count: each user's first-to-last time in K equal spans; it runs as a population and pooled")
    func countRunsPerUserAndPooled() throws {
        try withScenarioTempDir { dir in
            let json = Self.scenario(try Self.write(dir), #""experiences": {"count": 4}, "test": {"last": 2}"#)
            let population = try Self.experiment(json, extra: #", "population": {"users": 3}"#).runs[0]
            let result = RunExecutor.execute(population)
            #expect(result.status == .completed, "\(result.message)")
            let p = try #require(result.population)
            #expect(p.userNames == ["ana", "ben", "cy"] && p.matrices.allSatisfy { $0.count == 4 })
            let pooled = RunExecutor.execute(try Self.experiment(json).runs[0])
            #expect(pooled.status == .completed, "\(pooled.message)")
            // Every member's own stream: 4 experiences, each with train rows strictly before its test rows.
            let (stream, keys) = try Self.dataset(json).readFile()
            #expect(stream.experiences.count == 4)
            for user in ["ana", "ben", "cy"] {
                for key in keys {
                    let days = { (cols: [String: [String]]) in zip(cols["user"]!, cols["day"]!).filter { $0.0 == user }.map { Double($0.1)! } }
                    #expect(days(key.train).max()! < days(key.test).min()!, "\(user)")
                }
            }
        }
    }

    @Test("the keys are checked: time_column required, no experience or split column beside a cut, clear hints")
    func errors() throws {
        try withScenarioTempDir { dir in
            let path = try Self.write(dir)
            func message(_ body: () throws -> Void) -> String {
                do { try body(); return "" } catch { return "\(error)" }
            }
            let noTime = message { _ = try Self.experiment(#"{"type": "dataset", "path": "x.csv", "test": {"last": 2}}"#) }
            #expect(noTime.contains("test") && noTime.contains("needs \"time_column\""), "\(noTime)")
            let both = message {
                _ = try Self.experiment(#"{"type": "dataset", "path": "x.csv", "time_column": "t", "experiences": {"count": 2}, "experience_column": "e"}"#)
            }
            #expect(both.contains("experiences") && both.contains("experience_column"), "\(both)")
            let bad = message { _ = try Self.experiment(Self.scenario(path, #""experiences": {"every": 10, "count": 2}"#)) }
            #expect(bad.contains("exactly one of"), "\(bad)")
            // Without a cut, the missing columns say how to cut by time.
            var plain = DatasetScenario(path: path)
            plain.userColumn = "user"
            plain.timeColumn = "day"
            let missing = message { _ = try plain.makeStream(seed: 0) }
            #expect(missing.contains("missing column \"experience\"") && missing.contains("\"experiences\": {\"every\""), "\(missing)")
            plain.experiences = .count(2)
            let split = message { _ = try plain.makeStream(seed: 0) }
            #expect(split.contains("missing column \"split\"") && split.contains("\"test\": {\"last\": k}"), "\(split)")
            // A file with an experience column and a time cut: which one?
            let withColumn = dir + "/e.csv"
            try "user,day,experience,f1,label\nana,0,0,0.5,1\n".write(toFile: withColumn, atomically: true, encoding: .utf8)
            var clash = DatasetScenario(path: withColumn)
            clash.timeColumn = "day"
            clash.experiences = .count(2)
            clash.test = TimeCut.Test(last: 1)
            let m = message { _ = try clash.makeStream(seed: 0) }
            #expect(m.contains(".scenario.experiences: the file has a column \"experience\""), "\(m)")
            // A span far below the time column's unit.
            plain.experiences = .every(0.001, unit: nil)
            plain.test = TimeCut.Test(last: 1)
            #expect(message { _ = try plain.makeStream(seed: 0) }.contains("at most 10000"))
        }
    }

    @Test("validate prints the cut; the resolved JSON keeps it and omits it when absent")
    func validateAndJSON() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let path = try Self.write(work.url.path)
        let file = work.write("t.json", #"{"name": "t", "scenario": \#(Self.scenario(path)), "strategy": "naive"}"#)
        let v = try runCLI(["validate", file])
        #expect(v.status == 0, "\(v.stderr)")
        #expect(v.stdout.contains("users (3, column \"user\"): ana, ben, cy"), "\(v.stdout)")
        #expect(v.stdout.contains("    experiences (5): every 10 days of \"day\", per user\n"), "\(v.stdout)")
        #expect(v.stdout.contains("    test: the last 3 days of each user's experience (after all its train rows)\n"), "\(v.stdout)")
        let resolved = try Self.experiment(Self.scenario(path)).runs[0].canonicalJSON
        #expect(resolved.contains(#""experiences":{"every":10,"unit":"days"}"#) && resolved.contains(#""test":{"last":3}"#), "\(resolved)")
        #expect(try !Self.experiment(Self.scenario(path, #""head": "auto""#)).runs[0].canonicalJSON.contains("experiences"))
    }

    @Test("HDF5: the stored experiences and splits are pooled and cut the same way; each user's stream equals the CSV's")
    func hdf5() throws {
        try withScenarioTempDir { dir in
            let csv = try Self.dataset(Self.scenario(try Self.write(dir)))
            let (stream, keys) = try csv.readFile()
            let h5 = dir + "/days.h5"
            try DatasetUsersTests.writeWithKeys(stream, keys, to: h5, time: "day")
            var h = csv
            h.path = h5
            for user in ["ben", "cy"] {
                var a = csv, b = h
                a.user = user
                b.user = user
                let x = try a.makeStream(seed: 0), y = try b.makeStream(seed: 0)
                #expect(x.experiences.map(\.name) == y.experiences.map(\.name))
                #expect(x.experiences.map(\.train) == y.experiences.map(\.train) && x.experiences.map(\.test) == y.experiences.map(\.test), "\(user)")
            }
        }
    }
}
