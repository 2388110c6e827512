import ContinualExperiments
import Foundation
import Testing

/// `continual run` writes the same results file as `sweep`, run by run: a kill keeps every
/// finished run, an existing file is never replaced silently, and `--resume` finishes the rest.
@Suite("Run CLI", .serialized)
struct RunCLITests {
    /// Starts `run`, waits until the `k`-th run's progress line, sends `sig`, and returns the exit
    /// status.
    static func runAndKill(_ scratch: SweepScratch, output: String, after k: Int, signal sig: Int32) throws -> Int32 {
        let child = try SweepCLITests.launch(["run", "s.json", "-o", output, "--plain"], in: scratch.url)
        child.readOutput(until: "[\(k)/")
        kill(child.pid, sig)
        let ended = child.finish()
        return ended.signal ?? ended.status  // as Foundation's `Process` reported it: the signal itself
    }

    @Test(arguments: [SIGTERM, SIGKILL])
    func killedAfterSomeRunsKeepsThemAndResumes(_ sig: Int32) async throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        let text = SweepFixtures.twentyFour(trainPerExperience: 400, epochs: 3)
        try text.write(toFile: scratch.path("s.json"), atomically: true, encoding: .utf8)
        let status = try Self.runAndKill(scratch, output: "cut.h5", after: 2, signal: sig)
        #expect(status == (sig == SIGTERM ? 130 : 9) || status == 137 || status == sig)
        // Readable, with at least the two finished runs (in the file or its journal) and not all of them.
        let mid = try SweepFixtures.comparableSummary(scratch.path("cut.h5"))
        let kept = mid.rows.count + SweepWriter.journalEntries(scratch.path("cut.h5")).count
        #expect(kept >= 2 && kept < 24)
        // An existing file is refused without --resume or --overwrite (exit 2), and kept intact.
        #expect(try SweepCLITests.run(["run", "s.json", "-o", "cut.h5"], in: scratch.url).status == 2)
        #expect(try SweepFixtures.comparableSummary(scratch.path("cut.h5")).rows == mid.rows)
        // --resume runs only the missing ones; the result equals one uninterrupted sweep.
        let resumed = try SweepCLITests.run(["run", "s.json", "-o", "cut.h5", "--resume", "-q", "--jobs", "2"], in: scratch.url)
        #expect(resumed.status == 0)
        #expect(resumed.output.contains("\(kept) already there"))
        let e = try SweepFixtures.experiment(text)
        try await SweepFixtures.sweep(e, to: scratch.path("full.h5"), jobs: 2)
        #expect(try SweepFixtures.comparableSummary(scratch.path("cut.h5")).rows
                == SweepFixtures.comparableSummary(scratch.path("full.h5")).rows)
        // --overwrite replaces it.
        #expect(try SweepCLITests.run(["run", "s.json", "-o", "cut.h5", "--overwrite", "-q", "--jobs", "2"], in: scratch.url).status == 0)
    }

    @Test("--variant takes a variant's name (all of its sweep's runs) or one run's full name, and lists the variants otherwise")
    func variantSelection() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("v.json", tinyExperiment(name: "v", extra: #""sweep": {"parameters": {"seed": [1, 2]}},"#))
        let all = try runCLI(["run", exp, "--variant", "naive", "-o", dir.path("a.h5"), "-q"])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(try ResultsReader.read(path: dir.path("a.h5")).runs.map(\.name).sorted() == ["naive_seed=1", "naive_seed=2"])
        let one = try runCLI(["run", exp, "--variant", "naive_seed=2", "-o", dir.path("b.h5"), "-q"])
        #expect(one.status == 0, "\(one.stderr)")
        #expect(try ResultsReader.read(path: dir.path("b.h5")).runs.map(\.name) == ["naive_seed=2"])
        let none = try runCLI(["run", exp, "--variant", "nave", "-o", dir.path("c.h5"), "-q"])
        #expect(none.status == 2 && none.stderr.contains("variants: naive, joint"), "\(none.stderr)")
    }
}

