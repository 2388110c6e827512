import ContinualCore
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// A directory on a fresh tmpfs of `kilobytes` (unmounted afterwards); nil, after printing why,
/// where mounting is not permitted (not root, no CAP_SYS_ADMIN): the test is then skipped.
func withSmallDisk(kilobytes: Int, _ body: (String) throws -> Void) throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ck-full-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    // Standard output to /dev/null too: only the status matters.
    let mount = try SpawnedChild("/usr/bin/env", ["mount", "-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", dir],
                                 stdout: .discard, stderr: .discard).finish()
    guard mount.status == 0 else {
        print("skipped: cannot mount a small tmpfs here (needs root / CAP_SYS_ADMIN); full-disk behaviour not tested")
        return
    }
    defer { _ = try? SpawnedChild("/usr/bin/env", ["umount", dir], stdout: .discard, stderr: .discard).finish() }
    try body(dir)
}

/// Fills the file system of `dir` until at most `leave` bytes are free.
func fillDisk(_ dir: String, leave: Int) throws {
    var st = statvfs()
    guard statvfs(dir, &st) == 0 else { return }
    let free = Int(st.f_bavail) * Int(st.f_frsize)
    guard free > leave else { return }
    _ = FileManager.default.createFile(atPath: dir + "/filler", contents: Data(count: free - leave))
}

func temporaries(_ dir: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.contains(".tmp-") }
}

@Suite("Full disks: errors naming the file and cause, never a crash, no good file destroyed", .serialized)
struct FullDiskTests {
    /// The cause, as the write that failed says it (ENOSPC), or as the disk estimate says it
    /// before anything is written (`--max-disk`'s default is the free space where the file goes).
    static func saysTheDiskIsFull(_ stderr: String) -> Bool {
        stderr.contains("No space left on device") || stderr.contains("more than the free space where")
    }

    @Test("run, sweep, sweep --resume and merge on a full disk fail cleanly; the good file stays good")
    func resultsOnFullDisk() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let twoSeeds = work.write("two.json", tinyExperiment(name: "s", extra: #""sweep": {"parameters": {"seed": [1, 2]}},"#))
        let fourSeeds = work.write("four.json", tinyExperiment(name: "s", extra: #""sweep": {"parameters": {"seed": [1, 2, 3, 4]}},"#))
        try withSmallDisk(kilobytes: 2048) { dir in
            // A good file first, with room to spare.
            let good = dir + "/good.h5"
            let first = try runCLI(["sweep", twoSeeds, "-o", good])
            #expect(first.status == 0, "\(first.stderr)")
            let before = try ResultsReader.read(path: good).runs.count
            #expect(before == 4)

            try fillDisk(dir, leave: 16 << 10)
            let resumed = try runCLI(["sweep", fourSeeds, "-o", good, "--resume"])
            #expect(resumed.status != 0 && resumed.status < 128, "no crash: \(resumed.status) \(resumed.stderr)")
            #expect(resumed.stderr.contains(good) && Self.saysTheDiskIsFull(resumed.stderr), "\(resumed.stderr)")
            // Still good: every run still readable by the toolkit, and --resume works once there is room.
            #expect(try ResultsReader.read(path: good).runs.count == before)

            for (name, args) in [("run", ["run", twoSeeds, "-o", dir + "/new.h5", "-q"]),
                                 ("sweep", ["sweep", twoSeeds, "-o", dir + "/new2.h5"]),
                                 ("merge", ["merge", dir + "/merged.h5", good, good])] {
                let r = try runCLI(args)
                #expect(r.status != 0 && r.status < 128, "\(name) must fail without a crash: \(r.status) \(r.stderr)")
                #expect(Self.saysTheDiskIsFull(r.stderr), "\(name): \(r.stderr)")
            }
            #expect(temporaries(dir).isEmpty, "temporary files left: \(temporaries(dir))")

            try FileManager.default.removeItem(atPath: dir + "/filler")
            let again = try runCLI(["sweep", fourSeeds, "-o", good, "--resume"])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try ResultsReader.read(path: good).runs.count == 8)
        }
    }

    @Test("a checkpoint that cannot be written leaves the previous checkpoint whole")
    func checkpointOnFullDisk() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let exp = work.write("e.json", tinyExperiment(name: "c"))
        try withSmallDisk(kilobytes: 1024) { dir in
            let ck = dir + "/ck.h5"
            let first = try runCLI(["run", exp, "--variant", "naive", "--stop-after", "0", "--checkpoint", ck])
            #expect(first.status == 0, "\(first.stderr)")
            let good = try CheckpointFile.readRun(path: ck)
            try fillDisk(dir, leave: 4 << 10)
            let second = try runCLI(["run", exp, "--variant", "naive", "--stop-after", "1", "--checkpoint", ck])
            #expect(second.status != 0 && second.status < 128, "\(second.status) \(second.stderr)")
            #expect(second.stderr.contains(ck) && second.stderr.contains("No space left on device"), "\(second.stderr)")
            #expect(try CheckpointFile.readRun(path: ck) == good)
            #expect(temporaries(dir).isEmpty, "\(temporaries(dir))")
        }
    }

    @Test("a finished sweep leaves no journal and no temporary file; every run is in the file")
    func journalFoldedAtTheEnd() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let exp = work.write("e.json", tinyExperiment(name: "a", extra: #""sweep": {"parameters": {"seed": [1, 2, 3]}},"#))
        let path = work.path("a.h5")
        let r = try runCLI(["sweep", exp, "-o", path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: SweepWriter.journalPath(for: path)))
        #expect(temporaries(work.path("")).isEmpty)
        #expect(try ResultsReader.read(path: path).runs.count == 6)
    }
}

@Suite("One writer per file; provenance of resumed data")
struct WriterLockTests {
    @Test("a second writer gets an error naming the holder's PID; readers are not blocked")
    func secondWriter() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let exp = work.write("e.json", tinyExperiment(name: "l"))
        let path = work.path("l.h5")
        let first = try runCLI(["run", exp, "-o", path, "-q"])
        #expect(first.status == 0)
        try WriterLock.acquire(path)
        defer { WriterLock.release(path) }
        for args in [["run", exp, "-o", path, "--overwrite", "-q"], ["sweep", exp, "-o", path, "--resume"],
                     ["merge", work.path("m.h5"), path]] {
            let r = try runCLI(args)
            #expect(r.status == 2 && r.stderr.contains("(PID \(getpid()))"), "\(args[0]): \(r.stderr)")
        }
        let inspect = try runCLI(["inspect", path])
        #expect(inspect.status == 0, "\(inspect.stderr)")
    }

    @Test("two concurrent runs into one file: one succeeds, the other is refused")
    func concurrentRuns() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        // Slow enough (60 epochs, about a second each) that the two overlap.
        let a = work.write("a.json", tinyExperiment(name: "a").replacingOccurrences(of: #""epochs": 3"#, with: #""epochs": 60"#))
        let b = work.write("b.json", tinyExperiment(name: "b").replacingOccurrences(of: #""epochs": 3"#, with: #""epochs": 60"#))
        let path = work.path("out.h5")
        // Both started before either is waited for.
        let binary = try continualBinary()
        let children = try [a, b].map { exp in
            try SpawnedChild(binary, ["run", exp, "-o", path, "--overwrite", "-q"], stdout: .discard)
        }
        let results: [(Int32, String)] = children.map { child in
            let ended = child.finish()
            return (ended.status, ended.stderr)
        }
        let ok = results.filter { $0.0 == 0 }.count
        let refused = results.filter { $0.0 == 2 && $0.1.contains("being written by another process (PID") }.count
        // Either they overlapped (one refused) or ran one after the other (both fine, the file is the last one's).
        #expect(ok + refused == 2 && ok >= 1, "\(results)")
        #expect(ok == 1 && refused == 1, "the runs overlap, so one is refused: \(results)")
        // The file holds one experiment's two runs, not a mix.
        #expect(try ResultsReader.read(path: path).runs.count == 2)
    }

    @Test("resuming a dataset checkpoint after the data file changed is an error unless --allow-data-change")
    func changedData() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        var csv = "experience,split,x,y,label\n"
        for e in 0..<3 { for i in 0..<30 { csv += "\(e),\(i % 3 == 0 ? "test" : "train"),\(Double(i) / 10),\(e),\(i % 2)\n" } }
        let data = work.write("d.csv", csv)
        let exp = work.write("e.json", """
            {"name": "d", "scenario": {"type": "dataset", "path": "\(data)"}, "model": {"hidden": [4]},
             "training": {"epochs": 1}, "strategy": "naive"}
            """)
        let ck = work.path("ck.h5")
        let stop = try runCLI(["run", exp, "--stop-after", "0", "--checkpoint", ck])
        #expect(stop.status == 0, "\(stop.stderr)")
        let same = try runCLI(["run", exp, "--resume-from", ck, "-o", work.path("r1.h5")])
        #expect(same.status == 0, "\(same.stderr)")
        try (csv.replacingOccurrences(of: "\n2,train,0.1", with: "\n2,train,0.9")).write(toFile: data, atomically: true, encoding: .utf8)
        let changed = try runCLI(["run", exp, "--resume-from", ck, "-o", work.path("r2.h5")])
        #expect(changed.status == 2 && changed.stderr.contains("other scenario data") && changed.stderr.contains("--allow-data-change"),
                "\(changed.stderr)")
        let allowed = try runCLI(["run", exp, "--resume-from", ck, "-o", work.path("r3.h5"), "--allow-data-change"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
    }
}

@Suite("Recovery skips damaged run groups")
struct DamagedGroupTests {
    @Test("inspect, merge and --resume skip and report an unreadable group; repair copies every readable run")
    func damagedGroup() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let (exp, path) = try sweptResults(in: work, name: "d", extra: #""sweep": {"parameters": {"seed": [1, 2]}},"#)
        guard let bad = try RunDamage.garbleFirstGroupHeader(path) else { return }

        let contents = try ResultsReader.read(path: path)
        #expect(contents.runs.count == 3 && contents.damaged.map(\.id) == [bad])
        let inspect = try runCLI(["inspect", path])
        #expect(inspect.status == 0 && inspect.stderr.contains("run group \(bad) is unreadable"), "\(inspect.stderr)")

        let repaired = work.path("repaired.h5")
        let repair = try runCLI(["repair", path, "-o", repaired])
        #expect(repair.status == 0 && repair.stdout.contains("3 runs copied, 1 damaged group(s) skipped"), "\(repair.stdout) \(repair.stderr)")
        #expect(try ResultsReader.read(path: repaired).runs.count == 3)
        #expect(try ResultsReader.read(path: repaired).damaged.isEmpty)

        let merged = work.path("merged.h5")
        let merge = try runCLI(["merge", merged, path])
        #expect(merge.status == 0 && merge.stderr.contains("run \(bad) is damaged, skipped"), "\(merge.stderr)")
        #expect(try ResultsReader.read(path: merged).runs.count == 3)

        let resume = try runCLI(["sweep", exp, "-o", path, "--resume"])
        #expect(resume.status == 0 && resume.stderr.contains("run group \(bad) was unreadable"), "\(resume.stderr)")
        let after = try ResultsReader.read(path: path)
        #expect(after.runs.count == 4 && after.damaged.isEmpty, "\(after.damaged)")
    }
}
