import ArgumentParser
import ContinualExperiments
import ContinualHDF5
import Foundation

/// `continual __read-check FILE…` (hidden): reads every attribute and dataset of each file, for
/// `UntrustedRead` in the parent.
///
/// Exit 0: read to the end (objects the toolkit's own checks refuse count as read: the caller's
/// reader refuses them too; so do libhdf5 failures inside a run group `/runs/<id>/…` or in
/// `/summary`, which the results readers skip as damage); 3: the file cannot be opened;
/// 4: libhdf5 failed on the root or on an object outside a run group and `/summary` (a scenario,
/// checkpoint or model file has neither, so any failure there).
///
/// Standard output gets one byte per object (progress). Standard error gets report lines:
/// `enter GROUP` when the read moves into another skippable group (so a crash names it),
/// `quarantine GROUP` for a skippable group libhdf5 failed in, and for exit 3 and 4 the error
/// message. Groups listed in `CONTINUALKIT_READ_CHECK_SKIP` (one per line) are not opened: the
/// parent's earlier attempts crashed or hung in them.
struct ReadCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "__read-check", abstract: "Read a whole HDF5 file (used by the CLI to isolate libhdf5).",
        shouldDisplay: false)

    /// The child's variable naming groups not to open (newline-separated absolute paths).
    static let skipVariable = "CONTINUALKIT_READ_CHECK_SKIP"

    @Argument var files: [String]

    func run() throws {
        // The caller's memory limit for this read (UntrustedRead.memoryLimit): an allocation past
        // it fails here, in the child, and the caller reports the file.
        AddressSpaceLimit.impose(ProcessInfo.processInfo.environment[UntrustedRead.memoryVariable])
        let skipping = Set((ProcessInfo.processInfo.environment[Self.skipVariable] ?? "").split(separator: "\n").map(String.init))
        for path in files { Self.read(path, skipping: skipping) }
    }

    static func read(_ path: String, skipping: Set<String>) {
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
            var entered = "/", quarantined: Set<String> = []
            try RunDigest.readAll(file.root, skipping: skipping, progress: { object in
                let group = Self.skippableGroup(of: object) ?? "/"
                if group != entered {
                    entered = group
                    report("enter \(group)")
                }
                out.write(tick)
            }, failure: { object, error in
                guard Self.isLibraryFailure(error) else { return }
                if let group = Self.skippableGroup(of: object) {
                    if quarantined.insert(group).inserted { report("quarantine \(group)") }
                } else if fatal == nil {
                    fatal = (object, error)
                }
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

    /// One report line on standard error (unbuffered: it is there even if libhdf5 crashes next).
    static func report(_ line: String) {
        FileHandle.standardError.write(Data("\(line)\n".utf8))
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

    /// The group the results readers skip when it is damaged that `path` is or lies in (`ResultsReader`:
    /// a run left out and reported, `repair` rebuilding the table from the runs): one run's group
    /// `/runs/<id>` (for `/runs/<id>/…` and `/runs/<id>@name` too), or the `/summary` table; nil
    /// for anything else. `/runs` itself, its attributes and the root's are not: without them no
    /// run can be read.
    static func skippableGroup(of path: String) -> String? {
        let objectPath = path.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let parts = objectPath.split(separator: "/")
        if parts.count >= 2 && parts[0] == "runs" { return "/runs/" + parts[1] }
        return parts == ["summary"] ? "/summary" : nil
    }
}
