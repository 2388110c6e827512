import Foundation
import Testing
@testable import ContinualExperiments

/// Runs the built `continual` binary: SIGINT midway, then `--resume`, exit codes, merge refusal.
@Suite("Sweep CLI", .serialized)
struct SweepCLITests {
    /// The `continual` executable next to the test bundle (`swift build --build-tests` builds both).
    static func binary() -> String? {
        var candidates: [URL] = []
        let argv0 = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for base in [argv0.deletingLastPathComponent(), Bundle.main.bundleURL.deletingLastPathComponent()] {
            var u = base
            for _ in 0..<5 { candidates.append(u.appendingPathComponent("continual")); u.deleteLastPathComponent() }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/continual"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) && !$0.hasDirectoryPath }?.path
    }

    /// Launches the binary, its standard output a pipe (`stdout`, read line by line) and its
    /// standard error discarded.
    static func launch(_ arguments: [String], in directory: URL) throws -> SpawnedChild {
        try SpawnedChild(try #require(binary(), "build the continual product first"), arguments, in: directory, stderr: .discard)
    }

    static func run(_ arguments: [String], in directory: URL) throws -> (status: Int32, output: String) {
        let ended = try launch(arguments, in: directory).finish()
        return (ended.status, ended.stdout)
    }

    @Test func sigintMidwayThenResumeEqualsAnUninterruptedSweep() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        // Bigger runs than elsewhere, so the interrupt lands while runs remain.
        let text = SweepFixtures.twentyFour(trainPerExperience: 400, epochs: 3)
        try text.write(toFile: scratch.path("s.json"), atomically: true, encoding: .utf8)
        let child = try Self.launch(["sweep", "s.json", "-o", "cut.h5", "--jobs", "1", "--plain"], in: scratch.url)
        // Wait for the third finished run's log line, then interrupt.
        child.readOutput(until: "[3/24]")
        kill(child.pid, SIGINT)
        let ended = child.finish()
        #expect(ended.signal == nil && ended.status == 130)
        // Readable, with the finished runs only, in sweep order.
        let mid = try SweepFixtures.comparableSummary(scratch.path("cut.h5"))
        #expect(mid.rows.count >= 3 && mid.rows.count < 24)
        #expect(try ResultsReader.read(path: scratch.path("cut.h5")).runs.count == mid.rows.count)
        // Without --resume an existing file is refused (exit 2); with it the sweep completes.
        #expect(try Self.run(["sweep", "s.json", "-o", "cut.h5"], in: scratch.url).status == 2)
        let resumed = try Self.run(["sweep", "s.json", "-o", "cut.h5", "--resume", "--jobs", "2", "--plain"], in: scratch.url)
        #expect(resumed.status == 0)
        #expect(resumed.output.contains("\(mid.rows.count) already there"))
        let e = try SweepFixtures.experiment(text)
        try await SweepFixtures.sweep(e, to: scratch.path("full.h5"), jobs: 2)
        #expect(try SweepFixtures.comparableSummary(scratch.path("cut.h5")).rows == SweepFixtures.comparableSummary(scratch.path("full.h5")).rows)
    }

    @Test func exitCodesShardsMergeAndCSV() throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        try """
        {"name": "div", "scenario": {"type": "habit_drift", "train_per_experience": 100, "test_per_experience": 40, "phases": ["morning", "night"]},
         "model": {"hidden": [8]}, "training": {"epochs": 1, "batch_size": 16}, "strategy": ["naive"],
         "sweep": {"parameters": {"optimizer.lr": [0.05, 1e6], "seed": [0, 1]}}}
        """.write(toFile: scratch.path("d.json"), atomically: true, encoding: .utf8)
        try #"{"name": "bad", "sweep": {"parameters": {"optimizer.lr": 5}}}"#.write(toFile: scratch.path("bad.json"), atomically: true, encoding: .utf8)
        #expect(try Self.run(["sweep", "bad.json"], in: scratch.url).status == 2)
        #expect(try Self.run(["sweep", "d.json", "--shard", "2/2"], in: scratch.url).status == 2)
        // A diverged run makes the exit code 1; the others are written.
        #expect(try Self.run(["sweep", "d.json", "-o", "all.h5"], in: scratch.url).status == 1)
        for k in 0..<2 { _ = try Self.run(["sweep", "d.json", "--shard", "\(k)/2"], in: scratch.url) }
        #expect(FileManager.default.fileExists(atPath: scratch.path("results/div.shard-1-of-2.h5")))
        let merged = try Self.run(["merge", "m.h5", "results/div.shard-0-of-2.h5", "results/div.shard-1-of-2.h5"], in: scratch.url)
        #expect(merged.status == 0 && merged.output.contains("4 runs"))
        #expect(try SweepFixtures.comparableSummary(scratch.path("m.h5")).rows == SweepFixtures.comparableSummary(scratch.path("all.h5")).rows)
        let csv = try Self.run(["inspect", "m.h5", "--csv"], in: scratch.url)
        let lines = csv.output.split(separator: "\n")
        #expect(csv.status == 0 && lines.count == 5 && lines[0].hasPrefix("run_id,sweep_index,name,variant"))
        #expect(lines[0].hasSuffix(",optimizer.lr"))
        let inspect = try Self.run(["inspect", "m.h5"], in: scratch.url)
        #expect(inspect.status == 0 && inspect.output.contains("optimizer.lr") && inspect.output.contains("diverged") == false && inspect.output.contains("sweep of 4 runs"))
    }

    @Test func resumeOfAChangedConfigAndMixedMergesExitWith2() throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        func experiment(_ epochs: Int) -> String {
            """
            {"name": "ch", "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 30, "phases": ["morning", "night"]},
             "model": {"hidden": [8]}, "training": {"epochs": \(epochs), "batch_size": 16}, "strategy": ["naive"],
             "sweep": {"parameters": {"seed": [0, 1]}}}
            """
        }
        try experiment(1).write(toFile: scratch.path("e1.json"), atomically: true, encoding: .utf8)
        try experiment(2).write(toFile: scratch.path("e2.json"), atomically: true, encoding: .utf8)
        #expect(try Self.run(["sweep", "e1.json", "-o", "a.h5", "--plain"], in: scratch.url).status == 0)
        #expect(try Self.run(["sweep", "e2.json", "-o", "a.h5", "--resume", "--plain"], in: scratch.url).status == 2)
        #expect(try SweepFixtures.comparableSummary(scratch.path("a.h5")).rows.count == 2)
        #expect(try Self.run(["sweep", "e2.json", "-o", "b.h5", "--plain"], in: scratch.url).status == 0)
        #expect(try Self.run(["merge", "m.h5", "a.h5", "b.h5"], in: scratch.url).status == 2)
        let mixed = try Self.run(["merge", "m.h5", "a.h5", "b.h5", "--allow-mixed"], in: scratch.url)
        #expect(mixed.status == 0 && mixed.output.contains("4 runs"))
    }
}
