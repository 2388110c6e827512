import Foundation
import Testing
import ContinualHDF5
@testable import ContinualExperiments

@Suite("Sweep runs", .serialized)
struct SweepRunTests {
    @Test func summaryIsIdenticalForOneAndTwoJobs() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let e = try SweepFixtures.experiment(SweepFixtures.twentyFour())
        #expect(e.runs.count == 24)
        let one = try await SweepFixtures.sweep(e, to: scratch.path("one.h5"), jobs: 1)
        let two = try await SweepFixtures.sweep(e, to: scratch.path("two.h5"), jobs: 2)
        #expect(one.written == 24 && two.written == 24 && one.failed.isEmpty && !one.interrupted)
        let a = try SweepFixtures.comparableSummary(scratch.path("one.h5"))
        let b = try SweepFixtures.comparableSummary(scratch.path("two.h5"))
        #expect(a.rows.count == 24)
        #expect(a.columns == b.columns)
        #expect(a.rows == b.rows)
        #expect(a.columns.contains("optimizer.lr") && a.columns.contains("buffer_bytes") && !a.columns.contains("train_seconds"))
        // Rows are in sweep order with the swept values in their own columns.
        let (table, groupBy) = try SweepReport.read(path: scratch.path("one.h5"))
        #expect(table.column("sweep_index") == (0..<24).map { HDF5Value.int(Int64($0)) })
        #expect(table.column("optimizer.lr")?.prefix(5).map(\.doubleValue) == [0.02, 0.02, 0.02, 0.02, 0.1])
        #expect(groupBy == ["variant", "optimizer.lr"])
        let groups = SweepReport.groups(table, by: groupBy)
        #expect(groups.count == 6 && groups.allSatisfy { $0.runs == 4 && $0.completed == 4 })
        // Each summary ACC equals the mean of the last row of the stored accuracy matrix.
        let stored = try ResultsReader.read(path: scratch.path("one.h5"))
        #expect(stored.runs.count == 24)
        let accById = Dictionary(uniqueKeysWithValues: zip(table.column("run_id")!.map { $0.stringValue! }, table.column("acc")!.map { $0.doubleValue! }))
        for r in stored.runs {
            let last = r.accuracy.last!
            #expect(abs(last.reduce(0, +) / Double(last.count) - accById[r.runId]!) < 1e-12)
        }
    }

    @Test func stoppingMidwayLeavesAReadableFileThatResumeCompletes() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let e = try SweepFixtures.experiment(SweepFixtures.twentyFour())
        let finished = Counter()
        let partial = try await SweepFixtures.sweep(e, to: scratch.path("p.h5"), jobs: 2, shouldStop: { finished.value >= 5 },
                                                    execute: { run in defer { finished.increment() }; return RunExecutor.execute(run) })
        #expect(partial.interrupted)
        #expect(partial.written >= 5 && partial.written < 24)
        let mid = try SweepFixtures.comparableSummary(scratch.path("p.h5"))
        #expect(mid.rows.count == partial.written)
        let resumed = try await SweepFixtures.sweep(e, to: scratch.path("p.h5"), jobs: 2, resume: true)
        #expect(resumed.skipped == partial.written && resumed.written == 24 - partial.written && !resumed.interrupted)
        try await SweepFixtures.sweep(e, to: scratch.path("full.h5"), jobs: 1)
        #expect(try SweepFixtures.comparableSummary(scratch.path("p.h5")).rows == SweepFixtures.comparableSummary(scratch.path("full.h5")).rows)
        // A second resume has nothing to do.
        let again = try await SweepFixtures.sweep(e, to: scratch.path("p.h5"), jobs: 2, resume: true)
        #expect(again.written == 0 && again.skipped == 24)
    }

    @Test func resumeDeletesAndRerunsAnIncompleteGroup() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let e = try SweepFixtures.experiment(SweepFixtures.twentyFour())
        let path = scratch.path("r.h5")
        try await SweepFixtures.sweep(e, to: path, jobs: 2)
        // Simulate a write cut short: drop one run's `complete` mark.
        let victim = e.runs[7].runId
        do {
            let f = try HDF5File.open(path: path, mode: .readWrite)
            try f.root.openGroup("runs/\(victim)").attributes.delete("complete")
            try f.close()
        }
        let resumed = try await SweepFixtures.sweep(e, to: path, jobs: 1, resume: true)
        #expect(resumed.written == 1 && resumed.skipped == 23)
        try await SweepFixtures.sweep(e, to: scratch.path("full.h5"), jobs: 2)
        #expect(try SweepFixtures.comparableSummary(path).rows == SweepFixtures.comparableSummary(scratch.path("full.h5")).rows)
    }

    @Test func threeShardsMergedEqualTheUnshardedSweep() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let e = try SweepFixtures.experiment(SweepFixtures.twentyFour())
        try await SweepFixtures.sweep(e, to: scratch.path("all.h5"), jobs: 2)
        var shards: [String] = []
        for k in 0..<3 {
            let p = scratch.path("s\(k).h5")
            let o = try await SweepFixtures.sweep(e, to: p, jobs: 2, shard: try SweepShard(index: k, count: 3))
            #expect(o.written == 8)
            shards.append(p)
        }
        // Listing a shard twice is fine: identical duplicates are kept once.
        let report = try ResultsMerger.merge(inputs: shards.reversed() + [shards[0]], output: scratch.path("merged.h5"))
        #expect(report.runs == 24 && report.duplicates == 8)
        let merged = try SweepFixtures.comparableSummary(scratch.path("merged.h5"))
        #expect(merged.rows == (try SweepFixtures.comparableSummary(scratch.path("all.h5")).rows))
        // The copied run groups are whole, including their dimension scales.
        let contents = try ResultsReader.read(path: scratch.path("merged.h5"))
        #expect(contents.runs.count == 24 && contents.runs.allSatisfy { $0.accuracy.count == 3 })
        let f = try HDF5File.open(path: scratch.path("merged.h5"))
        let R = try f.root.openDataset("runs/\(e.runs[3].runId)/accuracy_matrix")
        #expect(try R.attachedScalePaths(dimension: 1) == ["/runs/\(e.runs[3].runId)/experience"])
        try f.close()
    }

    @Test func mergingAConflictingDuplicateIsRefused() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let e = try SweepFixtures.experiment(SweepFixtures.twentyFour())
        let shard = try SweepShard(index: 0, count: 6)
        try await SweepFixtures.sweep(e, to: scratch.path("a.h5"), jobs: 2, shard: shard)
        try await SweepFixtures.sweep(e, to: scratch.path("b.h5"), jobs: 2, shard: shard, execute: { run in
            var r = RunExecutor.execute(run)
            if run.sweepIndex == 6 { r.metrics?.acc += 0.125 }  // a different result under the same id
            return r
        })
        do {
            _ = try ResultsMerger.merge(inputs: [scratch.path("a.h5"), scratch.path("b.h5")], output: scratch.path("m.h5"))
            Issue.record("a conflicting merge succeeded")
        } catch let error as ResultsMerger.Conflict {
            #expect(error.description.contains(e.runs[6].runId))
            #expect(error.description.contains("acc"))
            #expect(error.description.contains("refusing"))
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.path("m.h5")))
    }

    @Test func aDivergingRunIsRecordedAndTheOthersComplete() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let e = try SweepFixtures.experiment("""
        {"name": "div", "scenario": {"type": "habit_drift", "train_per_experience": 120, "test_per_experience": 60, "phases": ["morning", "night"]},
         "model": {"hidden": [8]}, "training": {"epochs": 2, "batch_size": 16}, "strategy": ["naive"],
         "sweep": {"parameters": {"optimizer.lr": [0.05, 1e6], "seed": [0, 1, 2]}}}
        """)
        let outcome = try await SweepFixtures.sweep(e, to: scratch.path("d.h5"), jobs: 2)
        #expect(outcome.written == 6 && outcome.failed.count == 3)
        let (table, _) = try SweepReport.read(path: scratch.path("d.h5"))
        let status = table.column("status")!.map { $0.stringValue! }
        let message = table.column("message")!.map { $0.stringValue! }
        let acc = table.column("acc")!.map { $0.doubleValue! }
        #expect(status == ["completed", "completed", "completed", "diverged", "diverged", "diverged"])
        #expect(message[3].contains("diverged") && message[0].isEmpty)
        #expect(acc[0...2].allSatisfy { $0 > 0.3 } && acc[3...].allSatisfy(\.isNaN))
    }

    @Test func resumeRefusesAFileOfAnotherSweep() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let e = try SweepFixtures.experiment(SweepFixtures.twentyFour())
        try await SweepFixtures.sweep(e, to: scratch.path("a.h5"), jobs: 2, shard: try SweepShard(index: 0, count: 12))
        let other = try SweepFixtures.experiment(SweepFixtures.twentyFour().replacingOccurrences(of: "\"optimizer.lr\"", with: "\"training.epochs\"")
            .replacingOccurrences(of: "[0.02, 0.1]", with: "[1, 2]"))
        #expect(throws: HDF5Error.self) { try SweepSession(experiment: other).makeWriter(path: scratch.path("a.h5"), resume: true) }
    }

    static func seeds(_ seeds: String, epochs: Int) -> String {
        """
        {"name": "s3", "scenario": {"type": "habit_drift", "train_per_experience": 80, "test_per_experience": 40, "phases": ["morning", "night"]},
         "model": {"hidden": [8]}, "training": {"epochs": \(epochs), "batch_size": 16}, "strategy": ["naive"],
         "sweep": {"parameters": {"seed": \(seeds)}}}
        """
    }

    @Test func resumeRefusesCompleteRunsOfAChangedConfig() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let path = scratch.path("s.h5")
        let e1 = try SweepFixtures.experiment(Self.seeds("[0, 1, 2]", epochs: 1))
        try await SweepFixtures.sweep(e1, to: path, jobs: 2)
        let e2 = try SweepFixtures.experiment(Self.seeds("[0, 1, 2]", epochs: 2))
        do {
            _ = try SweepSession(experiment: e2).makeWriter(path: path, resume: true)
            Issue.record("resume accepted runs of another config")
        } catch let error as SweepWriter.ForeignRuns {
            #expect(error.foreign.count == 3 && error.total == 3)
            #expect(Set(error.foreign) == Set(e1.runs.map(\.runId)))
            #expect(error.description.contains("3 of 3") && error.description.contains(error.foreign[0]))
            #expect(error.description.contains("--overwrite"))
        }
        // The file is untouched: still the three epoch-1 runs.
        let (table, _) = try SweepReport.read(path: path)
        #expect(Set(table.column("run_id")!.map { $0.stringValue! }) == Set(e1.runs.map(\.runId)))
    }

    @Test func resumeWithMoreSeedsRenumbersAndUpdatesTheHeader() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let path = scratch.path("s.h5")
        // Seeds 1 and 3 first, then the sweep grows to 0...3: the kept runs move to indices 1 and 3.
        let small = try SweepFixtures.experiment(Self.seeds("[1, 3]", epochs: 1))
        try await SweepFixtures.sweep(small, to: path, jobs: 2)
        let big = try SweepFixtures.experiment(Self.seeds("[0, 1, 2, 3]", epochs: 1))
        let outcome = try await SweepFixtures.sweep(big, to: path, jobs: 2, resume: true)
        #expect(outcome.skipped == 2 && outcome.written == 2)
        let (table, _) = try SweepReport.read(path: path)
        #expect(table.column("sweep_index") == (0..<4).map { HDF5Value.int(Int64($0)) })
        #expect(table.column("run_id")!.map { $0.stringValue! } == big.runs.map(\.runId))
        let f = try HDF5File.open(path: path)
        #expect(try f.root.attributes.scalar("sweep_run_count", as: Int64.self) == 4)
        #expect(try f.root.attributes.string("experiment_json") == big.sourceText)
        try f.close()
    }

    @Test func mergingDifferentExperimentsIsRefusedUnlessAllowMixed() async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let e1 = try SweepFixtures.experiment(Self.seeds("[0, 1, 2]", epochs: 1))
        let e2 = try SweepFixtures.experiment(Self.seeds("[0, 1, 2]", epochs: 2))
        let a = scratch.path("a.h5"), b = scratch.path("b.h5")
        try await SweepFixtures.sweep(e1, to: a, jobs: 2)
        try await SweepFixtures.sweep(e2, to: b, jobs: 2)
        do {
            _ = try ResultsMerger.merge(inputs: [a, b], output: scratch.path("m.h5"))
            Issue.record("merged two experiments without --allow-mixed")
        } catch let error as ResultsMerger.Conflict {
            #expect(error.description.contains("different experiment") && error.description.contains("--allow-mixed"))
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.path("m.h5")))
        // Allowed: all six runs, ordered by (sweep_index, run_id) whatever the input order.
        let report = try ResultsMerger.merge(inputs: [a, b], output: scratch.path("ab.h5"), allowMixed: true)
        _ = try ResultsMerger.merge(inputs: [b, a], output: scratch.path("ba.h5"), allowMixed: true)
        #expect(report.runs == 6 && !report.warnings.isEmpty)
        let ab = try SweepFixtures.comparableSummary(scratch.path("ab.h5")), ba = try SweepFixtures.comparableSummary(scratch.path("ba.h5"))
        #expect(ab.rows.count == 6 && ab.rows == ba.rows)
        let (table, _) = try SweepReport.read(path: scratch.path("ab.h5"))
        let keys = zip(table.column("sweep_index")!.map { $0.intValue! }, table.column("run_id")!.map { $0.stringValue! }).map { ($0, $1) }
        #expect(keys.map(\.0) == [0, 0, 1, 1, 2, 2])
        #expect(zip(keys, keys.dropFirst()).allSatisfy { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) })
        let f = try HDF5File.open(path: scratch.path("ab.h5"))
        #expect(try f.root.attributes.scalar("mixed", as: Int64.self) == 1)
        try f.close()
        // Same experiment_json but two runs at one sweep_index (e.g. a hand-edited file): refused too.
        do {
            let text = try HDF5File.open(path: a).root.attributes.string("experiment_json")!
            let g = try HDF5File.open(path: b, mode: .readWrite)
            try g.root.attributes.set("experiment_json", text)
            try g.close()
        }
        do {
            _ = try ResultsMerger.merge(inputs: [a, b], output: scratch.path("m.h5"))
            Issue.record("merged clashing sweep indices")
        } catch let error as ResultsMerger.Conflict {
            #expect(error.description.contains("both have sweep_index"))
        }
    }
}
