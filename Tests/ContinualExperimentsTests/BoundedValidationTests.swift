import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 41.3, bounded validation: a config over the JSON budget (keys per object, values,
/// nesting, string length) is refused in the one syntax pass with its key path and the limit; a
/// huge model is checked without initialising its weights; a sweep's results file is estimated on
/// disk and refused over `--max-disk` before a million runs are expanded. Speed is measured in
/// the issue's notes, not asserted here: these tests check what is refused and what is said.
@Suite struct BoundedValidationTests {
    /// An experiment whose `object` (top level or a run key) gets `keys` extra keys `k0`, `k1`, ….
    static func manyKeys(_ keys: Int, in object: String?) -> Data {
        let extra = (0..<keys).map { "\"k\($0)\": \($0)" }.joined(separator: ", ")
        let training = object == "training" ? #"{"epochs": 1, "# + extra + "}" : #"{"epochs": 1}"#
        let top = object == nil ? ", " + extra : ""
        return Data(#"{"name": "many", "scenario": "habit_drift", "training": \#(training)\#(top)}"#.utf8)
    }

    static func refusal(_ data: Data) -> ConfigError? {
        do { _ = try ExperimentFile.parse(data: data, path: "many.json"); return nil } catch let e as ConfigError { return e } catch {
            return ConfigError(location: "?", message: "\(error)")
        }
    }

    @Test("200,000 keys in one object are refused with the object's key path and the limit by name")
    func hugeObjectIsRefused() throws {
        for (object, path) in [("training", ".training"), (nil, "(top level)")] as [(String?, String)] {
            let e = try #require(Self.refusal(Self.manyKeys(200_000, in: object)))
            #expect(e.location.hasPrefix(path + " (line 1, column "), "\(e)")
            #expect(e.message.contains("too many keys in this object"), "\(e)")
            #expect(e.message.contains("\(JSONBudget.maxKeysPerObject) keys per object, JSONBudget.maxKeysPerObject"), "\(e)")
        }
    }

    @Test("an object of exactly the allowed keys passes the budget and its unknown keys are named")
    func objectAtTheLimitReachesTheKeyCheck() throws {
        let e = try #require(Self.refusal(Self.manyKeys(JSONBudget.maxKeysPerObject - 1, in: "training")))
        #expect(e.location == ".training.k0", "\(e)")
        #expect(e.message.hasPrefix("unknown key \"k0\""), "\(e)")
    }

    @Test("a duplicate key at the end of a 10,000-key object is found with its key path")
    func duplicateInALargeObject() {
        let keys = (0..<JSONBudget.maxKeysPerObject - 1).map { "\"k\($0)\": 1" }.joined(separator: ", ")
        let data = Data(#"{"training": {"#.utf8 + Data(keys.utf8) + Data(#", "k0": 2}, "name": "x\u0041"}"#.utf8))
        #expect(JSONDuplicateKeys.firstDuplicate(in: data) == ".training.k0")
        #expect(JSONDuplicateKeys.firstDuplicate(in: Data(#"{"a\u0041": 1, "aA": 2}"#.utf8)) == ".aA")
        #expect(JSONDuplicateKeys.firstDuplicate(in: Data(#"{"s": [{"a": 1}, {"a": 2}]}"#.utf8)) == nil)
    }

    @Test("nesting deeper than the limit is refused at the key path where it starts")
    func deepNestingIsRefused() throws {
        let depth = JSONBudget.maxDepth + 10
        let data = Data((#"{"name": "deep", "description": "# + String(repeating: "[", count: depth)
            + String(repeating: "]", count: depth) + "}").utf8)
        let e = try #require(Self.refusal(data))
        #expect(e.location.hasPrefix(".description[0][0]"), "\(e)")
        #expect(e.message.contains("nested too deeply (limit: \(JSONBudget.maxDepth) levels, JSONBudget.maxDepth"), "\(e)")
    }

    @Test("a string longer than the limit, key or value, is refused with its key path")
    func longStringIsRefused() throws {
        let long = String(repeating: "x", count: JSONBudget.maxStringBytes + 1)
        let value = try #require(Self.refusal(Data(#"{"name": "s", "description": "\#(long)"}"#.utf8)))
        #expect(value.location.hasPrefix(".description (line 1, column "), "\(value)")
        #expect(value.message.contains("JSONBudget.maxStringBytes"), "\(value)")
        let key = try #require(Self.refusal(Data(#"{"name": "s", "model": {"\#(long)": 1}}"#.utf8)))
        #expect(key.location.hasPrefix(".model (line 1, column "), "\(key)")
        let fits = String(repeating: "x", count: JSONBudget.maxStringBytes)
        #expect(Self.refusal(Data(#"{"name": "s", "scenario": "habit_drift", "description": "\#(fits)"}"#.utf8)) == nil)
    }

    @Test("a file of more values than the limit is refused at the value that crosses it")
    func tooManyValuesAreRefused() throws {
        let list = [String](repeating: "0", count: JSONBudget.maxValues).joined(separator: ",")
        let e = try #require(Self.refusal(Data(#"{"name": "v", "description": [\#(list)]}"#.utf8)))
        #expect(e.location.hasPrefix(".description[\(JSONBudget.maxValues - 3)]"), "\(e)")
        #expect(e.message.contains("JSONBudget.maxValues"), "\(e)")
    }

    @Test("a model of many wide layers is checked as a narrower one of the same shape")
    func wideDeepModelIsCheckedNarrow() throws {
        #expect(Preflight.checkedWidth(layers: 1) == 1024)
        #expect(Preflight.checkedWidth(layers: 256) == 128)
        #expect(Preflight.checkedWidth(layers: 100_000) == 64)
        // 256 layers of 1000 units (2.6 × 10^8 weights) still validate, with their real estimate.
        let hidden = [String](repeating: "1000", count: 256).joined(separator: ", ")
        let data = Data(#"{"name": "wide", "scenario": "habit_drift", "model": {"hidden": [\#(hidden)]}}"#.utf8)
        let (file, report) = try ExperimentValidation.validate(data: data, path: "wide.json")
        #expect(file.runs.count == 1)
        #expect(report.peakMemory > 255 * 1000 * 1000 * 4 * 4, "weights, gradients and moments of 2.6 × 10^8 parameters")
    }
}

/// The disk estimate of a results file and `--max-disk`.
@Suite struct DiskEstimateTests {
    /// A sweep over `runs` seeds of a small habit-drift run.
    static func sweep(_ runs: Int) -> String {
        tinyExperiment(name: "million", extra: #""sweep": {"parameters": {"seed": {"range": [1, \#(runs + 1)]}}},"#)
            .replacingOccurrences(of: #""variants": [{"name": "naive", "strategy": "naive"}, {"name": "joint", "strategy": ["joint"]}]"#,
                                  with: #""strategy": "naive""#)
    }

    @Test("a 1,000,000-run sweep is estimated on disk and refused over --max-disk at .sweep")
    func millionRunSweepIsRefused() throws {
        let data = Data(Self.sweep(1_000_000).utf8)
        let (file, report) = try ExperimentValidation.validate(data: data, path: "m.json", limits: ResourceLimits(diskBytes: .infinity))
        #expect(file.totalRuns == 1_000_000 && file.isSampled)
        let disk = ExperimentValidation.disk(file, report)
        #expect(disk.runs == 1_000_000)
        #expect(disk.bytesPerRun >= DiskEstimate.bytesPerRunOverhead)
        #expect(disk.peakBytes > 2 * disk.fileBytes && disk.fileBytes > 1e6 * DiskEstimate.bytesPerRunOverhead)
        do {
            _ = try ExperimentValidation.validate(data: data, path: "m.json", limits: ResourceLimits(diskBytes: 10 * 1_073_741_824))
            Issue.record("a million runs fit in 10 GB")
        } catch let e as ConfigError {
            #expect(e.location == ".sweep", "\(e)")
            #expect(e.message.contains("the results of 1000000 run(s) need an estimated"), "\(e)")
            #expect(e.message.contains("more than --max-disk (10.0 GB)"), "\(e)")
        }
    }

    @Test("validate prints the disk estimate; validate and sweep refuse over --max-disk and write nothing")
    func cliShowsAndRefuses() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let small = work.write("small.json", Self.sweep(3))
        let ok = try runCLI(["validate", small])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("  disk ≈ ") && ok.stdout.contains("for the results of 3 run(s) (≈ "), "\(ok.stdout)")
        #expect(ok.stdout.contains("while written; limit "), "\(ok.stdout)")
        let million = work.write("million.json", Self.sweep(1_000_000))
        for args in [["validate", million, "--max-disk", "10G"], ["sweep", million, "-o", work.path("m.h5"), "--max-disk", "10G"]] {
            let r = try runCLI(args)
            #expect(r.status == 2, "\(args[0]): \(r.status) \(r.stderr)")
            #expect(r.stderr.contains(".sweep: the results of 1000000 run(s) need an estimated"), "\(r.stderr)")
            #expect(r.stderr.contains("--max-disk (10.0 GB)"), "\(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: work.path("m.h5")))
        let bad = try runCLI(["validate", small, "--max-disk", "lots"])
        #expect(bad.status == 2 && bad.stderr.contains("--max-disk: expected a size"), "\(bad.stderr)")
    }

    @Test("a normal config validates as before: same runs, same ids, a small disk estimate")
    func normalConfigUnchanged() throws {
        let (file, report) = try ExperimentValidation.validate(path: packageRoot.appendingPathComponent("Experiments/quickstart.json").path)
        #expect(file.runs.map(\.runId) == ["641241f551851fbd", "32af228e38dfa1af"])
        let disk = ExperimentValidation.disk(file, report)
        #expect(disk.runs == 2 && disk.fileBytes < 1_048_576, "\(disk)")
    }
}
