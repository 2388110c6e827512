import ArgumentParser
import ContinualExperiments

struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check an experiment file without running it.",
        discussion: "Prints the runs it expands to, with their ids; --resolved prints each run's full config with defaults."
    )

    @Argument(help: "Experiment file (JSON).")
    var file: String

    @Flag(help: "Print every run's resolved configuration (canonical JSON).")
    var resolved = false

    func run() throws {
        do {
            let experiment = try ExperimentFile.load(path: file)
            print("\(file): ok — experiment \"\(experiment.name)\", \(experiment.runs.count) run(s), output \(experiment.output)")
            if experiment.isSweep {
                print("  sweep over \(experiment.sweptPaths.joined(separator: ", ")); run with: continual sweep \(file)")
            }
            for n in experiment.notes { print("  note: \(n)") }
            for r in experiment.runs {
                print("  \(r.runId)  \(r.config.name)  strategy=\(r.config.strategyLabel)  seed=\(r.config.seed)")
                if resolved { print("    " + r.canonicalJSON) }
            }
        } catch let error as ConfigError {
            throw CLIFailure.badInput(error.description)
        }
    }
}
