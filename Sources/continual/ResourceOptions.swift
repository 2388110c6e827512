import ArgumentParser
import ContinualCore
import ContinualExperiments
import Foundation

/// `--max-memory`, `--max-work`, `--max-flops`, `--max-disk` and `--threads`, shared by `validate`, `run` and `sweep`.
struct ResourceOptions: ParsableArguments {
    @Option(help: "Refuse a run whose estimated peak memory exceeds this (e.g. 8G, 512M; default: this machine's memory).")
    var maxMemory: String?

    @Option(help: "Refuse a run whose estimated work exceeds this many sample-steps (default 1e12).")
    var maxWork: Double?

    @Option(help: "Refuse a run whose estimated floating-point operations exceed this (default 1e16).")
    var maxFlops: Double?

    @Option(help: "Refuse an experiment whose results file needs more disk at its peak (file + the copy a fold writes) than this (e.g. 10G; default: the free space where it goes).")
    var maxDisk: String?

    @Option(help: "Threads per dense product of a run (default: the file's \"threads\", else 1). Bits do not depend on it.")
    var threads: Int?

    /// Sets `Kernels.threads` from --threads, else from the experiment's `threads`.
    func applyThreads(_ experiment: ExperimentFile) throws {
        if let threads, !(1...ExperimentFile.maximumThreads).contains(threads) {
            throw CLIFailure.badInput("--threads: expected an integer from 1 to \(ExperimentFile.maximumThreads), got \(threads)")
        }
        Kernels.threads = threads ?? experiment.threads
    }

    func limits() throws -> ResourceLimits {
        var memory: Double? = nil
        if let maxMemory {
            guard let bytes = ResourceLimits.parseBytes(maxMemory) else {
                throw CLIFailure.badInput("--max-memory: expected a size such as 8G, 512M or a number of bytes, got \"\(maxMemory)\"")
            }
            memory = bytes
        }
        var disk: Double? = nil
        if let maxDisk {
            guard let bytes = ResourceLimits.parseBytes(maxDisk) else {
                throw CLIFailure.badInput("--max-disk: expected a size such as 10G, 500M or a number of bytes, got \"\(maxDisk)\"")
            }
            disk = bytes
        }
        if let maxWork, !(maxWork > 0 && maxWork.isFinite) {
            throw CLIFailure.badInput("--max-work: expected a positive number, got \(maxWork)")
        }
        if let maxFlops, !(maxFlops > 0 && maxFlops.isFinite) {
            throw CLIFailure.badInput("--max-flops: expected a positive number, got \(maxFlops)")
        }
        return ResourceLimits(memoryBytes: memory, work: maxWork, flops: maxFlops, diskBytes: disk)
    }

    /// Refuses (exit 2) results of `estimate`'s size written to `output` beyond --max-disk or the
    /// free space there (`DiskEstimate.check`).
    func checkDisk(_ estimate: DiskEstimate, output: String, experiment: ExperimentFile) throws {
        do {
            try estimate.check(try limits(), output: output, experiment: experiment)
        } catch let error as ConfigError {
            throw CLIFailure.badInput(error.description)
        }
    }

    /// Two lines for 80 columns: "disk ≈ 1.2 MB for the results of 20 run(s) (≈ 60 kB per run)"
    /// and "(up to 2.6 MB while written; limit 10.0 GB, --max-disk)".
    func diskLines(_ estimate: DiskEstimate, output: String) throws -> [String] {
        let limit = DiskEstimate.limit(try limits(), output: output)
        return ["disk ≈ \(RunEstimate.bytes(estimate.fileBytes)) for the results of \(estimate.runs) run(s) "
                    + "(≈ \(RunEstimate.bytes(estimate.bytesPerRun)) per run)",
                "  (up to \(RunEstimate.bytes(estimate.peakBytes)) while written; limit "
                    + (limit.map { "\(RunEstimate.bytes($0.bytes)), \($0.source == "--max-disk" ? "--max-disk" : "free space")" } ?? "none: free space unknown")
                    + ")"]
    }

    /// Runs `Preflight.checkAll` and turns a refusal into exit 2.
    func preflight(_ runs: [ResolvedRun], file: String) throws -> Preflight.Report {
        let limits = try limits()
        ResourceLimits.forRuns = limits   // the check every run repeats when it starts uses the same limits
        do {
            return try Preflight.checkAll(runs, file: file, limits: limits)
        } catch let error as ConfigError {
            throw CLIFailure.badInput(error.description)
        }
    }
}
