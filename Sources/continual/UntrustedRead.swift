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
/// for the run groups (`/runs/<id>`) and `/summary` it failed in: those are quarantined
/// (`HDF5Quarantine`), so this process never opens them and the results readers report them as
/// damaged runs. A crash or hang of the child inside such a group costs that group: the child
/// runs again without it (up to `maxSkippedGroups`). A crash or time-out anywhere else becomes a
/// clear error naming the file, and this process never receives the signal. Each file is
/// checked once per process (keyed by device, inode, size and modification time).
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
        AddressSpaceLimit.forFiles(size, base: 1 << 30, override: "CONTINUALKIT_READ_MEMORY")
    }

    /// The child's variable carrying `memoryLimit` (bytes).
    static let memoryVariable = "CONTINUALKIT_READ_CHECK_MEMORY"

    /// Run groups a file may lose to crashes or hangs of the child before it is refused whole.
    static let maxSkippedGroups = 16

    static func check(_ path: String) throws {
        guard let key = HDF5Quarantine.fileKey(path) else { return }  // HDF5's open reports a missing file
        lock.lock()
        let known = checked.contains(key)
        lock.unlock()
        if known { return }
        let memory = memoryLimit(fileSize: SweepWriter.size(path))
        // A crash or hang inside one run group (or /summary) costs that group, not the file: the
        // child is run again without it, so `repair` and `merge` can salvage the others.
        var skipped: [String] = []
        while true {
            switch try ChildRead.run(path, skipping: skipped, memory: memory) {
            case .read(let failed):
                HDF5Quarantine.add(failed.union(skipped), forFileKey: key)
                lock.lock()
                checked.insert(key)
                lock.unlock()
                return
            case .fault(let verb, let detail, let group):
                guard let group, group != "/", !skipped.contains(group), skipped.count < maxSkippedGroups else {
                    throw HDF5Error(.library, "the file is damaged: the HDF5 library \(verb) reading \(path) (\(detail), in a "
                        + "separate process; nothing was written\(Self.memoryNote(memory)))")
                }
                skipped.append(group)
            case .refused(let message, let exitCode):
                // The child could not open the file, or libhdf5 failed on an object outside a run
                // group (`/runs/<id>/…`) and `/summary`, so this process must not try: after such an
                // error libhdf5 is where it crashes or hangs (the 30-minute fuzzing runs of issue 26
                // found such files). Exit 3's message is the one an in-process open would give.
                let cause = message.isEmpty ? "an HDF5 error" : message
                throw HDF5Error(.library, exitCode == 3 ? cause : "the file is damaged: the HDF5 library cannot read all of \(path) (\(cause))")
            }
        }
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
