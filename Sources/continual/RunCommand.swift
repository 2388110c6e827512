import ArgumentParser
import ContinualExperiments
import Foundation

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run an experiment file and write its HDF5 results.",
        discussion: """
        Runs every variant of FILE.json one after another, prints the accuracy matrix and the \
        metrics of each, and writes results/NAME.h5 (or the file's "output", or --output). The \
        file is written under a temporary name and renamed when complete.
        """
    )

    @Argument(help: "Experiment file (JSON).")
    var file: String

    @Option(name: .shortAndLong, help: "Results file to write (default: the experiment's \"output\", else results/NAME.h5).")
    var output: String?

    @Flag(name: .shortAndLong, help: "Print only the comparison table and the results path.")
    var quiet = false

    func run() throws {
        let experiment: ExperimentFile
        do {
            experiment = try ExperimentFile.load(path: file)
        } catch let error as ConfigError {
            throw CLIFailure.badInput(error.description)
        }
        let path = output ?? experiment.output
        var results: [RunResult] = []
        for run in experiment.runs {
            let result = RunExecutor.execute(run)
            if !quiet { print(SummaryText.run(result) + "\n") }
            results.append(result)
        }
        print(SummaryText.comparison(results))
        do {
            try ResultsWriter.writeExperiment(results, experiment: experiment, to: path)
        } catch {
            throw CLIFailure.runFailed("cannot write \(path): \(error)")
        }
        print("results: \(path)")
        let failed = results.filter { $0.status != .completed }
        if !failed.isEmpty {
            throw CLIFailure.runFailed("\(failed.count) of \(results.count) runs did not complete: "
                + failed.map { "\($0.name) (\($0.status.rawValue): \($0.message))" }.joined(separator: "; "))
        }
    }
}
