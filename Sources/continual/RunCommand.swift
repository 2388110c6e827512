import ArgumentParser
import ContinualCore
import ContinualExperiments
import Foundation

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run an experiment file and write its HDF5 results.",
        discussion: """
        Runs every variant of FILE.json one after another (--jobs to run several at once), prints \
        the accuracy matrix and the metrics of each, and writes results/NAME.h5 (or the file's \
        "output", or --output) in the same format as `sweep`: each finished run is written at once, \
        so a crash, Ctrl-C or SIGTERM keeps every finished run and `--resume` does the rest. An \
        existing results file is never replaced silently: pass --resume (keep its runs) or \
        --overwrite. Exit codes: 0 all runs completed, 1 a run failed or diverged, 2 bad input, \
        130 interrupted.

        Checkpoints (the on-device pattern: the app is killed, training resumes at next launch): \
        `--stop-after K --checkpoint CK.h5` trains one run through experience K (round K of a \
        federated run) and saves the full learner state (model, optimizer, plugin state, results \
        so far; every client and the server of a federated run); `--resume-from CK.h5` finishes \
        it, bit-identical to a run that never stopped. A federated run also saves itself every N \
        rounds with `--checkpoint-every N --checkpoint CK.h5`; killed, it continues with the \
        same command plus `--resume --resume-from CK.h5` (printed when it is interrupted). All \
        need a single run: pick a variant with --variant when the file has several.
        """
    )

    @Argument(help: "Experiment file (JSON).")
    var file: String

    @Option(name: .shortAndLong, help: "Results file to write (default: the experiment's \"output\", else results/NAME.h5).")
    var output: String?

    @Flag(name: .shortAndLong, help: "Print only the comparison table and the results path.")
    var quiet = false

    @Flag(help: "Print a data file's features and users, and every run's accuracy matrix and measures (default: one progress line per run).")
    var verbose = false

    @Flag(help: "Plain log lines even on a terminal.")
    var plain = false

    @Option(help: "Run only this variant: its name in \"variants\" (all of its sweep's runs), or one run's full name (e.g. naive_seed=2).")
    var variant: String?

    @Option(name: .shortAndLong, help: "Runs in flight at once (default 1: one after another).")
    var jobs: Int = 1

    @Flag(help: "Keep the runs already in the results file and run only the missing ones.")
    var resume = false

    @Flag(help: "Resume the results file if it exists (like --resume), start it if not (--resume refuses a missing file).")
    var resumeOrStart = false

    @Flag(help: "Replace an existing results file (never a file that is not HDF5).")
    var overwrite = false

    @Option(help: "Stop after this experience (0-based; a round for a federated run) and save a checkpoint (needs --checkpoint).")
    var stopAfter: Int?

    @Option(help: "Where --stop-after writes the checkpoint (HDF5).")
    var checkpoint: String?

    @Option(help: "Resume the run from a checkpoint written by --stop-after or --checkpoint-every.")
    var resumeFrom: String?

    @Option(help: ArgumentHelp("Federated runs: save the run to --checkpoint every N rounds while it goes on.",
                               discussion: "Each save replaces the last durably; a killed run continues with the same command plus --resume-from PATH (the interrupted run prints it)."))
    var checkpointEvery: Int?

    @OptionGroup var resources: ResourceOptions

    @Flag(help: ArgumentHelp(
        "Spread every federated run's clients over the MPI ranks this process was started with (mpirun/srun).",
        discussion: "Rank 0 writes the results; the numbers are bit-identical to a single-process run. Needs Open MPI at run time (libmpi.so.40). Implied when launched by mpirun or srun."))
    var mpi = false

    @Flag(help: "Resume even if the scenario's data file changed since the checkpoint was written.")
    var allowDataChange = false

    func run() throws {
        try FileChecks.requireExperimentJSON(file, command: "run")
        var experiment: ExperimentFile
        do {
            experiment = try ExperimentFile.load(path: file)
        } catch let error as ConfigError {
            throw CLIFailure.badInput(error.description)
        }
        Provenance.prefetch(experimentPath: experiment.path)   // overlaps validation below
        let path = output ?? experiment.output
        let target = ResultsOutput(path: path, resume: self.resume, resumeOrStart: resumeOrStart, overwrite: overwrite)
        var runs = try selectedRuns(experiment)
        let checkpointing = stopAfter != nil || resumeFrom != nil || checkpointEvery != nil
        let resume = try checkpointToResume(runs)
        // Everything checkable without training, before anything is written (exit 2 on a problem).
        if stopAfter == nil { try target.check(beforeTuning: true) }
        try resources.applyThreads(experiment)
        let report = try resources.preflight(runs, file: file)
        if verbose { for line in report.datasets.flatMap({ $0.lines() }) { writeOut(line + "\n") } }
        try resources.checkDisk(DiskEstimate(runs: runs.count, bytesPerRun: report.meanDiskBytes), output: target.path, experiment: experiment)
        if !experiment.tuneTargets.isEmpty {
            guard !checkpointing else { throw CLIFailure.badInput("--stop-after and --resume-from do not combine with a \"tune\" block yet; run it whole") }
            if let variant {
                let wanted = Set(experiment.runs.filter { Self.matches($0, variant) }.map(\.variant))
                experiment.tuneTargets.removeAll { !wanted.contains($0.variant) }
            }
        }
        let world = mpi || MPIWorld.launchedUnderMPI() ? try startDistributed(runs) : nil
        if !experiment.tuneTargets.isEmpty {
            // Under MPI the ranks share the selection runs and all get the same choices; no rank
            // keeps a tuning journal (they would share it), and only rank 0 prints.
            let journalled = world == nil ? target : nil
            experiment = try TuningStage.apply(experiment, jobs: jobs, output: journalled, quiet: quiet || (world?.rank ?? 0) != 0,
                                               world: world)
            runs = experiment.runs.filter { variant == nil || Self.matches($0, variant!) }
        }
        if let world {
            if try runDistributed(runs, in: world, resumingFrom: resume) { return }
        }
        var session = SweepSession(experiment: experiment)
        session.selected = runs
        if let k = stopAfter, let checkpoint {
            return try stopEarly(runs[0], resumingFrom: resume, after: k, checkpoint: checkpoint)
        }
        guard jobs >= 1 else { throw CLIFailure.badInput("--jobs must be ≥ 1") }
        let writer = try target.openWriter(session)
        // Where the results go, before the work (the path resolved as it will be written).
        writeOut("writing \(path) (\(session.selected.count) run(s), \(writer.completedIds.count) already there)\n")
        let collected = ResultList()
        // Up to 12 runs the summary prints from the results themselves; beyond that it reads the
        // file back, and only each run's status is kept (the memory of a long file stays flat).
        let keepWhole = session.selected.count <= 12
        let quiet = self.quiet, verbose = self.verbose
        let tty = isatty(STDOUT_FILENO) == 1 && !plain
        let printer = ProgressPrinter(tty: tty, logLines: 10)
        let width = tty ? ProgressPrinter.terminalWidth() : 80
        let resumeState = resume, saves = try periodicCheckpoints(runs)
        let execute: @Sendable (ResolvedRun) -> RunResult = { run in
            if resumeState != nil || saves != nil { return RunExecutor.execute(run, resumingFrom: resumeState, stopAfter: nil, checkpoints: saves) }
            return RunExecutor.execute(run)
        }
        let outcome = try InterruptibleSession.run(
            session, writer: writer, jobs: jobs, path: path, resumeCommand: resumeHint(),
            execute: execute,
            progress: { p in
                collected.append(keepWhole ? p.last : p.last.statusOnly)
                if verbose {
                    writeOut(SummaryText.run(p.last, width: width) + "\n\n")
                } else if !quiet {
                    printer.show(p)
                }
            }, tty: tty)
        printer.end()
        TuningJournal(results: path).remove()   // every run is in the file, and its choices with them
        let results = collected.values.sorted { $0.run.sweepIndex < $1.run.sweepIndex }
        try printSummary(results, selected: session.selected.count, path: path, width: width, outcome: outcome)
    }

    /// The experiment's runs, or only those of --variant (refused when it names none).
    private func selectedRuns(_ experiment: ExperimentFile) throws -> [ResolvedRun] {
        guard let variant else { return experiment.runs }
        let runs = experiment.runs.filter { Self.matches($0, variant) }
        guard !runs.isEmpty else {
            var seen = Set<String>()
            let names = experiment.runs.map { $0.variant.isEmpty ? $0.config.name : $0.variant }.filter { seen.insert($0).inserted }
            throw CLIFailure.badInput("\(file): no variant or run named \"\(variant)\"; variants: " + names.joined(separator: ", "))
        }
        return runs
    }

    /// A run is selected by its variant's name (every run of that variant's sweep) or its own full name.
    static func matches(_ run: ResolvedRun, _ name: String) -> Bool {
        run.variant == name || run.config.name == name
    }

    /// After the session: the comparison (or, for more than 12 runs, the grouped table read back
    /// from the file), the results path, and a failure when a run did not complete.
    private func printSummary(_ results: [RunResult], selected: Int, path: String, width: Int, outcome: SweepSession.Outcome) throws {
        if selected > 12, let (table, by) = try? SweepReport.read(path: path) {
            // Many runs: one row per configuration (mean ± std over seeds), as `sweep` prints.
            // Compact by default (one screen): the measures beyond accuracy with --verbose or
            // `continual inspect`.
            writeOut(SweepReport.text(SweepReport.groups(table, by: by), width: width, measures: verbose) + "\n")
            if !verbose { print("(balanced accuracy, macro-F1, AUROC, AUPRC per configuration: --verbose, or continual inspect \(path))") }
        } else if !results.isEmpty {
            print(SummaryText.comparison(results, width: width))
            for r in results { if let line = SummaryText.federation(r) { print(line) } }
            for r in results where r.federation == nil {
                if let p = r.population { print("\(r.name): " + PopulationRows(p).headline(width: width - 2 - r.name.count)) }
            }
            for r in results { if let line = SummaryText.fewShot(r) ?? SummaryText.poisoning(r) { print(line) } }
        }
        print("results: \(path) (\(outcome.written) written now, \(outcome.skipped) already there)")
        let failed = results.filter { $0.status != .completed }
        if !failed.isEmpty {
            throw CLIFailure.runFailed("\(failed.count) of \(results.count) runs did not complete: "
                + failed.map { "\($0.name) (\($0.status.rawValue): \($0.message))" }.joined(separator: "; "))
        }
    }
}

extension RunCommand {
    /// Under MPI: the world of ranks, once the runs are known to suit it (nil: a world of one,
    /// which runs as one process). Before any tuning, which the ranks share.
    func startDistributed(_ runs: [ResolvedRun]) throws -> MPIWorld? {
        let world: MPIWorld
        do { world = try MPIWorld.start() } catch { throw CLIFailure.badInput("--mpi: \(error)") }
        guard world.size > 1 else { return nil }
        if let other = runs.first(where: { $0.config.federation == nil }) {
            throw CLIFailure.badInput("--mpi splits the clients of federated runs over ranks; run \"\(other.config.name)\" has no \"federation\" block (run it without mpirun, or shard a sweep with --shard)")
        }
        if self.resume || resumeOrStart || stopAfter != nil {
            throw CLIFailure.badInput("--mpi runs every run whole on every rank: --resume, --resume-or-start and --stop-after are not available "
                + "(--checkpoint-every N --checkpoint F saves a federated run while it goes on, --resume-from F continues it)")
        }
        atexit { try? MPIWorld.current?.finish() }
        return world
    }

    /// Under MPI: every rank computes every run in order (federated runs split their clients over
    /// the ranks; other runs are refused by `startDistributed`); ranks other than 0 stop here
    /// (returns true), rank 0 goes on to write the results (returns false) and finishes MPI when
    /// the process exits. --resume-from and --checkpoint-every work as in one process: every rank
    /// reads the checkpoint and restores its own clients; every rank takes part in each save (the
    /// clients are gathered), and rank 0 writes it.
    func runDistributed(_ runs: [ResolvedRun], in world: MPIWorld, resumingFrom resume: RunCheckpoint?) throws -> Bool {
        FederationRunner.transport = world
        if world.rank == 0 {
            print("mpi: \(world.size) ranks (\(world.libraryVersion?.split(separator: "\n").first.map(String.init) ?? "MPI")); "
                + "each simulates the clients with id ≡ rank (mod \(world.size)); rank 0 writes the results")
            return false
        }
        // The same saves as rank 0's, which alone writes them (see `periodicCheckpoints`).
        let saves = checkpointEvery.map { RoundCheckpoints(every: $0) { _ in } }
        for run in runs {
            let result = resume != nil || saves != nil
                ? RunExecutor.execute(run, resumingFrom: resume, stopAfter: nil, checkpoints: saves)
                : RunExecutor.execute(run)
            if result.status != .completed {
                FileHandle.standardError.write(Data("rank \(world.rank): run \(run.config.name) \(result.status.rawValue): \(result.message)\n".utf8))
            }
        }
        return true
    }
}

/// Results handed over from the writer loop (lock-protected).
final class ResultList: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [RunResult] = []
    func append(_ r: RunResult) { lock.lock(); items.append(r); lock.unlock() }
    var values: [RunResult] { lock.lock(); defer { lock.unlock() }; return items }
}
