import ContinualCore

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

    /// "SGD", "SGD momentum 0.9", "Adam", "AdamW": what a benchmark line trained with.
    static func optimizerLabel(_ spec: OptimizerSpec) -> String {
        switch spec {
        case .sgd(_, let momentum, _, let nesterov):
            return momentum == 0 ? "SGD" : "SGD \(nesterov ? "Nesterov " : "")momentum \(momentum)"
        case .adam: return "Adam"
        case .adamw: return "AdamW"
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
