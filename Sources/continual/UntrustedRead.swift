import ArgumentParser
import ContinualExperiments
import ContinualHDF5
import Foundation

/// Reads HDF5 files this process did not write in a child process first, with a time limit.
///
/// libhdf5 (Debian's 1.10.8) crashes or loops forever on some damaged files (Fuzz/findings). Before
/// the CLI opens a file read-only (a results file to inspect, merge, repair or export, a scenario
/// import, a `model.init_from` file, a checkpoint), `HDF5File.untrustedReadCheck` re-executes this
/// binary as `continual __read-check FILE`, which opens the file and reads every attribute and
/// dataset (`RunDigest.readAll` of the root group), reporting progress after each object. The
/// library is deterministic, so a file the child read to the end is safe to read here, except
/// for objects inside a damaged run group or `/summary`, which the results readers skip; a crash
/// or a time-out becomes a clear error naming the file, and this process never receives the
/// signal. Each file is checked once per process (keyed by device, inode, size and modification
/// time).
enum UntrustedRead {
    /// Set in the child, so it does not check again.
    static let childVariable = "CONTINUALKIT_READ_CHECK_CHILD"

    private static let lock = NSLock()
    nonisolated(unsafe) private static var checked: Set<String> = []

    /// Installs the check (not in the child itself).
    static func install() {
        guard ProcessInfo.processInfo.environment[childVariable] == nil else { return }
        HDF5File.untrustedReadCheck = { path in try check(path) }
    }

    /// Seconds the child may go without reading another object (10; `CONTINUALKIT_READ_TIMEOUT`):
    /// a healthy file's objects take milliseconds each, libhdf5's hangs never return.
    static func timeLimit() -> Double {
        ProcessInfo.processInfo.environment["CONTINUALKIT_READ_TIMEOUT"].flatMap(Double.init) ?? 10
    }

    /// Seconds the whole read may take (600; `CONTINUALKIT_READ_TOTAL_TIMEOUT`): a file whose
    /// objects each arrive in time but never end (a crafted link or chunk structure) still stops.
    static func totalTimeLimit() -> Double {
        ProcessInfo.processInfo.environment["CONTINUALKIT_READ_TOTAL_TIMEOUT"].flatMap(Double.init) ?? 600
    }

    /// The child's address-space limit (RLIMIT_AS) for a file of `size` bytes: 1 GiB + 8 × the
    /// file's size, or `CONTINUALKIT_READ_MEMORY` bytes (`8G`, `512M` accepted). Reading a
    /// dataset needs its decompressed size: real data compresses a few times at most, so the
    /// margin passes any honest file, while a few-megabyte file that inflates to gigabytes (a
    /// "gzip bomb") fails in the child instead of driving the machine into swap.
    static func memoryLimit(fileSize size: Int) -> Int {
        if let text = ProcessInfo.processInfo.environment["CONTINUALKIT_READ_MEMORY"],
           let bytes = ResourceLimits.parseBytes(text), bytes >= 1, bytes < 9e18 {
            return Int(bytes)
        }
        let (product, overflow) = size.multipliedReportingOverflow(by: 8)
        return overflow ? Int.max : (1 << 30) + product
    }

    /// The child's variable carrying `memoryLimit` (bytes).
    static let memoryVariable = "CONTINUALKIT_READ_CHECK_MEMORY"

    /// When the child last reported progress.
    final class Activity: @unchecked Sendable {
        private let lock = NSLock()
        private var last = Date()
        func touch() { lock.lock(); last = Date(); lock.unlock() }
        func silence() -> Double { lock.lock(); defer { lock.unlock() }; return Date().timeIntervalSince(last) }
    }

    static func check(_ path: String) throws {
        var st = stat()
        guard stat(path, &st) == 0 else { return }  // HDF5's open reports a missing file
        let key = "\(st.st_dev):\(st.st_ino):\(st.st_size):\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
        lock.lock()
        let known = checked.contains(key)
        lock.unlock()
        if known { return }
        let limit = timeLimit(), total = totalTimeLimit()
        let memory = memoryLimit(fileSize: Int(st.st_size))
        let started = Date()
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executablePath())
        child.arguments = ["__read-check", path]
        var environment = ProcessInfo.processInfo.environment
        environment[childVariable] = "1"
        environment[memoryVariable] = String(memory)
        child.environment = environment
        // The child writes a byte after each object it reads: the limit is on silence, so a big
        // file on a slow machine is not mistaken for a hang inside libhdf5.
        let progress = Pipe()
        child.standardOutput = progress
        // The child's error message (exit 3 or 4), read after it ends; it is one line.
        let errors = Pipe()
        child.standardError = errors
        let activity = Activity()
        progress.fileHandleForReading.readabilityHandler = { handle in
            if !handle.availableData.isEmpty { activity.touch() }
        }
        defer { progress.fileHandleForReading.readabilityHandler = nil }
        let done = DispatchSemaphore(value: 0)
        child.terminationHandler = { _ in done.signal() }
        do { try child.run() } catch {
            return  // cannot isolate (e.g. no permission to execute): read in-process as before
        }
        while done.wait(timeout: .now() + 0.05) == .timedOut {
            let silent = activity.silence() > limit, long = Date().timeIntervalSince(started) > total
            if silent || long {
                kill(child.processIdentifier, SIGKILL)
                done.wait()
                let why = silent ? "no progress for \(Int(limit)) s" : "not read to the end in \(Int(total)) s (CONTINUALKIT_READ_TOTAL_TIMEOUT)"
                throw HDF5Error(.library, "the file is damaged: the HDF5 library timed out reading \(path) "
                    + "(\(why) in a separate process; a damaged file can make libhdf5 loop forever\(Self.memoryNote(memory)))")
            }
        }
        if child.terminationReason == .uncaughtSignal {
            let signal = child.terminationStatus
            let name = String(cString: strsignal(signal))
            throw HDF5Error(.library, "the file is damaged: the HDF5 library crashed reading \(path) "
                + "(signal \(signal), \(name), in a separate process; nothing was written\(Self.memoryNote(memory)))")
        }
        // The child could not open the file, or libhdf5 failed on an object outside a run group
        // (`/runs/<id>/…`) and `/summary`, so this process must not try: after such an error
        // libhdf5 is where it crashes or hangs (the 30-minute fuzzing runs of issue 26 found such
        // files: the child stopped at an error, then the reader here crashed in H5HG_read or
        // looped). Exit 3's message is the one an in-process open would give. Damage inside a run
        // group is left to the readers, which skip that run (`inspect`, `merge`, `repair` salvage
        // the others).
        if child.terminationReason == .exit, child.terminationStatus == 3 || child.terminationStatus == 4 {
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let cause = message.isEmpty ? "an HDF5 error" : message
            throw HDF5Error(.library, child.terminationStatus == 3 ? cause
                : "the file is damaged: the HDF5 library cannot read all of \(path) (\(cause))")
        }
        lock.lock()
        checked.insert(key)
        lock.unlock()
    }

    /// The clause naming the child's memory limit, which a file that inflates past it also hits.
    static func memoryNote(_ bytes: Int) -> String {
        "; or it needs more than the reader's memory limit of \(bytes >> 20) MB (CONTINUALKIT_READ_MEMORY)"
    }

    /// This executable (Linux: /proc/self/exe, which survives a rename of the binary).
    static func executablePath() -> String {
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return target }
        return Bundle.main.executablePath ?? CommandLine.arguments[0]
    }
}

/// `continual __read-check FILE…` (hidden): reads every attribute and dataset of each file.
/// Exit 0: read to the end (objects the toolkit's own checks refuse count as read: the caller's
/// reader refuses them too; so do libhdf5 failures inside a run group `/runs/<id>/…` or in
/// `/summary`, which the results readers skip as damage); 3: the file cannot be opened;
/// 4: libhdf5 failed on the root or on an object outside a run group and `/summary` (a scenario,
/// checkpoint or model file has neither, so any failure there). For 3 and 4 the error's message
/// is on standard error, and the caller reports it without reading the file itself.
struct ReadCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "__read-check", abstract: "Read a whole HDF5 file (used by the CLI to isolate libhdf5).",
        shouldDisplay: false)

    @Argument var files: [String]

    func run() throws {
        // The caller's memory limit for this read (UntrustedRead.memoryLimit): an allocation past
        // it fails here, in the child, and the caller reports the file.
        if let text = ProcessInfo.processInfo.environment[UntrustedRead.memoryVariable], let bytes = rlim_t(text) {
            var limit = rlimit(rlim_cur: bytes, rlim_max: bytes)
            _ = setrlimit(Int32(RLIMIT_AS.rawValue), &limit)
        }
        for path in files {
            let file: HDF5File
            do {
                file = try HDF5File.open(path: path, mode: .readOnly)
            } catch {
                Self.refuse("\(error)", exitCode: 3)  // cannot open: the caller reports this message as its own
            }
            do {
                let out = FileHandle.standardOutput
                let tick = Data([0x2e])
                var fatal: (path: String, error: Error)?
                try RunDigest.readAll(file.root, progress: { out.write(tick) }, failure: { path, error in
                    if fatal == nil, Self.isLibraryFailure(error), !Self.isSkippedWhenDamaged(path) { fatal = (path, error) }
                })
                if let fatal { Self.refuse("\(fatal.path): \(fatal.error)", exitCode: 4) }
                try file.close()
            } catch where !Self.isLibraryFailure(error) {
                // A refusal of the toolkit's own checks (a declared-huge shape, a link loop, a
                // type it does not read): the command's reader makes the same check and reports it
                // in its own words, before libhdf5 reads the object.
                try? file.close()
            } catch {
                Self.refuse("\(error)", exitCode: 4)  // libhdf5 could not list the root or close the file
            }
        }
    }

    /// Ends the child with `message` on standard error, which the caller reports.
    static func refuse(_ message: String, exitCode: Int32) -> Never {
        FileHandle.standardError.write(Data("\(message)\n".utf8))
        Foundation.exit(exitCode)
    }

    /// A failure inside libhdf5, not a refusal of the toolkit's own checks (those the command's
    /// reader makes again, in its own words, before libhdf5 reads the object).
    static func isLibraryFailure(_ error: Error) -> Bool {
        guard let error = error as? HDF5Error else { return true }
        return error.kind == .library
    }

    /// The objects the results readers skip when damaged (`ResultsReader`: a run left out and
    /// reported, `repair` rebuilding the table from the runs): one run's group `/runs/<id>` and
    /// everything below it (`/runs/<id>/…`, `/runs/<id>@name`), and the `/summary` table. `/runs`
    /// itself, its attributes and the root's are not: without them no run can be read.
    static func isSkippedWhenDamaged(_ path: String) -> Bool {
        let objectPath = path.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let parts = objectPath.split(separator: "/")
        return (parts.count >= 2 && parts[0] == "runs") || parts == ["summary"]
    }
}
