import ContinualExperiments
import ContinualHDF5
import Foundation

/// Runs the commands that salvage damaged results files (`inspect`, `merge`, `repair`, `export`,
/// and `run` or `sweep` with `--resume` or `--resume-or-start`) in a child copy of this process,
/// so that a libhdf5 crash costs one run group, not the command.
///
/// The read-check child (`UntrustedRead`) quarantines the run groups libhdf5 fails in while it
/// reads a file through. It cannot foresee everything: libhdf5's behaviour on a damaged file
/// depends on what it read before, so a byte-flip campaign still found files the child read to the
/// end and the command's own reads (a digest, an `H5Ocopy`) crashed. Here the command itself runs
/// as the child: it reports each run group (or `/summary`) of an untrusted file as it opens it
/// (`HDF5Quarantine.openObserver`); when it dies of a signal, the group it was in is quarantined
/// and the command runs again without it — up to `maxRetries` times. Output of a crashed attempt
/// has already been printed (the child shares this process's terminal); a note says it runs again.
/// SIGINT, SIGTERM and SIGHUP sent to this process are passed on to the child, which stops as it
/// would alone (a sweep keeps its finished runs) and whose exit status this process returns.
enum Supervisor {
    static let innerVariable = "CONTINUALKIT_SUPERVISED"
    static let quarantineVariable = "CONTINUALKIT_QUARANTINE"
    static let reportVariable = "CONTINUALKIT_SUPERVISOR_REPORT"
    /// The child's address-space limit in bytes (`commandMemoryLimit`), set in the child.
    static let memoryVariable = "CONTINUALKIT_SUPERVISED_MEMORY"
    static let supervised: Set<String> = ["inspect", "merge", "repair", "export"]
    /// Supervised only when they open an existing results file (`SweepWriter.rebuild`).
    static let supervisedWhenResuming: Set<String> = ["run", "sweep"]
    static let maxRetries = 16
    /// The running child, for the signal handlers (0: none).
    nonisolated(unsafe) private static var childPid: pid_t = 0

    /// In the child: reports opened groups and applies the parent's quarantine. In the parent of a
    /// supervised command: runs it as a child until it does not crash, then exits with its status.
    /// Otherwise returns at once.
    static func start(_ arguments: [String]) {
        let environment = ProcessInfo.processInfo.environment
        if environment[innerVariable] != nil {
            // The command's read-check child keeps the quarantine but reports nothing: its reads
            // are not the command's (its lines, written over the command's, once blamed a crash
            // on the wrong group).
            let report = environment[UntrustedRead.childVariable] == nil ? environment[reportVariable] : nil
            if report != nil { AddressSpaceLimit.impose(environment[memoryVariable]) }
            installInner(report: report, quarantine: environment[quarantineVariable] ?? "")
            return
        }
        guard arguments.count > 1, isSupervised(arguments), environment[UntrustedRead.childVariable] == nil,
              let status = supervise(arguments) else { return }
        Foundation.exit(status)
    }

    /// Whether the command `arguments` (the program name first) runs under supervision.
    static func isSupervised(_ arguments: [String]) -> Bool {
        supervised.contains(arguments[1])
            || supervisedWhenResuming.contains(arguments[1]) && arguments.contains { $0 == "--resume" || $0 == "--resume-or-start" }
    }

    /// Passes SIGINT, SIGTERM and SIGHUP on to the child (a Ctrl-C reaches both: the child's
    /// handler takes a second one as the first). Exec resets the handlers in the child.
    private static func forwardSignals() {
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig) { s in
                if Supervisor.childPid > 0 { kill(Supervisor.childPid, s) }
            }
        }
    }

    /// The address-space limit (RLIMIT_AS) of a salvaging command (`supervised`; not `run` or
    /// `sweep`, whose training memory `validate` estimates): 2 GiB + 8 × the size of the files
    /// named on its command line, or `CONTINUALKIT_COMMAND_MEMORY` (`8G`, `512M`, bytes). libhdf5
    /// allocates what a damaged length field says when it converts a variable-length string (a
    /// byte-flip campaign saw `export` reach 4 GB resident on a 210 kB file, reading an attribute
    /// the read-check child had read without harm); under the limit the allocation fails and the
    /// run is reported damaged. Honest commands stay far below it: they read a file group by group.
    static func commandMemoryLimit(_ arguments: [String]) -> Int? {
        guard supervised.contains(arguments[1]) else { return nil }
        let files = arguments.dropFirst(2).reduce(0) { $0 + SweepWriter.size($1) }
        return AddressSpaceLimit.forFiles(files, base: 2 << 30, override: "CONTINUALKIT_COMMAND_MEMORY")
    }

    static func installInner(report: String?, quarantine: String) {
        for line in quarantine.split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
            guard parts.count == 2, let key = HDF5Quarantine.fileKey(parts[0]) else { continue }
            HDF5Quarantine.add([parts[1]], forFileKey: key)
        }
        guard let report else { return }
        let fd = open(report, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { return }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        let last = LastGroup()
        HDF5Quarantine.openObserver = { file, object in
            // "/" for any other object, so a crash after leaving a run group is not blamed on it.
            let group = ReadCheckCommand.skippableGroup(of: object) ?? "/"
            guard last.changed(to: file + "\t" + group) else { return }
            handle.write(Data("enter\t\(file)\t\(group)\n".utf8))
        }
    }

    /// The last (file, group) reported, so each is written once per visit.
    final class LastGroup: @unchecked Sendable {
        private let lock = NSLock()
        private var value = ""
        func changed(to new: String) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            guard new != value else { return false }
            value = new
            return true
        }
    }

    /// Runs the command as a child until it ends without a signal; its exit status (nil: no
    /// child could be started, and the command runs in this process, unsupervised, as before).
    static func supervise(_ arguments: [String]) -> Int32? {
        var quarantined: [String] = []
        forwardSignals()
        for _ in 0...maxRetries {
            guard let report = ReportFile("supervisor") else { return nil }
            defer { report.remove() }
            let child = Process()
            child.executableURL = URL(fileURLWithPath: UntrustedRead.executablePath())
            child.arguments = Array(arguments.dropFirst())
            var environment = ProcessInfo.processInfo.environment
            environment[innerVariable] = "1"
            environment[reportVariable] = report.path
            environment[quarantineVariable] = quarantined.joined(separator: "\n")
            if let limit = commandMemoryLimit(arguments) { environment[memoryVariable] = String(limit) }
            environment["SWIFT_BACKTRACE"] = "enable=no"
            child.environment = environment
            do { try child.run() } catch { return nil }
            childPid = child.processIdentifier
            child.waitUntilExit()
            childPid = 0
            guard child.terminationReason == .uncaughtSignal else { return child.terminationStatus }
            // Only a fault is libhdf5's doing; a closed pipe (`| head`), an interrupt or a kill
            // ends the command as it would have ended it unsupervised. SIGILL and SIGTRAP are a
            // Swift trap (an index out of range, a failed precondition): a bug of the toolkit,
            // which quarantining a group would pass off as damage in the file.
            if [SIGILL, SIGTRAP].contains(child.terminationStatus) {
                FileHandle.standardError.write(Data(("error: the command stopped on a runtime check (signal \(child.terminationStatus), "
                    + "\(String(cString: strsignal(child.terminationStatus)))): a bug in ContinualKit, not damage in the file; "
                    + "please report it with the command and the file\n").utf8))
                return 128 + child.terminationStatus
            }
            guard [SIGSEGV, SIGBUS, SIGABRT, SIGFPE].contains(child.terminationStatus) else {
                return 128 + child.terminationStatus
            }
            // A crashed attempt's durable writes (`NAME.tmp-PID`) are its own: removed here.
            for argument in arguments.dropFirst() { unlink(argument + ".tmp-\(child.processIdentifier)") }
            let lines = report.lines
            let signal = child.terminationStatus
            guard let last = lines.last?.split(separator: "\t", maxSplits: 2), last.count == 3, last[2] != "/",
                  !quarantined.contains(last[1] + "\t" + last[2]) else {
                FileHandle.standardError.write(Data(("error: the HDF5 library crashed (signal \(signal), \(String(cString: strsignal(signal)))) "
                    + "while the command read a damaged file, outside any run group it can skip; nothing was written\n").utf8))
                return 2
            }
            quarantined.append(last[1] + "\t" + last[2])
            FileHandle.standardError.write(Data(("note: the HDF5 library crashed (signal \(signal)) after the command opened '\(last[2].dropFirst())' "
                + "of \(last[1]); running again with that group left out as damaged\n").utf8))
        }
        FileHandle.standardError.write(Data("error: more than \(maxRetries) run groups crashed the HDF5 library; the file is too damaged to salvage\n".utf8))
        return 2
    }
}
