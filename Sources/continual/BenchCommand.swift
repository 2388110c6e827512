import ArgumentParser
import ContinualCore
import ContinualExperiments
import Foundation

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure training throughput, prediction latency and the quickstart's wall time.",
        discussion: "Build with -c release for meaningful numbers: swift run -c release continual bench"
    )

    @Option(help: "Optimizer steps per timed repetition.")
    var steps = 200_000

    @Option(help: "Experiment to time end to end (all its runs, results written to a temporary file).")
    var experiment = "Experiments/quickstart.json"

    func run() throws {
        #if DEBUG
        print("warning: debug build — numbers are not representative (use swift run -c release continual bench)")
        #endif
        let seed = MLPSpec(inputs: 10, hidden: [16, 8], activation: .relu, head: .binary)
        let sgd = OptimizerSpec.sgd(learningRate: 0.05, momentum: 0.9)
        for m in [
            Benchmarks.trainingThroughput(spec: seed, batch: 32, optimizer: sgd, steps: steps),
            Benchmarks.trainingThroughput(spec: seed, batch: 32, optimizer: .adam(learningRate: 0.001), steps: steps),
            Benchmarks.trainingThroughput(spec: MLPSpec(inputs: 64, hidden: [128, 64], head: .multiclass(classes: 10)),
                                          batch: 64, optimizer: sgd, steps: max(steps / 50, 100)),
        ] {
            print(pad(m.name) + String(format: "%10.2f M samples/s   (%@)", m.value / 1e6, m.detail as NSString))
        }
        let latency = Benchmarks.predictionLatency(spec: seed, calls: 1_000_000)
        print(pad(latency.name) + String(format: "%10.1f ns           (%@)", latency.value * 1e9, latency.detail as NSString))

        guard FileManager.default.fileExists(atPath: experiment) else {
            print("(no \(experiment); skipping the end-to-end timing)")
            return
        }
        let file: ExperimentFile
        do { file = try ExperimentFile.load(path: experiment) } catch let e as ConfigError { throw CLIFailure.badInput(e.description) }
        let clock = ContinuousClock()
        let start = clock.now
        var results: [RunResult] = []
        for run in file.runs { results.append(RunExecutor.execute(run)) }
        let compute = clock.now - start
        let path = NSTemporaryDirectory() + "continual-bench-\(ProcessInfo.processInfo.processIdentifier).h5"
        try ResultsWriter.writeExperiment(results, experiment: file, to: path)
        let total = clock.now - start
        try? FileManager.default.removeItem(atPath: path)
        for r in results {
            if let o = r.outcome {
                let processed = o.samplesProcessed.reduce(0, +)
                print("  " + r.name.padding(toLength: 20, withPad: " ", startingAt: 0)
                    + String(format: " train %.3f s (%.2f M samples/s through the Trainer), eval %.4f s",
                             o.trainSeconds, Double(processed) / o.trainSeconds / 1e6, o.evalSeconds))
            }
        }
        print(pad("end to end: \(file.name)") + String(format: "%10.3f s             (%d runs; %.3f s computing, rest writing HDF5)",
                                                      total.seconds, results.count, compute.seconds))
    }
}

/// Left-aligns a label in a 60-column field.
private func pad(_ text: String) -> String {
    text.count >= 60 ? text + " " : text.padding(toLength: 60, withPad: " ", startingAt: 0)
}
