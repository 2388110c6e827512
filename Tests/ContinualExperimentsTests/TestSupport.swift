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

/// Runs the built `continual` executable (found next to the test bundle's build products), with
/// `environment` added to this process's. Spawned like the toolkit's own children
/// (`ChildProcessOutput.spawn`): the child inherits none of our descriptors, so a results file
/// another test has open at that moment is not kept locked by it while it runs.
func runCLI(_ arguments: [String], in directory: URL? = nil,
            environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
    let candidates = [".build/debug/continual", ".build/release/continual"].map { packageRoot.appendingPathComponent($0).path }
    guard let binary = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw NSError(domain: "test", code: 1, userInfo: [NSLocalizedDescriptionKey: "continual binary not built"])
    }
    var pipeEnds: [Int32] = [0, 0]
    guard pipe(&pipeEnds) == 0 else { throw NSError(domain: "test", code: 2, userInfo: [NSLocalizedDescriptionKey: "pipe failed"]) }
    // Standard error to a file: read after the exit, so neither stream can fill and block the child.
    let errPath = FileManager.default.temporaryDirectory.appendingPathComponent("ck-stderr-\(UUID().uuidString)").path
    let errFD = open(errPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    defer { unlink(errPath) }
    let env = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    let pid = ChildProcessOutput.spawn(binary, arguments, environment: env, output: pipeEnds[1], error: errFD,
                                       directory: (directory ?? packageRoot).path, alsoClosing: [pipeEnds[0]])
    close(pipeEnds[1])
    guard let pid else {
        close(pipeEnds[0])
        close(errFD)
        throw NSError(domain: "test", code: 3, userInfo: [NSLocalizedDescriptionKey: "cannot start \(binary)"])
    }
    let o = FileHandle(fileDescriptor: pipeEnds[0], closeOnDealloc: true).readAllRetryingInterrupts()
    let status = ChildProcessOutput.wait(pid)
    close(errFD)
    let e = FileManager.default.contents(atPath: errPath) ?? Data()
    return (status, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
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
/// parallel and some start children with Foundation's `Process`, which may let a child inherit a
/// descriptor opened (and not yet marked close-on-exec) at that instant on another thread; the
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
