import Foundation

/// `continual validate` as a library call (the CLI and the config fuzzer share it): parse the
/// file strictly, count its runs before expanding them (a sweep larger than `expansionLimit` is
/// checked on a representative subset), and run `Preflight` on every run it resolved.
public enum ExperimentValidation {
    /// Sweeps with more runs are counted and checked on their first runs plus every listed value
    /// of every swept key, so that validate answers in well under a second.
    public static let expansionLimit = 200

    public static func validate(path: String, limits: ResourceLimits = .machine) throws -> (ExperimentFile, Preflight.Report) {
        let file = try ExperimentFile.load(path: path, expansionLimit: expansionLimit)
        try checkTuning(file, limits: limits)
        return (file, try Preflight.checkAll(file.runs, file: path, limits: limits))
    }

    public static func validate(data: Data, path: String = "", limits: ResourceLimits = .machine) throws -> (ExperimentFile, Preflight.Report) {
        let file = try ExperimentFile.parse(data: data, path: path, expansionLimit: expansionLimit)
        try checkTuning(file, limits: limits)
        return (file, try Preflight.checkAll(file.runs, file: path, limits: limits))
    }

    /// Every selection run of a `"tune"` block resolves and passes the preflight checks.
    static func checkTuning(_ file: ExperimentFile, limits: ResourceLimits) throws {
        guard !file.tuneTargets.isEmpty else { return }
        _ = try Preflight.checkAll(try Tuner.trials(file).map(\.run), file: file.path, limits: limits)
    }
}
