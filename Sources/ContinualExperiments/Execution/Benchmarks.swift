import ContinualCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Micro and macro benchmarks of the training kernels, printed by `continual bench`.
/// Timings are wall-clock on the calling thread; take the best of several repetitions.
public enum Benchmarks {
    public struct Measurement: Sendable {
        public var name: String
        public var value: Double
        public var unit: String
        public var detail: String
        /// The dense products' GFLOP/s per core, where the measurement is a training step.
        public var gflopsPerCore: Double? = nil
    }

    /// Training throughput of forward + backward + optimizer step on one batch, in samples/s (by
    /// wall time), with the dense products' GFLOP/s per core (by the process's CPU time).
    public static func trainingThroughput(spec: MLPSpec, batch: Int, optimizer: OptimizerSpec,
                                          steps: Int, repetitions: Int = 5) -> Measurement {
        let t = trainingStep(spec: spec, batch: batch, optimizer: optimizer, steps: steps, repetitions: repetitions)
        let sizes = ([spec.inputs] + spec.hidden + [spec.head.logitCount]).map(String.init).joined(separator: "→")
        // The optimizer is part of the label: the SGD and Adam lines would otherwise read the same.
        return Measurement(name: "training throughput \(sizes), batch \(batch), \(optimizerLabel(optimizer))",
                           value: Double(batch) / t.wall, unit: "samples/s",
                           detail: String(format: "%.2f µs per step, %.2f CPU-µs", t.wall * 1e6, t.processCPU * 1e6),
                           gflopsPerCore: t.gflopsPerCore)
    }

    /// CPU time of the calling thread, in seconds: on a shared machine it leaves out the time the
    /// thread waited for a core (wall time does not).
    public static func threadCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
    }

    /// CPU time of the whole process (every thread: the helper threads of `Kernels.threads` too),
    /// in seconds. GFLOP/s per core divide by this; dividing by one thread's time overstated them
    /// by the thread count (issue 45.5).
    public static func processCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
    }

    /// Floating-point operations of one training step's dense products: forward, weight gradient
    /// and input gradient (not of the first layer), 2 per multiply-add.
    public static func denseFlopsPerStep(spec: MLPSpec, batch: Int) -> Double {
        let widths = [spec.inputs] + spec.hidden + [spec.head.logitCount]
        var total = 0.0
        for l in 0..<(widths.count - 1) {
            let products = l == 0 ? 2.0 : 3.0
            total += products * 2 * Double(batch) * Double(widths[l]) * Double(widths[l + 1])
        }
        return total
    }

    /// One training step's times (seconds per step, each the best of the repetitions) and its dense
    /// products' floating-point operations.
    public struct StepTiming: Sendable {
        public var wall: Double
        /// The calling thread's CPU time only.
        public var threadCPU: Double
        /// The process's CPU time: every thread, helpers included.
        public var processCPU: Double
        public var flops: Double
        /// Per core: operations ÷ process CPU time (all threads' work over all threads' time).
        public var gflopsPerCore: Double { flops / processCPU / 1e9 }
        /// In total: operations ÷ wall time (all cores together).
        public var gflopsTotal: Double { flops / wall / 1e9 }
    }

    /// Seconds per training step (forward, loss, backward, optimizer step on one fixed batch),
    /// best of `repetitions` × `steps` by wall time, by the thread's and by the process's CPU time.
    /// The step is the Trainer's: one pass (`MLP.sgdStep`) for plain SGD on a dense chain, else
    /// the gradient into zeros, then `Optimizer.step`.
    public static func trainingStep(spec: MLPSpec, batch: Int, optimizer: OptimizerSpec, steps: Int,
                                    repetitions: Int = 5) -> StepTiming {
        var rng = RandomSource(seed: 42, stream: "bench")
        var model = MLP(spec: spec, rng: &rng)
        var opt = Optimizer(spec: optimizer, parameterCount: model.parameterCount)
        let ws = model.makeWorkspace(capacity: batch)
        let x = (0..<(batch * spec.inputs)).map { _ in Float(rng.normal()) }
        let y = (0..<batch).map { _ in Int32(rng.uniformInt(below: spec.head.classCount)) }
        // The gradient as a pointer, not an array used through closures: a closure that used the
        // model copied it every step (each of its arrays retained and released), which the
        // training loop (Trainer.plainDataLoss) does not do.
        let g = UnsafeMutablePointer<Float>.allocate(capacity: model.parameterCount)
        defer { g.deallocate() }
        let clock = ContinuousClock()
        var best = StepTiming(wall: .infinity, threadCPU: .infinity, processCPU: .infinity,
                              flops: denseFlopsPerStep(spec: spec, batch: batch))
        let onePass = model.runsSGDStep(workspace: ws)
        for rep in 0...repetitions {
            let start = clock.now, cpu = threadCPUSeconds(), process = processCPUSeconds()
            for _ in 0..<(rep == 0 ? max(steps / 10, 1) : steps) {
                if onePass, let (lr, wd) = opt.beginPlainSGDStep() {
                    _ = model.sgdStep(features: x, labels: y, count: batch, scale: 1 / Float(batch), learningRate: lr,
                                      weightDecay: wd, workspace: ws, scratch: g)
                    continue
                }
                g.update(repeating: 0, count: model.parameterCount)
                _ = model.lossAndGradient(features: x, labels: y, count: batch, route: 0,
                                          scale: 1 / Float(batch), workspace: ws, gradient: g)
                opt.step(parameters: &model.parameters, gradient: g, trainable: nil)
            }
            if rep > 0 {
                best.wall = min(best.wall, (clock.now - start).seconds / Double(steps))
                best.threadCPU = min(best.threadCPU, (threadCPUSeconds() - cpu) / Double(steps))
                best.processCPU = min(best.processCPU, (processCPUSeconds() - process) / Double(steps))
            }
        }
        return best
    }

    /// "SGD", "SGD momentum 0.9", "Adam", "AdamW": what a benchmark line trained with.
    static func optimizerLabel(_ spec: OptimizerSpec) -> String {
        switch spec {
        case .sgd(_, let momentum, _, let nesterov):
            return momentum == 0 ? "SGD" : "SGD \(nesterov ? "Nesterov " : "")momentum \(momentum)"
        case .adam: return "Adam"
        case .adamw: return "AdamW"
        case .adafactor: return "Adafactor"
        case .adam8bit: return "8-bit Adam"
        }
    }

    /// Latency of predicting one sample (forward + decision), in seconds.
    public static func predictionLatency(spec: MLPSpec, calls: Int, repetitions: Int = 5) -> Measurement {
        var rng = RandomSource(seed: 43, stream: "bench")
        let model = MLP(spec: spec, rng: &rng)
        let ws = model.makeWorkspace(capacity: 1)
        let x = (0..<spec.inputs).map { _ in Float(rng.normal()) }
        var out: Int32 = 0
        var ones = 0
        let clock = ContinuousClock()
        var best = Duration.seconds(1_000_000)
        for _ in 0..<repetitions {
            let start = clock.now
            x.withUnsafeBufferPointer { xp in
                for _ in 0..<calls {
                    model.predict(xp.baseAddress!, count: 1, route: 0, workspace: ws, into: &out)
                    ones &+= Int(out)
                }
            }
            best = min(best, clock.now - start)
        }
        return Measurement(name: "prediction latency, one sample", value: best.seconds / Double(calls), unit: "s",
                           detail: "best of \(repetitions) × \(calls) calls (\(ones % 2))")
    }
}
