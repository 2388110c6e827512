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
    }

    /// Training throughput of forward + backward + optimizer step on one batch, in samples/s.
    public static func trainingThroughput(spec: MLPSpec, batch: Int, optimizer: OptimizerSpec,
                                          steps: Int, repetitions: Int = 5) -> Measurement {
        var rng = RandomSource(seed: 42, stream: "bench")
        var model = MLP(spec: spec, rng: &rng)
        var opt = Optimizer(spec: optimizer, parameterCount: model.parameterCount)
        let ws = model.makeWorkspace(capacity: batch)
        let x = (0..<(batch * spec.inputs)).map { _ in Float(rng.normal()) }
        let y = (0..<batch).map { _ in Int32(rng.uniformInt(below: spec.head.classCount)) }
        var g = [Float](repeating: 0, count: model.parameterCount)
        let clock = ContinuousClock()
        var best = Duration.seconds(1_000_000)
        var sink = 0.0
        for rep in 0...repetitions {
            let start = clock.now
            for _ in 0..<(rep == 0 ? steps / 10 : steps) {
                g.withUnsafeMutableBufferPointer { gp in
                    gp.update(repeating: 0)
                    sink += model.lossAndGradient(features: x, labels: y, count: batch, route: 0,
                                                  scale: 1 / Float(batch), workspace: ws, gradient: gp.baseAddress!)
                }
                g.withUnsafeBufferPointer { gp in
                    opt.step(parameters: &model.parameters, gradient: gp.baseAddress!, trainable: nil)
                }
            }
            if rep > 0 { best = min(best, clock.now - start) }
        }
        let seconds = best.seconds
        let perStep = seconds / Double(steps)
        let sizes = ([spec.inputs] + spec.hidden + [spec.head.logitCount]).map(String.init).joined(separator: "→")
        // The optimizer is part of the label: the SGD and Adam lines would otherwise read the same.
        return Measurement(name: "training throughput \(sizes), batch \(batch), \(optimizerLabel(optimizer))",
                           value: Double(batch * steps) / seconds, unit: "samples/s",
                           detail: String(format: "%.2f µs per step (loss sink %.1f)", perStep * 1e6, sink.truncatingRemainder(dividingBy: 10)))
    }

    /// CPU time of the calling thread, in seconds: on a shared machine it leaves out the time the
    /// thread waited for a core (wall time does not).
    public static func threadCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
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

    /// Seconds per training step (forward, loss, backward, optimizer step on one fixed batch),
    /// best of `repetitions` × `steps` by wall time and by the thread's CPU time, and the dense
    /// products' floating-point operations per step.
    public static func trainingStep(spec: MLPSpec, batch: Int, optimizer: OptimizerSpec, steps: Int,
                                    repetitions: Int = 5) -> (wall: Double, cpu: Double, flops: Double) {
        var rng = RandomSource(seed: 42, stream: "bench")
        var model = MLP(spec: spec, rng: &rng)
        var opt = Optimizer(spec: optimizer, parameterCount: model.parameterCount)
        let ws = model.makeWorkspace(capacity: batch)
        let x = (0..<(batch * spec.inputs)).map { _ in Float(rng.normal()) }
        let y = (0..<batch).map { _ in Int32(rng.uniformInt(below: spec.head.classCount)) }
        var g = [Float](repeating: 0, count: model.parameterCount)
        let clock = ContinuousClock()
        var bestWall = Double.infinity, bestCPU = Double.infinity
        for rep in 0...repetitions {
            let start = clock.now, cpu = threadCPUSeconds()
            for _ in 0..<(rep == 0 ? max(steps / 10, 1) : steps) {
                g.withUnsafeMutableBufferPointer { gp in
                    gp.update(repeating: 0)
                    _ = model.lossAndGradient(features: x, labels: y, count: batch, route: 0,
                                              scale: 1 / Float(batch), workspace: ws, gradient: gp.baseAddress!)
                }
                g.withUnsafeBufferPointer { gp in
                    opt.step(parameters: &model.parameters, gradient: gp.baseAddress!, trainable: nil)
                }
            }
            if rep > 0 {
                bestWall = min(bestWall, (clock.now - start).seconds / Double(steps))
                bestCPU = min(bestCPU, (threadCPUSeconds() - cpu) / Double(steps))
            }
        }
        return (bestWall, bestCPU, denseFlopsPerStep(spec: spec, batch: batch))
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
