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
