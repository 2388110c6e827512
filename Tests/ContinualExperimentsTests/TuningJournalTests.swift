import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// An interrupted tuning resumes where it stopped (`TuningJournal`): finished selection runs are
/// kept bit for bit, reused only for the very same run, never by a fresh start.
@Suite("Tuning journal")
struct TuningJournalTests {
    let text = """
        {"name": "journal_test", "seed": 1,
         "scenario": {"type": "split_digits", "path": "\(digitsPath)", "setting": "class"},
         "model": {"hidden": [16]}, "optimizer": {"type": "adam", "lr": 0.001},
         "training": {"steps_per_experience": 6, "batch_size": 32},
         "tune": {"parameters": {"optimizer.lr": [0.0001, 0.001, 0.01]}, "validation_fraction": 0.2, "experiences": 2, "seeds": [7, 8]},
         "variants": [{"name": "naive", "strategy": ["naive"]}]}
        """

    @Test("lines keep every bit (NaN and negative zero included); another version's or a torn line is not used")
    func format() {
        let e = [TuningJournal.Entry(score: 0.1 + 0.2, flops: 123_456_789, wallSeconds: 1e-300),
                 TuningJournal.Entry(score: .nan, flops: 0, wallSeconds: -0.0)]
        let ids = ["0123456789abcdef", "fedcba9876543210"]
        let body = zip(ids, e).map { TuningJournal.line(runId: $0, $1) }.joined()
        let parsed = TuningJournal.parse(TuningJournal.header + "\n" + body)
        #expect(parsed[ids[0]] == e[0])
        #expect(parsed[ids[1]]!.score.bitPattern == Double.nan.bitPattern && parsed[ids[1]]!.wallSeconds.bitPattern == (-0.0).bitPattern)
        #expect(TuningJournal.parse("continualkit-tuning-journal 1 toolkit=0.0.0 numerics=0\n" + body).isEmpty)
        // A line torn by a kill, then a whole one appended after it: the torn one is skipped, and
        // fusing it with the next never makes a line that parses.
        let torn = String(TuningJournal.line(runId: ids[0], e[0]).dropLast(9))
        let fused = TuningJournal.parse(TuningJournal.header + "\n" + torn + TuningJournal.line(runId: ids[1], e[1]))
        #expect(fused.isEmpty)
        let last = TuningJournal.parse(TuningJournal.header + "\n" + TuningJournal.line(runId: ids[1], e[1]) + torn)
        #expect(Array(last.keys) == [ids[1]])
        let garbage = TuningJournal.parse(TuningJournal.header + "\nnot a line\n" + TuningJournal.line(runId: ids[1], e[1]))
        #expect(Array(garbage.keys) == [ids[1]])
    }

    @Test("a tuning resumed from a partial journal makes the uninterrupted records and runs only what is missing")
    func resume() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let file = try ExperimentFile.parse(data: Data(text.utf8), path: dir.path("e.json"))
        let trials = try Tuner.trials(file)
        #expect(trials.count == 6)
        let full = TuningJournal(results: dir.path("full.h5"))
        try full.start()
        let whole = try await Tuner.tune(file, jobs: 2, journal: full)
        let entries = full.entries()
        #expect(entries.count == trials.count)

        // Half of the entries survive the "kill"; the rest run again and agree bit for bit.
        let half = TuningJournal(results: dir.path("half.h5"))
        let kept = Dictionary(uniqueKeysWithValues: trials.prefix(3).map { ($0.run.runId, entries[$0.run.runId]!) })
        try half.start(with: kept)
        var seen: [Int] = []
        let resumed = try await Tuner.tune(file, jobs: 2, journal: half, progress: { done, _ in seen.append(done) })
        #expect(seen.first == 3 && seen.last == 6 && seen.count == 4)
        #expect(resumed.map(\.scores).description == whole.map(\.scores).description)
        #expect(resumed.map(\.flops) == whole.map(\.flops) && resumed.map(\.chosen) == whole.map(\.chosen))
        #expect(half.entries().mapValues { [$0.score, Double($0.flops)] } == entries.mapValues { [$0.score, Double($0.flops)] })

        // The kept entries are used as they are, not recomputed: a journal is trusted like the
        // results file beside it, which is why only a resumed command reads it.
        let loser = (0..<3).first { $0 != whole[0].chosen }!
        var forged = entries
        for s in 0..<2 {
            let id = trials.first { $0.point == loser && $0.seedIndex == s }!.run.runId
            forged[id]!.score = 2
        }
        try half.start(with: forged)
        #expect(try await Tuner.tune(file, jobs: 2, journal: half)[0].chosen == loser)
    }

    @Test("the CLI keeps an interrupted tuning for --resume, refuses to drop it silently, and removes it when done")
    func cli() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("e.json", text)
        let out = dir.path("r.h5"), journal = TuningJournal(results: out)
        // What a kill during tuning leaves: a journal and no results file.
        let file = try ExperimentFile.parse(data: Data(text.utf8), path: exp)
        let first = try Tuner.trials(file)[0].run.runId
        try journal.start(with: [first: .init(score: 0.5, flops: 1, wallSeconds: 1)])
        let refused = try runCLI(["sweep", exp, "-o", out, "--jobs", "2"])
        #expect(refused.status == 2 && refused.stderr.contains("--resume") && refused.stderr.contains(journal.path))
        let resumed = try runCLI(["sweep", exp, "-o", out, "--jobs", "2", "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("1 of them already finished"))
        #expect(!journal.exists)
        // --overwrite starts the tuning afresh: nothing of an old journal is used.
        try journal.start(with: [first: .init(score: 0.5, flops: 1, wallSeconds: 1)])
        let again = try runCLI(["sweep", exp, "-o", out, "--jobs", "2", "--overwrite"])
        #expect(again.status == 0 && !again.stdout.contains("already finished"))
        #expect(!journal.exists)
    }

    @Test("a sweep stopped after its tuning finished resumes: the journal's runs are reused and /tuning is rewritten, not duplicated")
    func resumeAfterTuning() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("e.json", text)
        let out = dir.path("r.h5"), journal = TuningJournal(results: out)
        let first = try runCLI(["sweep", exp, "-o", out, "--jobs", "2"])
        #expect(first.status == 0, "\(first.stderr)")
        let tuned = try ResultsReader.read(path: out).tuning
        // /tuning without its selection runs' ids (a file written before they were kept): only
        // the journal can then say which selection runs finished.
        do {
            let f = try HDF5File.open(path: out, mode: .readWrite)
            defer { try? f.close() }
            let tuning = try f.root.openGroup("tuning")
            for name in try tuning.childNames() {
                let g = try tuning.openGroup(name)
                try g.delete("run_ids")
                try g.delete("run_wall_seconds")
            }
        }
        // What a kill after the tuning leaves: the header (with /tuning) written, the journal whole.
        let file = try ExperimentFile.parse(data: Data(text.utf8), path: exp)
        let whole = TuningJournal(results: dir.path("whole.h5"))
        try whole.start()
        _ = try await Tuner.tune(file, jobs: 2, journal: whole)
        try journal.start(with: whole.entries())
        let resumed = try runCLI(["sweep", exp, "-o", out, "--jobs", "2", "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("6 of them already finished"))
        #expect(resumed.stdout.contains("0 written now"))
        #expect(!journal.exists)
        let again = try ResultsReader.read(path: out).tuning
        #expect(again.count == 1 && again.map(\.jsonValue) == tuned.map(\.jsonValue))
        #expect(again.map(\.meanScores).description == tuned.map(\.meanScores).description)
    }

    @Test("a finished tuned sweep resumes without a selection run: /tuning's run ids stand in for the journal removed when it finished")
    func resumeFinished() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("e.json", text)
        let out = dir.path("r.h5")
        let first = try runCLI(["sweep", exp, "-o", out, "--jobs", "2"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(!TuningJournal(results: out).exists)
        let tuned = try ResultsReader.read(path: out).tuning
        #expect(tuned.count == 1 && tuned[0].runIds.joined().count == 6 && Set(tuned[0].runIds.joined()).count == 6)
        #expect(tuned[0].runSeconds.joined().reduce(0, +) == tuned[0].wallSeconds)

        let resumed = try runCLI(["sweep", exp, "-o", out, "--jobs", "2", "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("6 of them already finished") && resumed.stdout.contains("0 written now"))
        let again = try ResultsReader.read(path: out).tuning
        #expect(again.map(\.jsonValue) == tuned.map(\.jsonValue) && again[0].runIds == tuned[0].runIds)
        #expect(again[0].wallSeconds.bitPattern == tuned[0].wallSeconds.bitPattern)
    }
}
