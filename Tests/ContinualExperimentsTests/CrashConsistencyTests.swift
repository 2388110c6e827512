import ContinualCore
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// Results files are crash-consistent (docs/results-format.md#crash-consistency): the states a
/// kill can leave — runs only in the journal, a fold cut short after its rename, stale temporary
/// files — all open, and `--resume` or `repair` recover every finished run. The random-time
/// SIGKILL/SIGTERM test is Experiments/tools/kill_test.py (CI: 30 kills).
@Suite("Crash consistency", .serialized)
struct CrashConsistencyTests {
    static let sixRuns = tinyExperiment(name: "cc", extra: #""sweep": {"parameters": {"seed": [1, 2, 3]}},"#)

    /// Writes `count` runs of `e` through a writer that is never finished (a SIGKILL right after).
    static func writeAndDie(_ e: ExperimentFile, path: String, count: Int) throws -> SweepWriter {
        let writer = try SweepWriter(path: path, experiment: e, layout: SummaryLayout(experiment: e), resume: false)
        for run in e.runs.prefix(count) { try writer.write(RunExecutor.execute(run)) }
        return writer
    }

    @Test("runs left only in the journal: the file opens, --resume and repair recover them, the result equals an uninterrupted run")
    func journalOnlyRunsAreRecovered() async throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let json = work.write("e.json", Self.sixRuns)
        let e = try ExperimentFile.load(path: json)
        let path = work.path("cut.h5")
        _ = try Self.writeAndDie(e, path: path, count: 4)
        let inFile = try ResultsReader.read(path: path).runs.count
        let pending = SweepWriter.journalEntries(path).count
        #expect(inFile + pending == 4, "file \(inFile) + journal \(pending)")
        // The file itself is a complete, readable state (every group whole and sealed).
        for v in try ResultsReader.verify(path: path) { #expect(v.status == .verified, "\(v.runId): \(v.status)") }

        // repair folds the journal into a new file; the damaged-looking original is only read.
        let repaired = work.path("repaired.h5")
        let r = try runCLI(["repair", path, "-o", repaired])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try ResultsReader.read(path: repaired).runs.count == 4)

        // --resume recovers the journal's runs, runs the other two, equals an uninterrupted sweep.
        let resumed = try runCLI(["sweep", json, "-o", path, "--resume", "--plain"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("4 already there"), "\(resumed.stdout)")
        if pending > 0 { #expect(resumed.stderr.contains("recovered \(pending) finished run(s)"), "\(resumed.stderr)") }
        #expect(!FileManager.default.fileExists(atPath: SweepWriter.journalPath(for: path)))
        let full = work.path("full.h5")
        #expect(try runCLI(["sweep", json, "-o", full]).status == 0)
        #expect(try SweepFixtures.comparableSummary(path).rows == SweepFixtures.comparableSummary(full).rows)
    }

    @Test("a fold cut short after its rename, and stale temporary files, are harmless")
    func foldCutShortAndStaleTemporaries() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let json = work.write("e.json", Self.sixRuns)
        let e = try ExperimentFile.load(path: json)
        let path = work.path("cut.h5")
        let writer = try Self.writeAndDie(e, path: path, count: 2)
        try writer.finish()  // both runs in the file, journal gone
        // Put a run back into the journal as a fold that renamed but did not delete would leave
        // it, plus the temporaries of a writer killed mid-copy and mid-entry.
        // The entry is written directly: through `write`, a first run is folded at once (its
        // entry is more than 1/8 of the new file), so no journal would be left to copy.
        let again = try SweepWriter(path: path + ".other.h5", experiment: e, layout: SummaryLayout(experiment: e), resume: false)
        let first = RunExecutor.execute(e.runs[0])
        _ = try HDF5Lock.withLock { try again.writeJournalEntry(first) }
        let entry = try #require(SweepWriter.journalEntries(path + ".other.h5").first)
        try FileManager.default.createDirectory(atPath: SweepWriter.journalPath(for: path), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: entry, toPath: SweepWriter.journalPath(for: path) + "/" + (entry as NSString).lastPathComponent)
        _ = FileManager.default.createFile(atPath: path + ".tmp-99999", contents: Data("half a copy".utf8))
        _ = FileManager.default.createFile(atPath: SweepWriter.journalPath(for: path) + "/x.h5.tmp-99999", contents: Data())
        let resumed = try runCLI(["sweep", json, "-o", path, "--resume", "--plain"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try ResultsReader.read(path: path).runs.count == 6)
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp-99999"))
        #expect(!FileManager.default.fileExists(atPath: SweepWriter.journalPath(for: path)))
    }

    @Test("a fold of more journal entries than one batch keeps every run, and finish sorts /summary as a rebuild from the groups would")
    func foldAcrossBatches() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        // 2 variants × 6 seeds = 12 runs: three batches of SweepWriter.absorbBatch (4).
        let e = try ExperimentFile.parse(data: Data(tinyExperiment(name: "fb", extra: #""sweep": {"parameters": {"seed": [1, 2, 3, 4, 5, 6]}},"#).utf8),
                                         path: work.path("e.json"))
        #expect(e.runs.count > 2 * SweepWriter.absorbBatch)
        let path = work.path("fb.h5")
        let writer = try SweepWriter(path: path, experiment: e, layout: SummaryLayout(experiment: e), resume: false)
        // Every run goes to the journal only (written directly, in reverse sweep order), so the
        // final fold absorbs them all in one file copy and must reopen it between batches.
        for run in e.runs.reversed() {
            _ = try HDF5Lock.withLock { try writer.writeJournalEntry(RunExecutor.execute(run)) }
        }
        #expect(SweepWriter.journalEntries(path).count == e.runs.count)
        try writer.finish()
        #expect(!FileManager.default.fileExists(atPath: SweepWriter.journalPath(for: path)))
        for v in try ResultsReader.verify(path: path) { #expect(v.status == .verified, "\(v.runId): \(v.status)") }
        let file = try HDF5File.open(path: path, mode: .readOnly, trusted: true)
        defer { try? file.close() }
        let summary = try file.root.openDataset("summary").readTable()
        let si = try #require(summary.columns.firstIndex { $0.name == "sweep_index" })
        #expect(summary.rows.map { Int($0[si].intValue ?? -1) } == Array(0..<e.runs.count))
        // The same rows, in the same order, as reading every run group's summary_row.
        let fromGroups = try SweepWriter.storedRows(file.root)
            .sorted { ($0.row[si].intValue ?? 0) < ($1.row[si].intValue ?? 0) }.map(\.row)
        #expect(summary.rows.map { "\($0)" } == fromGroups.map { "\($0)" })  // as text: NaN cells are never ==
    }

    @Test("readers are never blocked while a sweep writes: inspect and h5py-style opens succeed throughout")
    func readersDuringWrites() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let json = work.write("e.json", tinyExperiment(name: "rw", extra: #""sweep": {"parameters": {"seed": [1, 2, 3, 4, 5, 6]}},"#))
        let path = work.path("rw.h5")
        let child = try SpawnedChild(continualBinary(), ["sweep", json, "-o", path, "--jobs", "1", "--plain"],
                                     stdout: .discard, stderr: .discard)
        var reads = 0, failures: [String] = []
        while child.isRunning {
            if FileManager.default.fileExists(atPath: path) {
                let r = try runCLI(["inspect", path, "--brief"])
                reads += 1
                if r.status != 0 { failures.append(r.stderr) }
                // The library's own read, as the Python loader does it (open, read /summary, close).
                do { _ = try SweepReport.read(path: path) } catch { failures.append("\(error)") }
            }
            usleep(20_000)
        }
        #expect(child.finish().status == 0)
        #expect(reads > 0)
        #expect(failures.isEmpty, "\(failures.count) of \(reads) reads failed: \(failures.prefix(2))")
    }
}

/// Every run group is sealed with a SHA-256 digest; merge, repair, inspect --verify and --resume
/// detect the damage kinds of issue 26 and name the run.
@Suite("Run integrity", .serialized)
struct RunIntegrityTests {
    @Test("each damage kind is detected by inspect --verify, merge, repair and --resume, which name the run and keep the good copy",
          arguments: RunDamage.allCases)
    func damageIsDetected(_ kind: RunDamage) throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let good = try sweptResults(in: work, name: "dg").path, bad = work.path("bad.h5")
        try FileManager.default.copyItem(atPath: good, toPath: bad)
        let victim = try ResultsReader.read(path: bad).runs[0]
        try kind.apply(to: bad, run: victim.runId)

        let verify = try runCLI(["inspect", bad, "--verify"])
        #expect(verify.status == 2, "\(verify.stdout)")
        #expect(verify.stdout.contains("run \(victim.runId) (\(victim.name)): damaged"), "\(verify.stdout)")
        #expect(try runCLI(["inspect", good, "--verify"]).status == 0)

        // merge: the damaged copy is skipped and named; the good duplicate is kept, not "identical".
        let merged = work.path("merged.h5")
        let m = try runCLI(["merge", merged, bad, good])
        #expect(m.status == 0, "\(m.stderr)")
        #expect(m.stderr.contains("run \(victim.runId) (\(victim.name)) is damaged"), "\(m.stderr)")
        // The undamaged run is in both inputs (a true identical duplicate); the damaged one is not.
        #expect(m.stdout.contains("1 damaged run(s) skipped") && m.stdout.contains("1 identical duplicates skipped"), "\(m.stdout)")
        #expect(try runCLI(["inspect", merged, "--verify"]).status == 0)
        #expect(try ResultsReader.read(path: merged).runs.count == 2)

        // repair: skips it and says so.
        let r = try runCLI(["repair", bad, "-o", work.path("repaired.h5")])
        #expect(r.stdout.contains("1 damaged group(s) skipped"), "\(r.stdout)")
        #expect(r.stderr.contains(victim.runId))
        #expect(try ResultsReader.read(path: work.path("repaired.h5")).runs.map(\.runId) == [try ResultsReader.read(path: good).runs[1].runId])

        // sweep --resume: checked against the manifest the file was written with (not one
        // rewritten from the groups being checked), the damaged run is named and runs again.
        let resumed = try runCLI(["sweep", work.path("dg.json"), "-o", bad, "--resume"])
        #expect(resumed.status == 0 && resumed.stderr.contains("run group \(victim.runId) was unreadable"), "\(resumed.stderr)")
        #expect(try runCLI(["inspect", bad, "--verify"]).status == 0)
        let rerun = try ResultsReader.read(path: bad).runs
        #expect(Set(rerun.map(\.runId)) == Set(try ResultsReader.read(path: good).runs.map(\.runId)))
        #expect(rerun.first { $0.runId == victim.runId }?.metrics["acc"] == victim.metrics["acc"])
    }

    @Test("the digest survives copying between files and is the same for the same content")
    func digestIsContentOnly() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let a = try sweptResults(in: work, name: "dc").path
        #expect(try runCLI(["merge", work.path("b.h5"), a]).status == 0)
        let fa = try HDF5File.open(path: a), fb = try HDF5File.open(path: work.path("b.h5"))
        for id in try fa.root.openGroup("runs").childNames() {
            let ga = try fa.root.openGroup("runs/\(id)"), gb = try fb.root.openGroup("runs/\(id)")
            #expect(RunDigest.verify(ga) == .verified && RunDigest.verify(gb) == .verified)
            #expect(try RunDigest.digest(ga) == RunDigest.digest(gb))
        }
    }

    @Test("inspect counts a run once however often /summary repeats it, and refuses a file that is not a results file")
    func duplicatedRowsAndNonResultsFiles() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let path = try sweptResults(in: work, name: "du", extra: #""sweep": {"parameters": {"seed": [1, 2, 3]}},"#).path
        do {
            let f = try HDF5File.open(path: path, mode: .readWrite)
            let d = try f.root.openDataset("summary")
            let rows = try d.readTable().rows
            try d.append(rows: rows + rows)  // every row three times
            try f.close()
        }
        let r = try runCLI(["inspect", path, "--brief"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("6 in /summary"), "\(r.stdout)")
        let (table, by) = try SweepReport.read(path: path)
        let groups = SweepReport.groups(table, by: by)
        #expect(groups.count == 2 && groups.allSatisfy { $0.runs == 3 }, "\(groups.map(\.runs))")
        #expect(r.stderr.contains("repeats 12 row(s)"), "\(r.stderr)")

        // A checkpoint is not a results file: exit 2 and say so (it printed "0 run(s)", exit 0).
        let ck = work.path("ck.h5")
        let single = work.write("one.json", tinyExperiment(name: "ck"))   // one run per variant (no sweep)
        #expect(try runCLI(["run", single, "--variant", "naive", "--stop-after", "0", "--checkpoint", ck]).status == 0)
        let c = try runCLI(["inspect", ck])
        #expect(c.status == 2 && c.stderr.contains("not a ContinualKit results file"), "\(c.status) \(c.stdout) \(c.stderr)")
    }
}
