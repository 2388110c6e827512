import ContinualExperiments

/// The first check of a command given a path: when it holds the wrong kind of file, say what it
/// holds and which command takes it (exit 2), instead of a parser's "line 1, column 1: expected
/// a value" or libhdf5's "not an HDF5 file" — and never replace a file the toolkit did not write.
enum FileChecks {
    /// For commands that take an experiment JSON (`run`, `sweep`, `validate`): refuses an HDF5
    /// file (a results or scenario file, the usual mix-up after a run). `command` is the
    /// subcommand's name as typed.
    static func requireExperimentJSON(_ file: String, command: String) throws {
        guard FileKind.of(file) == .hdf5 else { return }
        throw CLIFailure.badInput("\(file) is an HDF5 file (a results or scenario file); `continual \(command)` takes an "
            + "experiment JSON — to look at it: continual inspect \(file)")
    }

    /// For commands that read a results file (`inspect`, `merge`, `repair`): refuses a JSON or
    /// text file (an experiment file given instead of its results) and names the command for it.
    static func requireHDF5(_ file: String, command: String) throws {
        switch FileKind.of(file) {
        case .hdf5, .missing: return
        case .json:
            throw CLIFailure.badInput("\(file) is a JSON file (an experiment file?); `continual \(command)` takes a results "
                + "file (HDF5) — to run the experiment: continual run \(file)")
        case let kind:
            throw CLIFailure.badInput("\(file) is \(kind); `continual \(command)` takes a results file (HDF5) "
                + "written by `continual run` or `continual sweep`")
        }
    }

    /// For an output about to be written or replaced: refuses a path holding anything but an HDF5
    /// file (a text file, a JSON, a directory), whatever the flags. Missing and empty files pass.
    static func refuseReplacingForeign(_ path: String) throws {
        switch FileKind.of(path) {
        case .hdf5, .missing, .empty: return
        case let kind:
            throw CLIFailure.badInput("\(path) is \(kind), not a results file; it is never replaced, not even with "
                + "--overwrite: choose another output")
        }
    }
}
