import Foundation

/// `continual validate` as a library call (the CLI and the config fuzzer share it): parse the
/// file strictly, count its runs before expanding them (a sweep larger than `expansionLimit` is
/// checked on a representative subset), and run `Preflight` on every run it resolved.
public enum ExperimentValidation {
    /// Sweeps with more runs are counted and checked on their first runs plus every listed value
    /// of every swept key, so that validate answers in well under a second.
    public static let expansionLimit = 200

    /// `output` replaces the file's own `"output"` for the disk check (`--output`).
    public static func validate(path: String, limits: ResourceLimits = .machine, output: String? = nil) throws -> (ExperimentFile, Preflight.Report) {
        try checked(try ExperimentFile.load(path: path, expansionLimit: expansionLimit), limits: limits, output: output)
    }

    public static func validate(data: Data, path: String = "", limits: ResourceLimits = .machine) throws -> (ExperimentFile, Preflight.Report) {
        try checked(try ExperimentFile.parse(data: data, path: path, expansionLimit: expansionLimit), limits: limits, output: nil)
    }

    /// Tuning, every resolved run, and the results file's disk need (`disk(_:_:)`).
    static func checked(_ file: ExperimentFile, limits: ResourceLimits, output: String?) throws -> (ExperimentFile, Preflight.Report) {
        try checkTuning(file, limits: limits)
        let report = try Preflight.checkAll(file.runs, file: file.path, limits: limits)
        try disk(file, report).check(limits, output: output ?? file.output, experiment: file)
        return (file, report)
    }

    /// The results file of all of `file`'s runs (`totalRuns`: a sampled sweep's checked runs
    /// stand for the rest), from the estimates of the runs `report` checked.
    public static func disk(_ file: ExperimentFile, _ report: Preflight.Report) -> DiskEstimate {
        DiskEstimate(runs: file.totalRuns, bytesPerRun: report.meanDiskBytes)
    }

    /// Every selection run of a `"tune"` block's grid, and one run per `"extend"` value, resolves
    /// and passes the preflight checks.
    static func checkTuning(_ file: ExperimentFile, limits: ResourceLimits) throws {
        guard !file.tuneTargets.isEmpty else { return }
        _ = try Preflight.checkAll(try Tuner.trials(file).map(\.run) + Tuner.extensionChecks(file), file: file.path, limits: limits)
    }
}
