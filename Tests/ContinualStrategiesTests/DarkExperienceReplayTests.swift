@testable import ContinualCore
import ContinualScenarios
@testable import ContinualStrategies
import Testing

@Suite struct DarkExperienceReplayTests {
    static func input(_ batch: Batch, _ logits: inout [Float], _ gradient: inout [Float], model: MLP,
                      _ body: (BatchLossInput) -> Double) -> Double {
        logits.withUnsafeMutableBufferPointer { z in
            gradient.withUnsafeMutableBufferPointer { g in
                body(BatchLossInput(batch: batch, rows: Array(0..<batch.count)[...], route: 0, logits: UnsafePointer(z.baseAddress!),
                                    logitGradient: g.baseAddress!, logitCount: model.logitCount,
                                    scale: 1 / Float(batch.count), model: model, experienceIndex: 0))
            }
        }
    }

    /// The buffer stores each offered row with the logits it had at that step, and the MSE term's
    /// gradient matches finite differences of its value.
    @Test func storedLogitsAreTheLogitsAtStorageTimeAndTheTermsGradientIsRight() throws {
        var rng = RandomSource(seed: 8)
        var model = MLP(spec: MLPSpec(inputs: 3, hidden: [4], head: .multiclass(classes: 3)), rng: &rng)
        var der = DarkExperienceReplay(plusPlus: true, alpha: 0.4, beta: 0.7, capacity: 100, replayPerBatch: 3)
        try der.prepare(model: &model, context: RunContext(seed: 2, pluginIndex: 0, experienceCount: 1, dimension: 3,
                                                             head: .multiclass(classes: 3), training: TrainingOptions()))
        // Step 1: four own rows are offered with their logits.
        var batch = Batch(dimension: 3, capacity: 16)
        for i in 0..<4 { batch.append(features: [Float(i), 1, -1], label: Int32(i % 3), route: 0) }
        batch.ownCount = 4
        var z1: [Float] = (0..<12).map { _ in Float(rng.uniform(-2, 2)) }
        var g1 = [Float](repeating: 0, count: 12)
        _ = Self.input(batch, &z1, &g1, model: model) { der.addBatchLoss($0) }
        #expect(der.buffer.count == 4)
        #expect(der.buffer.logits == z1)          // the logits at storage time, row by row
        #expect(der.buffer.labels == [0, 1, 2, 0])

        // Step 2: own rows + replayed rows (noTaskLoss); the replay terms' gradient vs finite differences.
        var step = Batch(dimension: 3, capacity: 16)
        for i in 0..<2 { step.append(features: [1, Float(i), 0], label: 1, route: 0) }
        step.ownCount = 2
        let context = ExperienceContext(index: 0, experiences: [], route: 0)
        der.extendBatch(&step, context: context)
        #expect(step.count == 2 + 3 + 3)
        #expect(step.labels[2..<step.count].allSatisfy { $0 == Batch.noTaskLoss })
        let frozen = der  // the value the finite differences evaluate (the buffer must not change)
        func value(_ z: [Float]) -> Double {
            var copy = frozen, zz = z, gg = [Float](repeating: 0, count: z.count)
            // Only replayed rows: own rows would be offered to the buffer.
            var replayOnly = step
            replayOnly.ownCount = 0
            return Self.input(replayOnly, &zz, &gg, model: model) { copy.addBatchLoss($0) }
        }
        var z2: [Float] = (0..<(step.count * 3)).map { _ in Float(rng.uniform(-2, 2)) }
        var g2 = [Float](repeating: 0, count: z2.count)
        var replayOnly = step
        replayOnly.ownCount = 0
        var copy = frozen
        _ = Self.input(replayOnly, &z2, &g2, model: model) { copy.addBatchLoss($0) }
        let h: Float = 1e-2
        for i in 6..<z2.count {
            var up = z2, down = z2
            up[i] += h
            down[i] -= h
            let numeric = (value(up) - value(down)) / Double(2 * h)
            #expect(abs(numeric - Double(g2[i])) < 2e-3, "logit \(i): \(numeric) vs \(g2[i])")
        }
    }

    @Test func reducesForgettingOnHabitDrift() throws {
        let stream = try HabitDriftScenario(trainPerExperience: 600, testPerExperience: 300).makeStream(seed: 2)
        func bwt(_ plugins: [any StrategyPlugin]) throws -> Double {
            var t = Trainer(spec: MLPSpec(inputs: 10, hidden: [16, 8]), optimizer: .adam(learningRate: 0.005),
                            options: TrainingOptions(epochs: 5), plugins: plugins, seed: 1)
            let r = try t.run(stream).accuracy
            return (0..<(r.count - 1)).map { r[r.count - 1][$0] - r[$0][$0] }.reduce(0, +) / Double(r.count - 1)
        }
        let naive = try bwt([])
        let derpp = try bwt([DERPlusPlusOptions().makePlugin()])
        #expect(derpp > naive + 0.05)
    }
}
