import ContinualCore
import ContinualScenarios
import ContinualStrategies
import Testing

@Suite struct MemoryAwareSynapsesTests {
    /// ‖F(x)‖² of one sample, in float64 from the float32 logits.
    static func squaredNorm(_ model: MLP, _ x: ArraySlice<Float>) -> Double {
        let ws = model.makeWorkspace(capacity: 1)
        Array(x).withUnsafeBufferPointer { model.forward($0.baseAddress!, count: 1, route: 0, workspace: ws) }
        return (0..<model.logitCount).reduce(0.0) { $0 + Double(ws.logits[$1]) * Double(ws.logits[$1]) }
    }

    /// Ω_i = mean over samples of |∂‖F(x)‖²/∂θ_i|, against central finite differences of ‖F(x)‖²
    /// per sample (binary and 3-class heads, tanh so the function is smooth).
    @Test(arguments: [1, 3])
    func importanceMatchesFiniteDifferencesOfTheOutputNorm(_ classes: Int) {
        let head: OutputHead = classes == 1 ? .binary : .multiclass(classes: classes)
        var rng = RandomSource(seed: 12)
        let model = MLP(spec: MLPSpec(inputs: 4, hidden: [5], activation: .tanh, head: head), rng: &rng)
        var samples = Samples(dimension: 4)
        for _ in 0..<6 {
            samples.features += (0..<4).map { _ in Float(rng.uniform(-1, 1)) }
            samples.labels.append(0)
        }
        let omega = MemoryAwareSynapses.importance(model: model, samples: samples, route: 0, estimator: .sample,
                                                   batchSize: 1, workspace: model.makeWorkspace())
        let h: Float = 1e-2
        for i in model.parameters.indices {
            var numeric = 0.0
            for k in 0..<samples.count {
                var up = model, down = model
                up.parameters[i] += h
                down.parameters[i] -= h
                numeric += abs((Self.squaredNorm(up, samples.row(k)) - Self.squaredNorm(down, samples.row(k))) / Double(2 * h))
            }
            numeric /= Double(samples.count)
            #expect(abs(numeric - omega[i]) <= 2e-3 * max(1, numeric), "parameter \(i): \(numeric) vs \(omega[i])")
        }
        // Batched: |mean gradient| ≤ mean |gradient| elementwise.
        let batched = MemoryAwareSynapses.importance(model: model, samples: samples, route: 0, estimator: .batched,
                                                     batchSize: 6, workspace: model.makeWorkspace())
        #expect(zip(batched, omega).allSatisfy { $0 <= $1 + 1e-6 })
    }

    @Test func reducesForgettingOnHabitDriftAndAccumulates() throws {
        let stream = try HabitDriftScenario(trainPerExperience: 600, testPerExperience: 300).makeStream(seed: 2)
        func run(_ plugins: [any StrategyPlugin]) throws -> (TrainingOutcome, Trainer) {
            var t = Trainer(spec: MLPSpec(inputs: 10, hidden: [16, 8]), optimizer: .adam(learningRate: 0.005),
                            options: TrainingOptions(epochs: 10), plugins: plugins, seed: 1)
            return (try t.run(stream), t)
        }
        func bwt(_ r: [[Double]]) -> Double { (0..<(r.count - 1)).map { r[r.count - 1][$0] - r[$0][$0] }.reduce(0, +) / Double(r.count - 1) }
        let (naive, _) = try run([])
        let (mas, t) = try run([MemoryAwareSynapses(options: .init(lambda: 10))])
        #expect(bwt(mas.accuracy) > bwt(naive.accuracy) + 0.05)
        let plugin = try #require(t.plugins[0] as? MemoryAwareSynapses)
        #expect(plugin.importance.contains { $0 > 0 } && plugin.importance.allSatisfy { $0 >= 0 })
    }
}
