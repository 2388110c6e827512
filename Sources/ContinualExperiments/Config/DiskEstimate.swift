import Foundation
import ContinualCore

/// The disk a results file takes: what each run adds, from its config and the scenario's sizes
/// (an upper-side estimate, like `RunEstimate`'s memory), times the runs, plus the file's own
/// objects. `validate` and `sweep` print it and refuse an experiment whose peak exceeds
/// `--max-disk` (default: the free space of the output's file system), before a million-run
/// sweep is expanded or anything is written.
public struct DiskEstimate: Sendable, Equatable {
    /// Runs the file will hold.
    public var runs: Int
    /// Mean bytes one run adds: its group, its `/summary` row and its manifest entry.
    public var bytesPerRun: Double

    public init(runs: Int, bytesPerRun: Double) {
        self.runs = runs
        self.bytesPerRun = bytesPerRun
    }

    /// The finished file.
    public var fileBytes: Double { Double(runs) * bytesPerRun + Self.fileOverheadBytes }
    /// The most a sweep holds on disk at once: the file, the copy a fold writes before renaming it
    /// over the file, and the journal of runs not yet folded (at most an eighth of the file; see
    /// docs/results-format.md, "Crash consistency").
    public var peakBytes: Double { fileBytes * (2 + 1.0 / 8) }

    /// What a results file holds besides its runs: the root's attributes (provenance, the
    /// experiment's JSON), the `/summary` table's header and the superblock. Measured: a file of
    /// one tiny run less that run's share (`bytesPerRunOverhead`).
    public static let fileOverheadBytes: Double = 64 * 1024

    /// What every run adds whatever its sizes: the HDF5 object headers and attributes of its
    /// group's ~70 objects (datasets with `meaning`/`units`, `metrics`, `costs`, `device`,
    /// `plugins`), its `/summary` row, its digest and manifest entry. Measured on a sweep of
    /// tiny runs (3 experiences, hidden [8]): the file's growth per run, rounded up.
    public static let bytesPerRunOverhead: Double = 48 * 1024

    /// What `config` adds to a results file, with a scenario of `size`, `parameters` weights,
    /// `epochs` per experience and `pluginBytes` of plugin state (stored as the plugins' datasets).
    static func runBytes(_ config: RunConfig, size: ScenarioSize, parameters: Double, epochs: Double,
                         pluginBytes: Double) -> Double {
        let T = max(size.experiences, 1), K = max(size.classes, 1)
        var bytes = bytesPerRunOverhead + Double(config.canonicalJSON().utf8.count)
        // T × T matrices (accuracy, balanced accuracy, macro-F1, AUROC, AUPRC) and ~16 vectors.
        bytes += T * T * 8 * 5 + T * 8 * 16
        // Confusion matrices, written up to 4,000,000 counts (`ResultsWriter`).
        if T * T * K * K <= 4_000_000 { bytes += T * T * K * K * 8 }
        // Loss and penalty curves, final parameters, the plugins' state.
        bytes += 2 * T * max(epochs, 1) * 8 + parameters * 4 + pluginBytes
        if config.metrics.storePredictions { bytes += size.test * 24 }
        if let every = config.metrics.continualEvalEvery {
            let steps = epochs * (size.train / Double(max(config.training.batchSize, 1))).rounded(.up)
            bytes += steps / Double(every) * (T + 2) * 8
        }
        if config.training.mode == .prequential {
            bytes += size.train / Double(max(config.training.recordEvery, 1)) * 32
        }
        if let population = config.population {
            // Per user: metrics, final accuracies and (by default) the accuracy matrices.
            bytes += Double(population.users) * (T * T * 8 * (population.storeMatrices ? 1 : 0) + T * 8 + 256)
            // Every user's final model (`keep_models`; a federation keeps its clients' elsewhere).
            if population.keepModels && config.federation == nil { bytes += Double(population.users) * parameters * 4 }
        }
        if let federation = config.federation {
            // Per round ~16 series, per evaluation two accuracies, per client ~10 tallies.
            bytes += Double(federation.rounds) * 16 * 8 + Double(config.population?.users ?? 0) * 96
            if let trace = federation.trace {
                // `federation/trace/`: at most FederationTrace.values float32 values, the round data aside.
                let clients = federation.invitedPerRound(clients: max(config.population?.users ?? 1, 1))
                bytes += 4 * Double(FederationTrace.values(rounds: min(trace.rounds, federation.rounds), clients: clients,
                                                          parameters: Int(parameters), shared: Int(parameters)))
            }
        }
        return bytes
    }

    /// The refusal when the peak exceeds `limit` bytes (`source` names where the limit comes
    /// from), at `location` (`.sweep`, or the top level without one); nil when it fits.
    public func problem(limit: Double, source: String, location: String, file: String) -> ConfigError? {
        guard !(peakBytes <= limit) else { return nil }
        return ConfigError(file: file, location: location, message: "the results of \(runs) run(s) need an estimated "
            + "\(RunEstimate.bytes(fileBytes)) on disk (≈ \(RunEstimate.bytes(bytesPerRun)) per run) and up to "
            + "\(RunEstimate.bytes(peakBytes)) while the sweep folds its journal into a copy of the file, more than \(source) "
            + "(\(RunEstimate.bytes(limit))); sweep fewer points, store less per run, or set --max-disk")
    }

    /// The limit of `limits` (--max-disk), else the free space where `output` goes, with where it
    /// comes from for the message; nil when neither is known.
    public static func limit(_ limits: ResourceLimits, output: String) -> (bytes: Double, source: String)? {
        if let bytes = limits.diskBytes { return (bytes, "--max-disk") }
        return freeSpace(forWriting: output).map { ($0, "the free space where \(output) goes") }
    }

    /// Throws the refusal when the peak exceeds the limit (`limit(_:output:)`) for `experiment`'s
    /// results written to `output`: at `.sweep` (or `.variants`, or the top level).
    public func check(_ limits: ResourceLimits, output: String, experiment: ExperimentFile) throws {
        guard let (bytes, source) = Self.limit(limits, output: output) else { return }
        let location = experiment.sweepJSON != nil ? ".sweep" : experiment.runs.count > 1 || experiment.isSweep ? ".variants" : "(top level)"
        if let problem = problem(limit: bytes, source: source, location: location, file: experiment.path) { throw problem }
    }

    /// Bytes free to this user on the file system that will hold `path` (its nearest existing
    /// folder: the output's folder may not exist yet); nil when it cannot be determined.
    public static func freeSpace(forWriting path: String) -> Double? {
        var dir = (path as NSString).deletingLastPathComponent
        if dir.isEmpty { dir = "." }
        while !FileManager.default.fileExists(atPath: dir), dir != "/", dir != "." {
            let parent = (dir as NSString).deletingLastPathComponent
            dir = parent.isEmpty ? "." : parent
        }
        return DiskSpace.available(forWriting: dir + "/x").map(Double.init)
    }
}
