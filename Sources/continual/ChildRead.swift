import ContinualHDF5
import Foundation

/// One attempt of `UntrustedRead`: `continual __read-check FILE` in a child process, watched for
/// silence (`UntrustedRead.timeLimit`), total time and signals, under the memory limit.
enum ChildRead {
    enum Outcome {
        /// Read to the end; `failed`: the skippable groups libhdf5 failed in (to quarantine).
        case read(failed: Set<String>)
        /// Crashed or hung (`verb`: "crashed" or "timed out"; `detail`: e.g. "signal 11,
        /// Segmentation fault") while reading `group` (the last one the child entered; "/" outside
        /// any skippable group; nil when the whole read took too long).
        case fault(verb: String, detail: String, group: String?)
        /// Exit 3 (cannot open) or 4 (libhdf5 failed outside a skippable group), with the message.
        case refused(message: String, exitCode: Int32)
    }

    /// When the child last reported progress.
    final class Activity: @unchecked Sendable {
        private let lock = NSLock()
        private var last = Date()
        func touch() { lock.lock(); last = Date(); lock.unlock() }
        func silence() -> Double { lock.lock(); defer { lock.unlock() }; return Date().timeIntervalSince(last) }
    }

    static func run(_ path: String, skipping: [String], memory: Int) throws -> Outcome {
        let limit = UntrustedRead.timeLimit(), total = UntrustedRead.totalTimeLimit()
        let started = Date()
        let child = Process()
        child.executableURL = URL(fileURLWithPath: UntrustedRead.executablePath())
        child.arguments = ["__read-check", path]
        var environment = ProcessInfo.processInfo.environment
        environment[UntrustedRead.childVariable] = "1"
        environment[UntrustedRead.memoryVariable] = String(memory)
        environment[ReadCheckCommand.skipVariable] = skipping.joined(separator: "\n")
        environment["SWIFT_BACKTRACE"] = "enable=no"  // a crash is expected and reported by the caller
        child.environment = environment
        // The child writes a byte after each object it reads: the limit is on silence, so a big
        // file on a slow machine is not mistaken for a hang inside libhdf5.
        let progress = Pipe()
        child.standardOutput = progress
        // Report lines go to a `ReportFile`.
        guard let reportFile = ReportFile("read-check"), let report = FileHandle(forWritingAtPath: reportFile.path) else {
            return .read(failed: [])  // cannot isolate: read in-process as before
        }
        defer { reportFile.remove() }
        child.standardError = report
        let activity = Activity()
        progress.fileHandleForReading.readabilityHandler = { handle in
            if !handle.availableData.isEmpty { activity.touch() }
        }
        defer { progress.fileHandleForReading.readabilityHandler = nil }
        let done = DispatchSemaphore(value: 0)
        child.terminationHandler = { _ in done.signal() }
        do { try child.run() } catch {
            try? report.close()
            return .read(failed: [])  // cannot isolate (e.g. no permission to execute): read in-process as before
        }
        try? report.close()
        var hung: String?, long = false
        while done.wait(timeout: .now() + 0.05) == .timedOut {
            let silent = activity.silence() > limit
            long = Date().timeIntervalSince(started) > total
            if silent || long {
                kill(child.processIdentifier, SIGKILL)
                done.wait()
                hung = silent ? "no progress for \(Int(limit)) s; a damaged file can make libhdf5 loop forever"
                    : "not read to the end in \(Int(total)) s, CONTINUALKIT_READ_TOTAL_TIMEOUT"
                break
            }
        }
        let lines = reportFile.lines
        let entered = lines.last { $0.hasPrefix("enter ") }.map { String($0.dropFirst(6)) }
        if let hung { return .fault(verb: "timed out", detail: hung, group: long ? nil : entered) }
        if child.terminationReason == .uncaughtSignal {
            let signal = child.terminationStatus
            return .fault(verb: "crashed", detail: "signal \(signal), \(String(cString: strsignal(signal)))", group: entered)
        }
        let code = child.terminationStatus
        if child.terminationReason == .exit, code == 3 || code == 4 {
            let message = lines.filter { !$0.hasPrefix("enter ") && !$0.hasPrefix("quarantine ") }.joined(separator: " ")
            return .refused(message: message.trimmingCharacters(in: .whitespaces), exitCode: code)
        }
        return .read(failed: Set(lines.filter { $0.hasPrefix("quarantine ") }.map { String($0.dropFirst(11)) }))
    }
}
