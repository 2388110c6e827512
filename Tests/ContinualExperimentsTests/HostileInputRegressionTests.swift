import ContinualCore
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// The reproducers of issue 26 as regression tests: hangs on NaN, libhdf5 crashes and hangs on
/// damaged files (through the isolated reader), validate = runnable, and messages.
@Suite("Issue 26 reproducers", .serialized)
struct HostileInputRegressionTests {
    /// Runs the CLI with a wall-clock limit; a hang fails the test instead of blocking the suite.
    static func runLimited(_ arguments: [String], limit: Double, environment: [String: String] = [:]) throws
        -> (status: Int32, signaled: Bool, seconds: Double, stdout: String, stderr: String)
    {
        let start = Date()
        // Both streams to files: a killed command's own children cannot hold them open for us.
        let child = try SpawnedChild(continualBinary(), arguments, in: packageRoot, environment: environment, stdout: .file)
        if !child.waitForExit(seconds: limit) { kill(child.pid, SIGKILL) }
        let ended = child.finish()
        return (ended.status, ended.signal != nil, Date().timeIntervalSince(start), ended.stdout, ended.stderr)
    }

    @Test("a sweep with optimizer.lr = 2^64 ends with a divergence error naming the run, never a hang")
    func hugeLearningRateDiverges() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let json = work.write("lr.json", tinyExperiment(name: "lr", extra: #""sweep": {"parameters": {"optimizer.lr": [18446744073709551616]}},"#))
        let r = try Self.runLimited(["sweep", json, "-o", work.path("lr.h5"), "--plain"], limit: 120)
        #expect(!r.signaled && r.status == 1, "\(r.status) after \(r.seconds) s: \(r.stderr)")
        #expect(r.stderr.contains("diverged"), "\(r.stderr)")
        #expect(r.stderr.contains("naive") || r.stderr.contains("joint"), "the run is named: \(r.stderr)")
        #expect(try ResultsReader.read(path: work.path("lr.h5")).runs.allSatisfy { $0.status == "diverged" })
    }

    /// The fuzzer's libhdf5 findings (Fuzz/findings): each is now a clear error from a child
    /// process, or a run group reported damaged and left out — never a signal or a hang in the
    /// command itself.
    @Test("damaged files that crash or hang libhdf5 are reported as damaged by inspect, merge, repair and export",
          arguments: ["results-libhdf5-H5HG_read-memcpy.h5", "results-libhdf5-H5D_contig_read-null-memcpy.h5",
                      "results-libhdf5-H5T_conv_struct_opt.h5", "hdf5_scenario-libhdf5-H5HG-hang.h5",
                      "results-libhdf5-root-attribute-error.h5"])
    func fuzzFindingsThroughTheIsolatedReader(_ name: String) throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let finding = packageRoot.appendingPathComponent("Fuzz/findings/\(name)").path
        let copy = work.path(name)
        try FileManager.default.copyItem(atPath: finding, toPath: copy)
        let env = ["CONTINUALKIT_READ_TIMEOUT": "3"]
        for args in [["inspect", copy], ["inspect", copy, "--verify"], ["merge", work.path("m.h5"), copy],
                     ["repair", copy, "-o", work.path("r.h5")],
                     ["export", copy, "--format", "onnx", "-o", work.path("m.onnx")]] {
            let r = try Self.runLimited(args, limit: 60, environment: env)
            // Refused, or (a fault inside one run group, which is quarantined: issue 41.1) the
            // run group is reported as damaged and left out.
            let said = r.stderr.contains("damaged") || r.stderr.contains("unreadable")
            #expect(!r.signaled && (r.status != 0 || said) && r.status < 128, "\(args[0]): \(r.status) \(r.stderr)")
            #expect(r.seconds < 30, "\(args[0]) took \(r.seconds) s")
            #expect(!r.stderr.contains("HDF5-DIAG") && !r.stderr.contains("#000"), "raw libhdf5 stack: \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: work.path("m.onnx")))
            let leftovers = (try FileManager.default.contentsOfDirectory(atPath: work.path(""))).filter { $0.contains(".tmp-") }
            #expect(leftovers.isEmpty, "\(leftovers)")
        }
        // The hang and the crashes say so.
        let r = try Self.runLimited(["inspect", copy], limit: 60, environment: env)
        print("\(name): inspect → \(r.status) in \(String(format: "%.2f", r.seconds)) s: \(r.stderr.prefix(300))")
    }

    /// Found by the 30-minute fuzzing runs (issue 26): the child read-check stopped at an HDF5
    /// error (exit 3/4) and the command then read the file itself, where libhdf5 crashed
    /// (H5HG_read) or looped. A child that cannot open the file or list its root now ends the
    /// command, and so does one that read past a libhdf5 failure outside a run group and
    /// `/summary` (the `object-error` files: the child read them to the end, the command crashed).
    @Test("scenario files on which the read-check child stops are refused by validate and run, never read in-process",
          arguments: ["hdf5_scenario-libhdf5-child-stops-crash.h5", "hdf5_scenario-libhdf5-child-stops-hang.h5"]
                     + (1...6).map { "hdf5_scenario-libhdf5-object-error-\($0).h5" })
    func scenarioFilesTheChildCannotRead(_ name: String) throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        try FileManager.default.copyItem(atPath: packageRoot.appendingPathComponent("Fuzz/findings/\(name)").path,
                                         toPath: work.path("x.h5"))
        let json = work.write("e.json", #"{"name": "fz", "scenario": {"type": "dataset", "path": "x.h5"}, "model": {"hidden": [4]}, "strategy": ["naive"]}"#)
        for args in [["validate", json], ["run", json, "-o", work.path("o.h5")]] {
            let r = try Self.runLimited(args, limit: 60, environment: ["CONTINUALKIT_READ_TIMEOUT": "3"])
            #expect(!r.signaled && r.status == 2, "\(args[0]): \(r.status) \(r.stderr)")
            #expect(r.stderr.contains("the file is damaged"), "\(r.stderr)")
            #expect(r.seconds < 30, "\(args[0]) took \(r.seconds) s")
        }
    }

    @Test("the isolated reader turns a child that hangs into 'timed out' and one that crashes into 'crashed'")
    func isolatedReaderMessages() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let hang = work.path("hang.h5")
        try FileManager.default.copyItem(atPath: packageRoot.appendingPathComponent("Fuzz/findings/hdf5_scenario-libhdf5-H5HG-hang.h5").path,
                                         toPath: hang)
        let r = try Self.runLimited(["inspect", hang], limit: 60, environment: ["CONTINUALKIT_READ_TIMEOUT": "2"])
        #expect(r.status == 2 && !r.signaled)
        if r.stderr.contains("the HDF5 library") {
            #expect(r.stderr.contains("the file is damaged: the HDF5 library timed out reading") || r.stderr.contains("crashed reading"), "\(r.stderr)")
            #expect(r.seconds < 15, "\(r.seconds)")
        }
    }

    @Test("validate refuses a prequential window of 10^12 as run does (it aborted run with a 1 TB allocation)")
    func prequentialWindowIsEstimated() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let json = work.write("w.json", """
        {"name": "w", "scenario": {"type": "habit_drift", "train_per_experience": 200, "test_per_experience": 60,
                                   "phases": ["morning", "night"]},
         "model": {"hidden": [8]}, "strategy": ["naive"],
         "training": {"mode": "prequential", "window": 1000000000000, "batch_size": 16}}
        """)
        let v = try Self.runLimited(["validate", json], limit: 60)
        #expect(v.status == 2, "\(v.stdout) \(v.stderr)")
        #expect((v.stdout + v.stderr).contains(".training.window"), "\(v.stdout) \(v.stderr)")
        let r = try Self.runLimited(["run", json, "-o", work.path("w.h5"), "-q"], limit: 60)
        #expect(r.status == 2 && !r.signaled, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains(".training.window"), "\(r.stderr)")
    }

    @Test("run honours --max-memory with the estimate validate prints")
    func runHonoursMaxMemory() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let json = work.write("m.json", tinyExperiment(name: "m"))
        let r = try Self.runLimited(["run", json, "-o", work.path("m.h5"), "--max-memory", "10k", "-q"], limit: 60)
        #expect(r.status == 2 && r.stderr.contains("--max-memory"), "\(r.status) \(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: work.path("m.h5")))
        let v = try Self.runLimited(["validate", json, "--max-memory", "10k"], limit: 60)
        #expect(v.status == 2)
    }

    @Test("a warm start from a run edited to NaN weights is refused as damaged; re-sealed, it is refused as non-finite")
    func nanWarmStart() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let source = try sweptResults(in: work, name: "src").path
        let victim = try ResultsReader.read(path: source).runs.first { $0.name == "naive" }!
        try RunDamage.nanParameters.apply(to: source, run: victim.runId)
        let warm = work.write("warm.json", """
        {"name": "warm", "scenario": {"type": "habit_drift", "train_per_experience": 200, "test_per_experience": 60,
                                      "phases": ["morning", "night", "morning"]},
         "model": {"hidden": [8], "init_from": {"results": "src.h5", "run": "\(victim.runId)"}},
         "optimizer": {"type": "sgd", "lr": 0.05}, "training": {"epochs": 1, "batch_size": 16}, "strategy": ["naive"]}
        """)
        let refused = try Self.runLimited(["validate", warm], limit: 60)
        #expect(refused.status == 2 && (refused.stdout + refused.stderr).contains("damaged"), "\(refused.stdout) \(refused.stderr)")
        // Re-sealed (a tool that recomputes the digest and the file's run manifest): the
        // non-finite parameters are still refused.
        do {
            let f = try HDF5File.open(path: source, mode: .readWrite)
            try RunDigest.seal(try f.root.openGroup("runs/\(victim.runId)"))
            try RunManifest.write(f.root)
            try f.close()
        }
        let r = try Self.runLimited(["run", warm, "-o", work.path("warm.h5"), "-q"], limit: 120)
        #expect(!r.signaled && r.status != 0, "\(r.status)")
        // Named at the fault: the parameters, not their layer sizes (which the damage keeps).
        let text = r.stdout + r.stderr
        #expect(text.contains("has non-finite final parameters") && !text.contains("layer sizes"), "\(text)")
    }

    @Test("export on a full disk fails cleanly and leaves no partial model")
    func exportOnFullDisk() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let json = work.write("e.json", tinyExperiment(name: "x"))
        let results = work.path("x.h5")
        #expect(try runCLI(["run", json, "-o", results, "-q"]).status == 0)
        try withSmallDisk(kilobytes: 512) { dir in
            try fillDisk(dir, leave: 2 << 10)
            let out = dir + "/m.onnx"
            let r = try runCLI(["export", results, "--run", "naive", "--format", "onnx", "-o", out])
            #expect(r.status == 2, "\(r.status) \(r.stderr)")
            #expect(r.stderr.contains("No space left on device"), "\(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out))
            #expect(temporaries(dir).isEmpty, "\(temporaries(dir))")
        }
    }

    @Test("merge and repair on a nearly full disk refuse before writing and leave no temporary file")
    func mergeAndRepairOnFullDisk() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let good = try sweptResults(in: work, name: "f").path
        try withSmallDisk(kilobytes: 1024) { dir in
            try FileManager.default.copyItem(atPath: good, toPath: dir + "/good.h5")
            try fillDisk(dir, leave: 8 << 10)
            for args in [["merge", dir + "/merged.h5", dir + "/good.h5"], ["repair", dir + "/good.h5", "-o", dir + "/rep.h5"]] {
                let r = try runCLI(args)
                #expect(r.status == 2 && r.stderr.contains("No space left on device"), "\(args[0]): \(r.status) \(r.stderr)")
                #expect(!r.stderr.contains("bytes actually written"), "raw libhdf5 text: \(r.stderr)")
            }
            #expect(temporaries(dir).isEmpty, "\(temporaries(dir))")
            #expect(!FileManager.default.fileExists(atPath: dir + "/merged.h5") && !FileManager.default.fileExists(atPath: dir + "/rep.h5"))
        }
    }
}

/// Messages at the cause: truncated files, link loops, external links.
@Suite("Issue 26 messages", .serialized)
struct DamagedFileMessageTests {
    @Test("a truncated results file is reported as truncated, not as in use by another process")
    func truncatedFile() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let path = try sweptResults(in: work, name: "t").path
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        #expect(truncate(path, off_t(size / 2)) == 0)
        for args in [["inspect", path], ["repair", path, "-o", work.path("r.h5")]] {
            let r = try runCLI(args)
            #expect(r.status == 2, "\(args[0]): \(r.status)")
            #expect(r.stderr.contains("truncated") && !r.stderr.contains("in use by another process"), "\(args[0]): \(r.stderr)")
        }
    }

    @Test("soft-link loops and external links are named as such")
    func linkLoopsAndExternalLinks() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let path = try sweptResults(in: work, name: "l").path
        guard try h5py("""
            f = h5py.File('\(path)', 'r+')
            f['runs']['loop'] = h5py.SoftLink('/runs/loop2')
            f['runs']['loop2'] = h5py.SoftLink('/runs/loop')
            f['runs']['ext'] = h5py.ExternalLink('elsewhere.h5', '/runs')
            f.close()
            """) else { return }
        let r = try runCLI(["inspect", path])
        #expect(r.stderr.contains("loop") && r.stderr.contains("soft-link loop"), "\(r.stderr)")
        #expect(r.stderr.contains("external link"), "\(r.stderr)")
        #expect(!r.stderr.contains("unknown HDF5 error"), "\(r.stderr)")
    }
}
