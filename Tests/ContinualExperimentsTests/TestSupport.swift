@testable import ContinualExperiments
import ContinualHDF5
import Foundation

/// A fresh temporary directory, removed by `cleanup()`.
struct TemporaryDirectory {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("ck-test-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func write(_ name: String, _ text: String) -> String {
        let p = path(name)
        try! text.write(toFile: p, atomically: true, encoding: .utf8)
        return p
    }
    func cleanup() { try? FileManager.default.removeItem(at: url) }
}

/// The package root (three levels above this file).
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The built `continual` executable (debug, else release), found under the package root.
func continualBinary() throws -> String {
    let candidates = [".build/debug/continual", ".build/release/continual"].map { packageRoot.appendingPathComponent($0).path }
    guard let binary = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw NSError(domain: "test", code: 1, userInfo: [NSLocalizedDescriptionKey: "continual binary not built"])
    }
    return binary
}

/// Runs the built `continual` executable to its end (in `directory`, default the package root),
/// with `environment` added to this process's: its status (128 + signal when killed), stdout and
/// stderr.
func runCLI(_ arguments: [String], in directory: URL? = nil,
            environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
    let ended = try SpawnedChild(continualBinary(), arguments, in: directory ?? packageRoot, environment: environment).finish()
    return (ended.status, ended.stdout, ended.stderr)
}

/// A child process of a test, spawned like the toolkit's own children (`ChildProcessOutput.spawn`):
/// it inherits none of our descriptors. libhdf5 opens files without O_CLOEXEC and its `flock`
/// belongs to the open file description, so a child that inherits a results file another test has
/// open keeps it locked until it exits ("unable to lock file", errno 11). Foundation's `Process`
/// closes only the descriptors open when it lists them, so one another thread opened just then
/// leaked. Standard input is /dev/null. The child is waited for on a thread of its own, so a test
/// can poll it, bound its time, or signal `pid` while it runs.
final class SpawnedChild: @unchecked Sendable {
    /// Where standard output or error goes: /dev/null; a pipe, read through `stdout` (standard
    /// output only); or a temporary file, read after the exit (it cannot fill up and block the child).
    enum Sink { case discard, pipe, file }

    /// How the child ended and what it wrote.
    struct Ended {
        /// The exit status, or 128 + the signal that killed it.
        var status: Int32
        /// The signal that killed it; nil when it exited.
        var signal: Int32?
        var stdout: String
        var stderr: String
    }

    let pid: pid_t
    /// The read end of its standard output (`stdout: .pipe` only).
    let stdout: FileHandle?
    private let files: [String?]
    private let exited = DispatchGroup()
    private var ending: (status: Int32, signal: Int32?) = (0, nil)

    /// Starts `program` (searched on PATH), in `directory` (default: ours), with `environment`
    /// added to this process's.
    init(_ program: String, _ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:],
         stdout: Sink = .pipe, stderr: Sink = .file) throws {
        precondition(stderr != .pipe, "standard error goes to a file or /dev/null")
        var pipeEnds: [Int32] = [-1, -1]
        if stdout == .pipe, pipe(&pipeEnds) != 0 { throw NSError(domain: "test", code: 2, userInfo: [NSLocalizedDescriptionKey: "pipe failed"]) }
        let out: (fd: Int32, path: String?) = stdout == .pipe ? (pipeEnds[1], nil) : Self.openSink(stdout), err = Self.openSink(stderr)
        let env = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let pid = ChildProcessOutput.spawn(program, arguments, environment: env, output: out.fd, error: err.fd,
                                           directory: directory?.path, alsoClosing: pipeEnds[0] >= 0 ? [pipeEnds[0]] : [])
        close(out.fd)
        close(err.fd)
        files = [out.path, err.path]
        guard let pid else {
            if pipeEnds[0] >= 0 { close(pipeEnds[0]) }
            for case let path? in files { unlink(path) }
            throw NSError(domain: "test", code: 3, userInfo: [NSLocalizedDescriptionKey: "cannot start \(program)"])
        }
        self.pid = pid
        self.stdout = pipeEnds[0] >= 0 ? FileHandle(fileDescriptor: pipeEnds[0], closeOnDealloc: true) : nil
        exited.enter()
        Thread { [self] in
            ending = ChildProcessOutput.termination(pid)
            exited.leave()
        }.start()
    }

    deinit { for case let path? in files { unlink(path) } }

    /// /dev/null, or a new temporary file and its path.
    private static func openSink(_ sink: Sink) -> (fd: Int32, path: String?) {
        guard sink == .file else { return (open("/dev/null", O_WRONLY | O_CLOEXEC), nil) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ck-child-\(UUID().uuidString)").path
        return (open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600), path)
    }

    var isRunning: Bool { exited.wait(timeout: .now()) == .timedOut }

    /// Waits up to `seconds` for the child to end; false when it is still running.
    func waitForExit(seconds: Double) -> Bool { exited.wait(timeout: .now() + seconds) == .success }

    /// Reads the piped standard output until it contains `marker` (or ends); what was read.
    @discardableResult
    func readOutput(until marker: String) -> String {
        var seen = ""
        while !seen.contains(marker), let chunk = stdout?.readSomeRetryingInterrupts(), !chunk.isEmpty {
            seen += String(decoding: chunk, as: UTF8.self)
        }
        return seen
    }

    /// Reads a piped standard output (the rest of it) to its end, waits for the exit, then reads the files.
    func finish() -> Ended {
        let piped = stdout?.readAllRetryingInterrupts()
        exited.wait()
        let written = files.map { path in path.flatMap { FileManager.default.contents(atPath: $0) } ?? Data() }
        return Ended(status: ending.signal.map { 128 + $0 } ?? ending.status, signal: ending.signal,
                     stdout: String(decoding: piped ?? written[0], as: UTF8.self), stderr: String(decoding: written[1], as: UTF8.self))
    }
}

/// A small but complete experiment for tests.
func tinyExperiment(name: String = "tiny", extra: String = "") -> String {
    """
    {
      "name": "\(name)",
      "seed": 3,
      "scenario": {"type": "habit_drift", "train_per_experience": 200, "test_per_experience": 60,
                   "phases": ["morning", "night", "morning"]},
      "model": {"hidden": [8]},
      "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
      "training": {"epochs": 3, "batch_size": 16},
      \(extra)
      "variants": [{"name": "naive", "strategy": "naive"}, {"name": "joint", "strategy": ["joint"]}]
    }
    """
}

/// Opens `path`, retrying for up to 10 s while another process holds its lock. Tests run in
/// parallel and a few in other test targets (which cannot use `SpawnedChild`) still start children
/// with Foundation's `Process`, which may let a child inherit a descriptor opened (and not yet
/// marked close-on-exec) at that instant on another thread; the
/// child then holds the file's lock until it exits (errno 11, "unable to lock file"). A test that
/// reopens a file it just wrote waits that out instead of failing on another test's timing.
func openWaitingForLock(_ path: String) throws -> HDF5File {
    let deadline = Date().addingTimeInterval(10)
    while true {
        do { return try HDF5File.open(path: path) } catch {
            guard "\(error)".contains("unable to lock file"), Date() < deadline else { throw error }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }
}
