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

    @Option(help: "Time only this model's training step: hidden widths, e.g. 256,256 (with --inputs, --classes, --batch); prints one JSON line.")
    var hidden: String?

    @Option(help: "Inputs of the --hidden model.")
    var inputs = 10

    @Option(help: "Classes of the --hidden model (2: one logit, binary; more: softmax).")
    var classes = 2

    @Option(help: "Batch size of the --hidden model.")
    var batch = 32

    @Option(help: "Threads per dense product (results do not depend on it).")
    var threads = 1

    @Flag(help: "Also measure this core's peaks in the same run (the toolkit's fastest path on a 1024³ product, and FMA chains in registers) and print each step's share of them.")
    var peak = false

    func run() throws {
        guard (1...ExperimentFile.maximumThreads).contains(threads) else {
            throw CLIFailure.badInput("--threads: expected an integer from 1 to \(ExperimentFile.maximumThreads), got \(threads)")
        }
        Kernels.threads = threads
        if let hidden { return try single(hidden) }
        #if DEBUG
        print("warning: debug build — numbers are not representative (use swift run -c release continual bench)")
        #endif
        print("dense kernels: \(Kernels.path) path, numerics version \(Kernels.numericsVersion), \(Kernels.threads) thread(s)")
        print("machine: \(MachineInfo.current().summary)")
        let peaks = peak ? PeakProbe.measure() : nil
        if let peaks {
            print(pad("peak, one core: toolkit sgemm \(peaks.size)³ (\(peaks.path))") + String(format: "%10.1f GFLOP/s", peaks.sgemmGFLOPS))
            print(pad("peak, one core: FMA chains in registers") + String(format: "%10.1f GFLOP/s", peaks.fmaGFLOPS))
        }
        let seed = MLPSpec(inputs: 10, hidden: [16, 8], activation: .relu, head: .binary)
        let sgd = OptimizerSpec.sgd(learningRate: 0.05, momentum: 0.9)
        for m in [
            Benchmarks.trainingThroughput(spec: seed, batch: 32, optimizer: sgd, steps: steps),
            Benchmarks.trainingThroughput(spec: seed, batch: 32, optimizer: .adam(learningRate: 0.001), steps: steps),
            Benchmarks.trainingThroughput(spec: MLPSpec(inputs: 64, hidden: [128, 64], head: .multiclass(classes: 10)),
                                          batch: 64, optimizer: sgd, steps: max(steps / 50, 100)),
        ] {
            var line = pad(m.name) + String(format: "%10.2f M samples/s   (%@", m.value / 1e6, m.detail as NSString)
            if let g = m.gflopsPerCore {
                line += String(format: "; dense products %.1f GFLOP/s per core", g)
                if let peaks { line += ", " + peaks.shares(g) }
            }
            print(line + ")")
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

extension BenchCommand {
    /// One model's SGD training step (forward, loss, backward, step) on one fixed batch: the best
    /// of 5 repetitions of `--steps` steps by wall time and by CPU time (the process's, every
    /// thread; and the calling thread's), the dense products' GFLOP/s per core (by process CPU
    /// time) and in total (by wall time), the machine, and with `--peak` the peaks measured in
    /// this run and the step's share of them. For Experiments/bench/width_batch.py.
    func single(_ hidden: String) throws {
        let widths = hidden.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !widths.isEmpty, widths.allSatisfy({ ($0 ?? 0) >= 1 && ($0 ?? 0) <= 65_536 }) else {
            throw CLIFailure.badInput("--hidden: expected widths from 1 to 65536 separated by commas, got \"\(hidden)\"")
        }
        guard inputs >= 1, classes >= 2, batch >= 1, batch <= 1 << 20, steps >= 1 else {
            throw CLIFailure.badInput("--inputs, --batch and --steps must be ≥ 1 and --classes ≥ 2")
        }
        let spec = MLPSpec(inputs: inputs, hidden: widths.map { $0! }, activation: .relu,
                           head: classes == 2 ? .binary : .multiclass(classes: classes))
        Kernels.resetThreadsUsed()
        let t = Benchmarks.trainingStep(spec: spec, batch: batch, optimizer: .sgd(learningRate: 0.01, momentum: 0),
                                        steps: steps)
        var json: [String: Any] = [
            "kernel_path": Kernels.path, "numerics_version": Kernels.numericsVersion, "threads": Kernels.threads,
            "threads_used": Kernels.threadsUsed,
            "inputs": inputs, "hidden": widths.map { $0! }, "classes": classes, "batch": batch, "steps": steps,
            "wall_seconds_per_step": t.wall, "cpu_seconds_per_step": t.processCPU,
            "thread_cpu_seconds_per_step": t.threadCPU, "flops_per_step": t.flops,
            "gflops": t.gflopsPerCore, "gflops_per_core": t.gflopsPerCore, "gflops_total": t.gflopsTotal,
        ]
        json.merge(MachineInfo.current().json) { a, _ in a }
        if peak { json.merge(PeakProbe.measure().json(step: t.gflopsPerCore)) { a, _ in a } }
        let data = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }
}

/// Left-aligns a label in a 60-column field.
private func pad(_ text: String) -> String {
    text.count >= 60 ? text + " " : text.padding(toLength: 60, withPad: " ", startingAt: 0)
}
