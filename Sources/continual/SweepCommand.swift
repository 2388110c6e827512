import ArgumentParser
import ContinualExperiments
import Dispatch
import Foundation

struct SweepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sweep",
        abstract: "Run every run of a sweep in parallel into one HDF5 file with a /summary table.",
        discussion: """
        Expands FILE.json (variants × "sweep" points), runs them with at most --jobs in flight and \
        writes each finished run at once (the file is closed between runs, so h5py can read it). \
        Ctrl-C (or SIGTERM) stops cleanly: the runs finished so far stay readable, and rerunning \
        with --resume does the rest. --shard K/N runs only runs whose sweep index ≡ K mod N; \
        `continual merge` joins the shard files. Exit codes: 0 all runs completed, 1 a run failed \
        or diverged, 2 bad input, 130 interrupted.
        """
    )

    @Argument(help: "Experiment file (JSON) with a \"sweep\" block and/or \"variants\".")
    var file: String

    @Option(name: .shortAndLong, help: "Results file (default: the experiment's \"output\"; with --shard, NAME.shard-K-of-N.h5).")
    var output: String?

    @Option(name: .shortAndLong, help: "Runs in flight at once (default: all cores).")
    var jobs: Int?

    @Flag(help: "Keep the runs already in the output file and run only the missing ones.")
    var resume = false

    @Flag(help: "Resume the output file if it exists (like --resume), start it if not (--resume refuses a missing file).")
    var resumeOrStart = false

    @Flag(help: "Replace an existing output file (otherwise an existing file needs --resume). A file that is not HDF5 is never replaced.")
    var overwrite = false

    @Option(help: "Run only shard K of N (K/N, K from 0), or `slurm` to read SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT.")
    var shard: String?

    @Flag(help: "Plain log lines even on a terminal.")
    var plain = false

    @Flag(help: "Run the \"tune\" stage only and write its choices (/tuning) to the output; the shards of the sweep then take them with --tuning-from.")
    var tuneOnly = false

    @Option(help: ArgumentHelp("Take the tuned variants' choices from this results file's /tuning (written by --tune-only or a finished sweep of the same file) instead of tuning again.", valueName: "tuned.h5"))
    var tuningFrom: String?

    @OptionGroup var resources: ResourceOptions

    func run() throws {
        try FileChecks.requireExperimentJSON(file, command: "sweep")
        // Counted first, expanded only when large sweeps fit (`diskFirst`).
        var experiment: ExperimentFile
        do {
            experiment = try ExperimentFile.load(path: file, expansionLimit: ExperimentValidation.expansionLimit)
        } catch let e as ConfigError { throw CLIFailure.badInput(e.description) }
        Provenance.prefetch(experimentPath: experiment.path)   // overlaps validation below
        var selectedShard: SweepShard?
        if let shard {
            do { selectedShard = try SweepShard.parse(shard) } catch { throw CLIFailure.badInput(error.description) }
        }
        let jobs = self.jobs ?? ProcessInfo.processInfo.activeProcessorCount
        guard jobs >= 1 else { throw CLIFailure.badInput("--jobs must be ≥ 1") }
        let path = output ?? Self.defaultOutput(experiment.output, shard: selectedShard)
        let target = ResultsOutput(path: path, resume: resume, resumeOrStart: resumeOrStart, overwrite: overwrite)
        try target.check(beforeTuning: true)   // before tuning, which can take long
        if experiment.isSampled { experiment = try diskFirst(experiment, shard: selectedShard, path: path) }
        // Everything checkable without training, before anything is written (exit 2 on a problem).
        try resources.applyThreads(experiment)
        let selected = SweepSession(experiment: experiment, shard: selectedShard).selected
        let disk = DiskEstimate(runs: selected.count, bytesPerRun: try resources.preflight(selected, file: file).meanDiskBytes)
        try resources.checkDisk(disk, output: path, experiment: experiment)
        // Selection on validation data first (every shard tunes alike: the choice is deterministic).
        if tuneOnly && tuningFrom != nil { throw CLIFailure.badInput("--tune-only and --tuning-from exclude each other") }
        if tuneOnly && experiment.tuneTargets.isEmpty { throw CLIFailure.badInput("--tune-only: \(file) has no tuned variant") }
        experiment = try TuningStage.apply(experiment, jobs: jobs, output: target, from: tuningFrom)
        let session = SweepSession(experiment: experiment, shard: selectedShard)
        let writer = try target.openWriter(session)
        if tuneOnly {
            writeOut("tuning written to \(path) (no run); the runs, in one go or in shards:\n"
                + "  continual sweep \(file) --tuning-from \(path) [--shard K/N]\n")
            return
        }
        let tty = isatty(STDOUT_FILENO) == 1 && !plain
        let total = session.selected.count

        let shardText = selectedShard.map { " (shard \($0))" } ?? ""
        writeOut("sweep \(experiment.name)\(shardText): \(total) runs, \(writer.completedIds.count) already in \(path), jobs \(jobs)\n")
        for line in try resources.diskLines(disk, output: path) { writeOut(line + "\n") }
        for n in experiment.notes { writeOut("note: \(n)\n") }
        let printer = ProgressPrinter(tty: tty)
        let outcome = try InterruptibleSession.run(session, writer: writer, jobs: jobs, path: path,
                                                   resumeCommand: ResumeHint.command(CommandLine.arguments), progress: { printer.show($0) }, tty: tty)
        printer.end()
        TuningJournal(results: path).remove()   // every run is in the file, and its choices with them
        var earlierFailures = 0
        if let (table, by) = try? SweepReport.read(path: path) {
            writeOut(SweepReport.text(SweepReport.groups(table, by: by), width: tty ? ProgressPrinter.terminalWidth() : 80) + "\n")
            // Failed runs kept from an earlier invocation (--resume does not retry them) count too.
            let mine = Set(session.selected.map(\.runId)), now = Set(outcome.failed.map(\.runId))
            let ids = table.column("run_id") ?? [], status = table.column("status") ?? []
            earlierFailures = zip(ids, status).filter { id, st in
                guard let id = id.stringValue else { return false }
                return mine.contains(id) && !now.contains(id) && st.stringValue != "completed"
            }.count
        }
        writeOut("results: \(path) (\(outcome.written) written now, \(outcome.skipped) already there)\n")
        if outcome.failed.isEmpty && earlierFailures > 0 {
            throw CLIFailure.runFailed("\(earlierFailures) run(s) in \(path) failed or diverged in an earlier invocation (--resume does not retry them; see `continual inspect \(path) --csv`)")
        }
        if !outcome.failed.isEmpty {
            throw CLIFailure.runFailed("\(outcome.failed.count) of \(outcome.written) runs did not complete: "
                + outcome.failed.prefix(10).map { "\($0.name) (\($0.status.rawValue): \($0.message))" }.joined(separator: "; ")
                + (outcome.failed.count > 10 ? "; …" : ""))
        }
    }

    /// A sweep too large to expand at once (`experiment` holds a sample of its runs): its results
    /// file is estimated from the sample and refused over --max-disk before the expansion, which
    /// for a million runs takes minutes; then the whole sweep is expanded.
    func diskFirst(_ experiment: ExperimentFile, shard: SweepShard?, path: String) throws -> ExperimentFile {
        let runs = shard.map { ($0.count - 1 - $0.index + experiment.totalRuns) / $0.count } ?? experiment.totalRuns
        let sample = try resources.preflight(experiment.runs, file: file)
        try resources.checkDisk(DiskEstimate(runs: runs, bytesPerRun: sample.meanDiskBytes), output: path, experiment: experiment)
        do { return try ExperimentFile.load(path: file) } catch let e as ConfigError { throw CLIFailure.badInput(e.description) }
    }

    static func defaultOutput(_ output: String, shard: SweepShard?) -> String {
        guard let shard else { return output }
        let base = output.hasSuffix(".h5") ? String(output.dropLast(3)) : output
        return "\(base).shard-\(shard.index)-of-\(shard.count).h5"
    }
}

/// A flag set by the signal handler and read by the runner (lock-protected).
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set() { lock.lock(); value = true; lock.unlock() }
}

/// Hands a result from the async task to the blocked command.
final class ResultBox<T: Sendable>: @unchecked Sendable {
    var value: Result<T, any Error>?
}

/// Progress: one updating line on a terminal; log lines otherwise — one per run, or with
/// `logLines` set, about that many in all (the first three runs, every failure and the last run
/// are always logged, so a log shows at once that work has started).
final class ProgressPrinter: @unchecked Sendable {
    let tty: Bool
    let logLines: Int?
    private var shown = false
    init(tty: Bool, logLines: Int? = nil) { self.tty = tty; self.logLines = logLines }

    func show(_ p: SweepSession.Progress) {
        let r = p.last
        let acc = r.metrics.map { String(format: "ACC %.2f%%", $0.acc * 100) } ?? r.status.rawValue
        if tty {
            var line = String(format: "[%d/%d] %d failed · %@ elapsed · ETA %@ · last %@ (%@)", p.done, p.total, p.failed,
                              Self.duration(p.elapsedSeconds), Self.duration(p.etaSeconds), r.name, acc)
            if line.count >= Self.terminalWidth() { line = String(line.prefix(max(20, Self.terminalWidth() - 2))) + "…" }
            FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + line).utf8))
            shown = true
        } else {
            if let logLines, logLines > 0, r.status == .completed, p.done > 3, p.done < p.total,
               p.done % max(1, (p.total + logLines - 1) / logLines) != 0 { return }
            var line = String(format: "[%d/%d] %@ %@ %@ %@ %.2f s · ETA %@", p.done, p.total, r.status.rawValue, r.name, r.runId,
                              acc, r.wallSeconds, Self.duration(p.etaSeconds))
            if !r.message.isEmpty { line += " — " + r.message }
            writeOut(line + "\n")
        }
    }

    func end() { if shown { writeOut("\n") } }

    /// Columns of the terminal (so the line never wraps, which would break the `\r` update).
    static func terminalWidth() -> Int {
        var size = winsize()
        return ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 100
    }

    static func duration(_ s: Double) -> String {
        guard s.isFinite else { return "?" }
        let t = Int(s.rounded())
        return t >= 3600 ? "\(t / 3600)h\(String(format: "%02d", t / 60 % 60))m" : t >= 60 ? "\(t / 60)m\(String(format: "%02d", t % 60))s" : "\(t)s"
    }
}

/// Unbuffered stdout, so log lines appear at once when piped (and in order with progress lines).
func writeOut(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}
