import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 44 item 2, features are explicit: a data file's column that looks like a time or an id
/// and is not declared is refused with the keys to set; `feature_columns` lists the inputs (and
/// keeps such a column explicitly); `validate` and `run --verbose` print features and users.
@Suite("Features are explicit")
struct FeatureColumnsTests {
    /// `user,day,experience,split,f1,f2,label`: three users, 30 days each, interleaved by day.
    static func csv(header: String = "user,day,experience,split,f1,f2,label") -> String {
        var rng = RandomSource(seed: 7)
        var text = header + "\n"
        for day in 0..<30 {
            for user in ["ana", "ben", "cy"] {
                let x = [rng.normal(), rng.normal()]
                text += "\(user),\(day),\(day / 15),\(day % 3 == 2 ? "test" : "train"),\(x[0]),\(x[1]),\(x[0] > 0 ? 1 : 0)\n"
            }
        }
        return text
    }

    static func message(_ body: () throws -> Void) -> String {
        do { try body(); return "" } catch { return "\(error)" }
    }

    @Test("names: a time or an id is recognised through case and separators; time of day and measures are not")
    func names() {
        for name in ["day", "Date", "DAYS", "time", "timestamp", "ts", "week", "month", "year", "id", "user", "user_id",
                     "userId", "SessionID", "session", "index", "row", "row-index", "Row Number", "subject_id",
                     "event_date", "created_ts", "timestamp_ms", "unix.time", "participant", "date_time"] {
            #expect(FeatureColumnCheck.nameLooksLikeTimeOrId(name), "\(name)")
        }
        for name in ["hour", "hour_sin", "minute", "steps", "screen_time", "time_of_day", "day_of_week", "weekend",
                     "heart_rate", "age", "f1", "x", "idle", "identity_score", "session_length", "indexed_load",
                     "log_count_h-1", "next_hour_weekend", "acc_x_mean", "today_steps"] {
            #expect(!FeatureColumnCheck.nameLooksLikeTimeOrId(name), "\(name)")
        }
    }

    /// Values per block, with a user per row.
    static func blocks(_ rows: [(user: String, value: Float)], size: Int) -> [(values: [Float], users: [String]?)] {
        stride(from: 0, to: rows.count, by: size).map { start in
            let part = rows[start..<min(start + size, rows.count)]
            return (part.map(\.value), part.map(\.user))
        }
    }

    @Test("values: day counters and row numbers fire, even shuffled or with several rows per day")
    func countersFire() {
        var rng = RandomSource(seed: 3)
        // Several rows per day, users interleaved, blocks of 40 rows (experiences and splits).
        let counter = (0..<120).flatMap { day in ["a", "b"].flatMap { u in [(u, Float(day)), (u, Float(day))] } }
        #expect(FeatureColumnCheck.valuesReason(Self.blocks(counter, size: 40)) != nil)
        // One row per day and user, shuffled: no order left, but each user's days are an unbroken run.
        var shuffled = (0..<60).flatMap { day in ["a", "b", "c"].map { ($0, Float(day)) } }
        rng.shuffle(&shuffled)
        #expect(FeatureColumnCheck.valuesReason(Self.blocks(shuffled, size: 30))?.contains("each user") == true)
        // A row number without users.
        var rows = (0..<50).map { ("", Float($0 + 1000)) }
        rng.shuffle(&rows)
        #expect(FeatureColumnCheck.valuesReason([(rows.map(\.1), nil)])?.contains("row number") == true)
    }

    @Test("values: ordinary numeric features never fire (counts, rates, ages, flags, measures, sorted short blocks)")
    func ordinaryFeaturesDoNot() {
        var rng = RandomSource(seed: 11)
        func fires(_ make: (inout RandomSource, Int) -> Float, users: Int = 5, rows: Int = 400, block: Int = 50) -> Bool {
            let data = (0..<rows).map { r in ("u\(r % users)", make(&rng, r)) }
            return FeatureColumnCheck.valuesReason(Self.blocks(data, size: block)) != nil
        }
        for trial in 0..<50 {
            #expect(!fires { g, _ in Float(Int(g.next() % 12_000)) }, "steps, trial \(trial)")
            #expect(!fires { g, _ in Float(55 + Int(g.next() % 66)) }, "heart rate 55–120, trial \(trial)")
            #expect(!fires({ g, _ in Float(55 + Int(g.next() % 30)) }, users: 1, rows: 30, block: 30), "few rates, trial \(trial)")
            #expect(!fires { _, r in Float(20 + (r % 5) * 7) }, "age per user, trial \(trial)")
            #expect(!fires { g, _ in Float(g.next() % 2) }, "0/1 flag, trial \(trial)")
            #expect(!fires { g, r in Float(r % 10) / 10 + Float(g.normal()) }, "a measured value, trial \(trial)")
            #expect(!fires { g, _ in Float(Int(g.normal() * 3)) }, "a small signed count, trial \(trial)")
        }
        // Not integers: an increasing measure (FullDiskTests' x = i / 10) is not a clock.
        #expect(FeatureColumnCheck.valuesReason([((0..<30).map { Float($0) / 10 + 0.05 }, nil)]) == nil)
        // A 0/1 flag sorted within each of many short blocks rises often, through two values only.
        let flags: [(user: String, value: Float)] = (0..<60).flatMap { _ in [(user: "a", value: 0), (user: "a", value: 1)] }
        #expect(FeatureColumnCheck.valuesReason(Self.blocks(flags, size: 2)) == nil)
    }

    @Test("an undeclared day column is refused naming .scenario.feature_columns and the keys to set")
    func refusedWithKeys() throws {
        try withScenarioTempDir { dir in
            let path = dir + "/people.csv"
            try Self.csv().write(toFile: path, atomically: true, encoding: .utf8)
            var s = DatasetScenario(path: path)
            s.userColumn = "user"
            let m = Self.message { _ = try s.makeStream(seed: 0) }
            #expect(m.contains(".scenario.feature_columns") && m.contains("\"day\" (its name)"), "\(m)")
            #expect(m.contains("\"time_column\": \"day\"") && m.contains("\"session_column\"") && !m.contains("\"user_column\""), "\(m)")
            #expect(m.contains("listing \"day\" there keeps it"))
            #expect(DatasetScenario.keyPath(in: m) == ".scenario.feature_columns")
            // Declared: not a feature.
            s.timeColumn = "day"
            #expect(try s.makeStream(seed: 0).featureNames == ["f1", "f2"])
            // Kept explicitly: a feature, in the listed order; unlisted columns are not read.
            var kept = DatasetScenario(path: path)
            kept.userColumn = "user"
            kept.featureColumns = ["f2", "day"]
            let stream = try kept.makeStream(seed: 0)
            #expect(stream.featureNames == ["f2", "day"] && stream.dimension == 2)
            #expect(stream.experiences[0].train.row(0).last == 0)  // day 0, first train row
        }
    }

    @Test("a counter whose name passes (study_day) is refused by its values; a non-numeric unlisted column is not read")
    func byValues() throws {
        try withScenarioTempDir { dir in
            let path = dir + "/people.csv"
            try Self.csv(header: "user,study_day,experience,split,f1,f2,label").write(toFile: path, atomically: true, encoding: .utf8)
            var s = DatasetScenario(path: path)
            s.userColumn = "user"
            let m = Self.message { _ = try s.makeStream(seed: 0) }
            #expect(m.contains("\"study_day\" (its values never fall and rise 26 times along user \"ana\"'s rows"), "\(m)")
            // A notes column of text: listed features leave it unread.
            let notes = Self.csv().replacingOccurrences(of: "user,day,", with: "user,note,")
                .split(separator: "\n").enumerated().map { i, l in i == 0 ? String(l) : l.replacingOccurrences(of: #"^(\w+),\d+,"#, with: "$1,text,", options: .regularExpression) }
                .joined(separator: "\n")
            let p2 = dir + "/notes.csv"
            try notes.write(toFile: p2, atomically: true, encoding: .utf8)
            var n = DatasetScenario(path: p2)
            n.userColumn = "user"
            #expect(Self.message { _ = try n.makeStream(seed: 0) }.contains("expected a finite number"))
            n.featureColumns = ["f1", "f2"]
            #expect(try n.makeStream(seed: 0).featureNames == ["f1", "f2"])
        }
    }

    @Test("feature_columns in JSON: strict, never a declared column, absent from the resolved JSON unless set")
    func json() throws {
        func scenario(_ extra: String) throws -> ExperimentFile {
            try ExperimentFile.parse(data: Data(#"{"name": "f", "scenario": {"type": "dataset", "path": "x.csv", "user_column": "user"\#(extra)}}"#.utf8))
        }
        #expect(try !scenario("").runs[0].canonicalJSON.contains("feature_columns"))
        #expect(try scenario(#", "feature_columns": ["a", "b"]"#).runs[0].canonicalJSON.contains(#""feature_columns":["a","b"]"#))
        for (bad, says) in [(#"[]"#, "at least one"), (#"["a", "a"]"#, "twice"), (#"["user"]"#, "user_column"), (#"["label"]"#, "label_column")] {
            let m = Self.message { _ = try scenario(#", "feature_columns": "# + bad) }
            #expect(m.contains("feature_columns") && m.contains(says), "\(bad): \(m)")
        }
    }

    @Test("HDF5: feature_columns picks and orders /feature_names; an undeclared feature named row is refused")
    func hdf5() throws {
        try withScenarioTempDir { dir in
            let path = dir + "/people.csv"
            try Self.csv().write(toFile: path, atomically: true, encoding: .utf8)
            var c = DatasetScenario(path: path)
            c.featureColumns = ["f1", "day", "f2"]
            let stream = try c.makeStream(seed: 0)
            let h5 = dir + "/people.h5"
            var renamed = stream
            renamed.featureNames = ["f1", "row", "f2"]
            try ScenarioArchive.write(renamed, to: h5)
            let m = Self.message { _ = try DatasetScenario(path: h5).makeStream(seed: 0) }
            #expect(m.contains(".scenario.feature_columns") && m.contains("\"row\" (its name)"), "\(m)")
            var picked = DatasetScenario(path: h5)
            picked.featureColumns = ["f2", "f1"]
            let s = try picked.makeStream(seed: 0)
            #expect(s.featureNames == ["f2", "f1"])
            #expect(Array(s.experiences[1].test.row(2)) == [stream.experiences[1].test.row(2).last!, stream.experiences[1].test.row(2).first!])
            picked.featureColumns = ["f3"]
            let missing = Self.message { _ = try picked.makeStream(seed: 0) }
            #expect(missing.contains(".scenario.feature_columns: no feature \"f3\""), "\(missing)")
        }
    }

    @Test("validate and run --verbose print every feature (wrapped at 80 columns) and the users; a refusal exits 2")
    func cli() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let wide = (0..<30).map { "feature_number_\($0)" }
        var csv = "user,day,experience,split," + wide.joined(separator: ",") + ",label\n"
        for user in ["ana", "ben"] {
            for day in 0..<8 {
                csv += "\(user),\(day),\(day / 4),\(day % 2 == 1 ? "test" : "train"),"
                    + wide.indices.map { "\(Double(($0 * 7 + day * 3) % 11) / 10)" }.joined(separator: ",") + ",\(day % 2)\n"
            }
        }
        _ = work.write("people.csv", csv)
        func experiment(_ keys: String) -> String {
            work.write("e.json", #"{"name": "p", "scenario": {"type": "dataset", "path": "people.csv", "user_column": "user"\#(keys)}, "#
                + #""population": {"users": 2}, "model": {"hidden": [4]}, "training": {"epochs": 1}, "strategy": "naive"}"#)
        }
        let refused = try runCLI(["validate", experiment("")])
        #expect(refused.status == 2 && refused.stderr.contains(".scenario.feature_columns") && refused.stderr.contains("\"time_column\": \"day\""),
                "\(refused.stderr)")
        let v = try runCLI(["validate", experiment(#", "time_column": "day""#)])
        #expect(v.status == 0, "\(v.stderr)")
        let lines = v.stdout.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix("    features (30): ") })
        let listed = lines[start...].prefix { !$0.hasPrefix("    users") }
        #expect(listed.count > 1 && listed.allSatisfy { $0.count <= 80 }, "\(listed)")
        let names = listed.joined(separator: " ").dropFirst("    features (30): ".count)
            .split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        #expect(names == wide)
        #expect(lines.contains("    users (2, column \"user\"): ana, ben"), "\(v.stdout)")
        let r = try runCLI(["run", work.path("e.json"), "--verbose", "-o", work.path("r.h5")])
        #expect(r.status == 0 && r.stdout.contains("    features (30): feature_number_0,") && r.stdout.contains("users (2, column"),
                "\(r.stdout)\(r.stderr)")
    }
}
