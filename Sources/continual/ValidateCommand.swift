import ArgumentParser
import ContinualExperiments
import Foundation

struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check an experiment file without running it: ok means every run can start.",
        discussion: """
        Checks everything that can be checked without training, exactly as `run` and `sweep` do \
        before their first run: the JSON and every key, the files a scenario reads (relative \
        paths are relative to the experiment file) and their layout, that the model, heads, \
        labels, layer indices and plugins fit the data, and each run's estimated peak memory and \
        work against this machine's memory (or --max-memory) and --max-work, and the results \
        file's size on disk against --max-disk (default: the free space where it goes). Prints a \
        data file's features and users (a `dataset` scenario), the runs with their ids and \
        estimates; --resolved prints each run's full config with defaults. A sweep \
        of more than \(ValidateCommand.expansionLimit) runs is counted, not expanded: validate \
        checks its first runs and every listed value of every swept key. Exit 2 on a problem, \
        naming the key path.
        """
    )

    static var expansionLimit: Int { ExperimentValidation.expansionLimit }

    @Argument(help: "Experiment file (JSON).")
    var file: String

    @Flag(help: "Print every run's resolved configuration (canonical JSON).")
    var resolved = false

    @OptionGroup var resources: ResourceOptions

    func run() throws {
        try FileChecks.requireExperimentJSON(file, command: "validate")
        let experiment: ExperimentFile
        let report: Preflight.Report
        do {
            (experiment, report) = try ExperimentValidation.validate(path: file, limits: try resources.limits())
        } catch let error as ConfigError {
            throw CLIFailure.badInput(error.description)
        }
        let total = experiment.totalRuns
        print("\(file): ok — experiment \"\(experiment.name)\", \(total) run(s), output \(experiment.output)")
        if experiment.isSweep {
            print("  sweep over \(experiment.sweptPaths.joined(separator: ", ")); run with: continual sweep \(file)")
        }
        if !experiment.tuneTargets.isEmpty {
            // Each selection run was resolved and checked above (ExperimentValidation.checkTuning).
            print("  tuning: \(experiment.tuneTargets.count) variant(s), \(Tuner.trialCount(experiment)) selection runs\n"
                + "    on validation splits of the training data, before the reported runs")
            let most = Tuner.maximumTrialCount(experiment)
            if most > Tuner.trialCount(experiment) {
                print("    up to \(most) while a choice sits at a grid edge its \"extend\" values move")
            }
        }
        for n in experiment.notes { print("  note: \(n)") }
        // A data file's features and users, so a column that became an input by omission shows.
        for line in report.datasets.flatMap({ $0.lines() }) { print(line) }
        let shown = experiment.isSampled ? min(experiment.runs.count, 20) : experiment.runs.count
        for (r, e) in zip(experiment.runs, report.estimates).prefix(shown) {
            // Two lines per run, so an 80-column terminal does not wrap them: who, then how much.
            print("  \(r.runId)  \(r.config.name)  strategy=\(r.config.strategyLabel)  seed=\(r.config.seed)")
            print("      \(e.summary)")
            if let p = r.config.population, r.config.federation == nil {
                print("      population: \(p.users) users, one model each" + (p.keepModels ? "" : " (their models not kept)"))
            }
            if resolved { print("    " + r.canonicalJSON) }
        }
        if shown < experiment.runs.count || experiment.runs.count < total {
            print("  … \(total - shown) more run(s)")
        }
        // The whole experiment: peak of one run; of the process, with all cores busy and the
        // results file's writer (`RunEstimate.resultsWriterBytes`); and the total work.
        let meanWork = report.estimates.isEmpty ? 0 : report.totalWork / Double(report.estimates.count)
        let totalWork = experiment.isSampled ? meanWork * Double(total) : report.totalWork
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let parallel = min(cores, max(total, 1))
        let writer = RunEstimate.resultsWriterBytes(runs: total)
        let limits = try resources.limits()
        // One fact per line, each short enough for an 80-column terminal.
        print("  estimate: peak memory per run ≈ \(RunEstimate.bytes(report.peakMemory)); "
            + "of the process ≈ \(RunEstimate.bytes(report.peakMemory * Double(parallel) + writer))")
        print("    (\(parallel) run(s) at once + ≈ \(RunEstimate.bytes(writer)) writing the results of \(total) run(s))")
        print("  work ≈ \(RunEstimate.count(totalWork)) sample-steps\(experiment.isSampled ? " (extrapolated)" : "")")
        for line in try resources.diskLines(ExperimentValidation.disk(experiment, report), output: experiment.output) { print("  " + line) }
        print("  limits: memory \(RunEstimate.bytes(limits.memoryBytes)), work \(RunEstimate.count(limits.work)), "
            + "\(RunEstimate.count(limits.flops)) FLOPs per run")
    }
}
