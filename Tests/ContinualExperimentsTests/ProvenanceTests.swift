import Foundation
import Testing
import ContinualHDF5
@testable import ContinualExperiments

/// Every results file records the toolkit version and the git commit it came from.
@Suite(.serialized) struct ProvenanceTests {
    /// Runs git in `directory` (the tests need a throwaway repository of their own).
    @discardableResult
    func git(_ arguments: [String], in directory: String) throws -> String {
        let out = Provenance.git(["-C", directory, "-c", "user.name=t", "-c", "user.email=t@example.invalid"] + arguments)
        guard let out else { throw NSError(domain: "git", code: 1, userInfo: [NSLocalizedDescriptionKey: "git \(arguments) failed"]) }
        return out
    }

    func rootAttributes(of path: String) throws -> (commit: String?, dirty: Int64?, source: String?, version: String?) {
        let f = try HDF5File.open(path: path)
        defer { try? f.close() }
        let a = f.root.attributes
        return (try a.string("git_commit"), try a.scalar("git_dirty", as: Int64.self),
                try a.string("git_commit_source"), try a.string("toolkit_version"))
    }

    func runInto(_ output: String, experimentAt experimentPath: String) throws {
        let file = try ExperimentFile.load(path: experimentPath)
        try ResultsWriter.writeExperiment(Array(file.runs.prefix(1)).map(RunExecutor.execute), experiment: file, to: output)
    }

    @Test func resultsRecordTheCommitOfTheExperimentsRepository() throws {
        guard Provenance.git(["--version"]) != nil else { return }   // no git on this machine: nothing to record
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let experiment = dir.write("exp.json", tinyExperiment())
        try git(["init", "-q"], in: dir.url.path)
        try git(["add", "exp.json"], in: dir.url.path)
        try git(["commit", "-q", "-m", "experiment"], in: dir.url.path)
        let head = try git(["rev-parse", "HEAD"], in: dir.url.path)
        #expect(head.count == 40)

        let clean = dir.path("clean.h5")
        try runInto(clean, experimentAt: experiment)
        let a = try rootAttributes(of: clean)
        #expect(a.commit == head)
        #expect(a.dirty == 0)
        #expect(a.source == "git")
        #expect(a.version == ResultsSchema.toolkitVersion)

        // A tracked file changed after the commit: the file says so.
        _ = dir.write("exp.json", tinyExperiment(name: "changed"))
        let dirty = dir.path("dirty.h5")
        try runInto(dirty, experimentAt: experiment)
        #expect(try rootAttributes(of: dirty).dirty == 1)
        #expect(try rootAttributes(of: dirty).commit == head)
    }

    /// Issue 41.8: the CLI is stamped at build time with the commit of the checkout it was built
    /// from (`Plugins/BuildStamp`), recorded in every results file and by `--version`, whatever
    /// folder the experiment is in (here one outside any repository).
    @Test func theCLIRecordsTheCommitItWasBuiltFrom() throws {
        let root = packageRoot.path
        guard FileManager.default.fileExists(atPath: root + "/.git"), let head = Provenance.git(["-C", root, "rev-parse", "HEAD"]) else {
            print("skipped: the package is not a git checkout (its binary is stamped with no commit)")
            return
        }
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let json = work.write("outside.json", tinyExperiment(name: "outside"))
        let r = try runCLI(["run", json, "-o", work.path("o.h5"), "--quiet"])
        try #require(r.status == 0, "\(r.stderr)")
        let f = try HDF5File.open(path: work.path("o.h5"))
        defer { try? f.close() }
        let commit = try f.root.attributes.string("toolkit_build_commit")
        let dirty = try f.root.attributes.scalar("toolkit_build_dirty", as: Int64.self)
        // The binary may be a build of an earlier state of this checkout: a commit of its history.
        let known = Provenance.git(["-C", root, "cat-file", "-t", commit ?? "none"])
        #expect(commit?.count == 40 && known == "commit", "\(commit ?? "nil") is not a commit of \(root)")
        #expect(dirty == 0 || dirty == 1)
        #expect(commit == head || Provenance.git(["-C", root, "merge-base", "--is-ancestor", commit ?? "", head]) != nil)
        let version = try runCLI(["--version"])
        #expect(version.stdout.contains("built from \(commit?.prefix(12) ?? "?")"), "\(version.stdout)")
    }

    @Test func environmentVariableWinsAndOutsideARepositoryNothingIsInvented() throws {
        let given = Provenance.detect(experimentPath: "/nonexistent/exp.json",
                                      environment: ["CONTINUALKIT_GIT_COMMIT": " 0123abcd\n"])
        #expect(given == Provenance(commit: "0123abcd", dirty: -1, source: "CONTINUALKIT_GIT_COMMIT"))

        let dir = TemporaryDirectory()   // under the system's temporary folder: not in a repository
        defer { dir.cleanup() }
        let none = Provenance.detect(experimentPath: dir.path("exp.json"), environment: [:])
        #expect(none == Provenance(commit: "", dirty: -1, source: "unavailable"))
    }

    @Test func theCLIWritesTheCommitOfThisCheckout() throws {
        guard let checkout = Provenance.git(["-C", packageRoot.path, "rev-parse", "HEAD"]) else { return }  // not a git checkout
        let given = ProcessInfo.processInfo.environment[Provenance.environmentKey] ?? ""
        let head = given.isEmpty ? checkout : given.trimmingCharacters(in: .whitespacesAndNewlines)
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let experiment = packageRoot.appendingPathComponent("Experiments/quickstart.json").path
        let out = dir.path("q.h5")
        let r = try runCLI(["run", experiment, "-o", out, "-q", "--variant", "naive"])
        #expect(r.status == 0, "\(r.stderr)")
        let a = try rootAttributes(of: out)
        #expect(a.commit == head)
        #expect(a.source == "git" || a.source == "CONTINUALKIT_GIT_COMMIT")
        let inspect = try runCLI(["inspect", out, "--brief"])
        #expect(inspect.stdout.contains("git commit \(head)"))
    }
}

/// Issue 41.4: a hostile `.git/config` in the experiment's folder runs nothing.
@Suite(.serialized) struct HostileRepositoryTests {
    @Test("core.fsmonitor and a clean filter in the experiment's repository are never run; HEAD is still recorded")
    func hostileConfigRunsNothing() throws {
        guard Provenance.git(["--version"]) != nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let root = dir.url.path
        let experiment = dir.write("exp.json", tinyExperiment())
        func git(_ args: [String]) -> String? {
            Provenance.git(["-C", root, "-c", "user.name=t", "-c", "user.email=t@example.invalid"] + args)
        }
        _ = git(["init", "-q"])
        _ = git(["add", "exp.json"])
        _ = git(["commit", "-q", "-m", "x"])
        let head = try #require(git(["rev-parse", "HEAD"]))
        let marker = dir.path("PWNED")
        let script = dir.write("evil.sh", "#!/bin/sh\ntouch '\(marker)'\n")
        chmod(script, 0o755)
        let config = root + "/.git/config"
        var text = try String(contentsOfFile: config, encoding: .utf8)
        text += "[core]\n\tfsmonitor = \(script)\n[filter \"x\"]\n\tclean = \(script)\n"
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        _ = dir.write(".gitattributes", "*.json filter=x\n")
        // The same repository through a plain `git status` would run the script (checked, so the
        // test cannot pass vacuously), then the marker is removed before the toolkit looks.
        _ = Provenance.git(["-C", root, "status", "--porcelain=v2"])
        #expect(FileManager.default.fileExists(atPath: marker), "git itself should run core.fsmonitor here")
        try? FileManager.default.removeItem(atPath: marker)

        let p = Provenance.fromGit(experimentPath: experiment)
        #expect(!FileManager.default.fileExists(atPath: marker))
        #expect(p == Provenance(commit: head, dirty: -1, source: "git-files"))
        let out = dir.path("r.h5")
        let file = try ExperimentFile.load(path: experiment)
        try ResultsWriter.writeExperiment(Array(file.runs.prefix(1)).map(RunExecutor.execute), experiment: file, to: out)
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test("HEAD from the files: loose ref, packed ref, detached")
    func headFromFiles() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let git = dir.url.path + "/.git"
        try FileManager.default.createDirectory(atPath: git + "/refs/heads", withIntermediateDirectories: true)
        let a = String(repeating: "a", count: 40), b = String(repeating: "b", count: 40)
        _ = dir.write(".git/HEAD", "ref: refs/heads/main\n")
        _ = dir.write(".git/packed-refs", "# pack-refs\n\(b) refs/heads/main\n")
        let found = try #require(GitFiles.locate(from: dir.url.path + "/sub/dir"))
        #expect(GitFiles.head(gitDir: found.gitDir, commonDir: found.commonDir) == b)
        _ = dir.write(".git/refs/heads/main", a + "\n")
        #expect(GitFiles.head(gitDir: found.gitDir, commonDir: found.commonDir) == a)
        _ = dir.write(".git/HEAD", b + "\n")
        #expect(GitFiles.head(gitDir: found.gitDir, commonDir: found.commonDir) == b)
        _ = dir.write(".git/HEAD", "ref: refs/../../etc/passwd\n")
        #expect(GitFiles.head(gitDir: found.gitDir, commonDir: found.commonDir) == nil)
    }
}
