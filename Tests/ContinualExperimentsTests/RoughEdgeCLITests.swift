import ContinualExperiments
import Foundation
import Testing

/// The rough edges a new user hit (issue 41.8 and 41.7), each reproduced through the built
/// `continual` binary: `--resume` on a missing file, the resume hint after Ctrl-C, a results file
/// given where an experiment JSON is expected (and the reverse), and outputs that name a file the
/// toolkit did not write.
@Suite("Rough edge CLI", .serialized)
struct RoughEdgeCLITests {
    struct Finished { var status: Int32; var out: String; var err: String }

    /// Runs the binary (or `executable`, e.g. a shell) to the end with stdout and stderr captured apart.
    static func run(_ arguments: [String], in directory: URL, executable: String? = nil) throws -> Finished {
        let ended = try SpawnedChild(executable ?? #require(SweepCLITests.binary(), "build the continual product first"), arguments,
                                     in: directory).finish()
        return Finished(status: ended.status, out: ended.stdout, err: ended.stderr)
    }

    /// A two-run experiment of a fraction of a second.
    static let tiny = """
        {"name": "tiny", "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 30,
         "phases": ["morning", "night"]}, "model": {"hidden": [4]}, "training": {"epochs": 1, "batch_size": 16},
         "variants": [{"name": "naive", "strategy": ["naive"]}, {"name": "joint", "strategy": ["joint"]}]}
        """

    @Test func resumeOfAMissingFileIsRefusedUnlessResumeOrStart() throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        try Self.tiny.write(toFile: scratch.path("t.json"), atomically: true, encoding: .utf8)
        for command in ["run", "sweep"] {
            // A mistyped path with --resume used to start every run from scratch into a new file.
            let refused = try Self.run([command, "t.json", "-o", "typo.h5", "--resume"], in: scratch.url)
            #expect(refused.status == 2)
            #expect(refused.err.contains("typo.h5 does not exist: there is nothing to resume"))
            #expect(refused.err.contains("--resume-or-start"))
            #expect(!FileManager.default.fileExists(atPath: scratch.path("typo.h5")))
            // --resume-or-start starts a missing file, and resumes it the second time.
            let name = "\(command).h5"
            let first = try Self.run([command, "t.json", "-o", name, "--resume-or-start", "--plain"], in: scratch.url)
            #expect(first.status == 0)
            #expect(first.out.contains("(2 written now, 0 already there)"))
            let second = try Self.run([command, "t.json", "-o", name, "--resume-or-start", "--plain"], in: scratch.url)
            #expect(second.status == 0)
            #expect(second.out.contains("(0 written now, 2 already there)"))
            #expect(try Self.run([command, "t.json", "-o", name, "--resume-or-start", "--overwrite"], in: scratch.url).status == 2)
        }
    }

    @Test func theResumeHintAfterCtrlCRepeatsTheOutputAndShardAndWorks() throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        try SweepFixtures.twentyFour(trainPerExperience: 400, epochs: 3).write(toFile: scratch.path("s.json"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: scratch.path("my out"), withIntermediateDirectories: true)
        // A folder with a space: the hint must quote it for the shell.
        let arguments = ["sweep", "s.json", "-o", "my out/mine.h5", "--shard", "1/2", "--jobs", "1", "--plain", "--overwrite"]
        let child = try SpawnedChild(try #require(SweepCLITests.binary()), arguments, in: scratch.url)
        child.readOutput(until: "[2/12]")
        kill(child.pid, SIGINT)
        let ended = child.finish()
        let stderr = ended.stderr
        #expect(ended.signal == nil && ended.status == 130)
        let hint = "continual sweep s.json -o 'my out/mine.h5' --shard 1/2 --jobs 1 --plain --resume"
        #expect(stderr.contains("finish them with: \(hint)\n"), "\(stderr)")
        // The printed command, run by a shell as the user would paste it, finishes the same file.
        let bin = URL(fileURLWithPath: try #require(SweepCLITests.binary())).deletingLastPathComponent().path
        let shell = try Self.run(["-c", "PATH='\(bin)':\"$PATH\" \(hint)"], in: scratch.url, executable: "/bin/sh")
        #expect(shell.status == 0, "\(shell.err)")
        #expect(shell.out.contains("already there"))
        #expect(try ResultsReader.read(path: scratch.path("my out/mine.h5")).runs.count == 12)
    }

    @Test func aResultsFileGivenAsTheExperimentSaysWhatItIs() throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        try Self.tiny.write(toFile: scratch.path("t.json"), atomically: true, encoding: .utf8)
        #expect(try Self.run(["run", "t.json", "-o", "r.h5", "-q"], in: scratch.url).status == 0)
        for command in ["run", "sweep", "validate"] {
            let r = try Self.run([command, "r.h5"], in: scratch.url)
            #expect(r.status == 2)
            #expect(r.err.contains("r.h5 is an HDF5 file (a results or scenario file); `continual \(command)` takes an "
                + "experiment JSON — to look at it: continual inspect r.h5"), "\(r.err)")
            #expect(!r.err.contains("line 1"))
        }
        // The reverse mix-up: an experiment JSON where a results file is read.
        for arguments in [["inspect", "t.json"], ["repair", "t.json", "-o", "fixed.h5"], ["merge", "m.h5", "t.json"]] {
            let r = try Self.run(arguments, in: scratch.url)
            #expect(r.status == 2)
            #expect(r.err.contains("t.json is a JSON file (an experiment file?); `continual \(arguments[0])` takes a results file"),
                    "\(r.err)")
            #expect(r.err.contains("continual run t.json"))
        }
    }

    @Test func anOutputThatIsNotAResultsFileIsNeverReplaced() throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        try Self.tiny.write(toFile: scratch.path("t.json"), atomically: true, encoding: .utf8)
        try "my notes\n".write(toFile: scratch.path("notes.txt"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: scratch.path("folder.h5"), withIntermediateDirectories: true)
        let cases = [("notes.txt", "a text file"), ("t.json", "a JSON file"), ("folder.h5", "a directory")]
        for command in ["run", "sweep"] {
            for (target, kind) in cases {
                for mode in ["--overwrite", "--resume", "--resume-or-start"] {
                    let r = try Self.run([command, "t.json", "-o", target, mode], in: scratch.url)
                    #expect(r.status == 2)
                    #expect(r.err.contains("\(target) is \(kind), not a results file; it is never replaced, not even with --overwrite"),
                            "\(command) \(target) \(mode): \(r.err)")
                }
            }
        }
        #expect(try String(contentsOfFile: scratch.path("notes.txt"), encoding: .utf8) == "my notes\n")
        #expect(try String(contentsOfFile: scratch.path("t.json"), encoding: .utf8) == Self.tiny)
        // merge and repair outputs follow the same rule.
        #expect(try Self.run(["run", "t.json", "-o", "r.h5", "-q"], in: scratch.url).status == 0)
        #expect(try Self.run(["merge", "notes.txt", "r.h5", "--overwrite"], in: scratch.url).err.contains("notes.txt is a text file"))
        #expect(try Self.run(["repair", "r.h5", "-o", "notes.txt", "--overwrite"], in: scratch.url).err.contains("notes.txt is a text file"))
        #expect(try String(contentsOfFile: scratch.path("notes.txt"), encoding: .utf8) == "my notes\n")
    }

    @Test func runPrintsTheResolvedOutputPathBeforeItTrains() throws {
        let scratch = try SweepScratch()
        defer { scratch.cleanup() }
        // "output" is relative to the experiment file's folder, not to the working directory.
        try FileManager.default.createDirectory(atPath: scratch.path("exp"), withIntermediateDirectories: true)
        let text = Self.tiny.replacingOccurrences(of: "{\"name\": \"tiny\",", with: "{\"name\": \"tiny\", \"output\": \"out/tiny.h5\",")
        try text.write(toFile: scratch.path("exp/t.json"), atomically: true, encoding: .utf8)
        let r = try Self.run(["run", "exp/t.json", "--plain"], in: scratch.url)
        #expect(r.status == 0)
        let resolved = URL(fileURLWithPath: scratch.path("exp/out/tiny.h5")).standardizedFileURL.path
        let lines = r.out.split(separator: "\n").map(String.init)
        #expect(lines.first == "writing \(resolved) (2 run(s), 0 already there)", "\(r.out)")
        #expect(FileManager.default.fileExists(atPath: resolved))
    }
}
