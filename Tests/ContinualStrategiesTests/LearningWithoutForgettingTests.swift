import ContinualCore
import ContinualScenarios
import ContinualStrategies
import Foundation
import Testing

@Suite struct LearningWithoutForgettingTests {
    static let spec = MLPSpec(inputs: 10, hidden: [16, 8])

    static func stream(seed: UInt64) throws -> ExperienceStream {
        try HabitDriftScenario(trainPerExperience: 600, testPerExperience: 300).makeStream(seed: seed)
    }

    func train(_ plugins: [any StrategyPlugin], stream: ExperienceStream, seed: UInt64 = 1) throws -> TrainingOutcome {
        var t = Trainer(spec: Self.spec, optimizer: .adam(learningRate: 0.005), options: TrainingOptions(epochs: 10),
                        plugins: plugins, seed: seed)
        return try t.run(stream)
    }

    /// The distillation term's value as a function of the logits, in float64, and the plugin's
    /// analytic gradient checked against central finite differences of it.
    @Test("distillation gradient matches finite differences", arguments: [(1, false), (1, true), (4, false), (4, true)])
    func gradientMatchesFiniteDifferences(_ classes: Int, _ scaled: Bool) throws {
        let head: OutputHead = classes == 1 ? .binary : .multiclass(classes: classes)
        let spec = MLPSpec(inputs: 3, hidden: [5], head: head)
        var rng = RandomSource(seed: 9)
        let oldModel = MLP(spec: spec, rng: &rng)
        var newModel = oldModel
        for i in newModel.parameters.indices { newModel.parameters[i] += Float(rng.uniform() - 0.5) }
        let rows = 6, L = spec.head.logitCount
        var batch = Batch(dimension: 3, capacity: rows)
        for _ in 0..<rows { batch.append(features: (0..<3).map { _ in Float(rng.uniform() * 2 - 1) }, label: 0, route: 0) }

        var plugin = LearningWithoutForgetting(options: .init(lambda: 0.7, temperature: 2, temperatureScaling: scaled))
        var m = newModel
        try plugin.prepare(model: &m, context: RunContext(seed: 1, pluginIndex: 0, experienceCount: 2, dimension: 3,
                                                           head: head, training: TrainingOptions()))
        var old = oldModel
        try plugin.afterExperience(model: &old, context: ExperienceContext(index: 0, experiences: [], route: 0),
                                   workspace: old.makeWorkspace())
        // New model's logits.
        let ws = newModel.makeWorkspace(capacity: rows)
        batch.features.withUnsafeBufferPointer { newModel.forward($0.baseAddress!, count: rows, route: 0, workspace: ws) }
        var logits = Array(UnsafeBufferPointer(start: ws.logits, count: rows * L))

        func value(_ z: [Float]) -> Double {
            var copy = z, grad = [Float](repeating: 0, count: z.count)
            var p = plugin
            return copy.withUnsafeMutableBufferPointer { zc in
                grad.withUnsafeMutableBufferPointer { g in
                    p.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<rows)[...], route: 0,
                                                  logits: UnsafePointer(zc.baseAddress!), logitGradient: g.baseAddress!,
                                                  logitCount: L, scale: 1 / Float(rows), model: newModel, experienceIndex: 1))
                }
            }
        }
        var analytic = [Float](repeating: 0, count: logits.count)
        var p = plugin
        let v0 = logits.withUnsafeMutableBufferPointer { zc in
            analytic.withUnsafeMutableBufferPointer { g in
                p.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<rows)[...], route: 0,
                                              logits: UnsafePointer(zc.baseAddress!), logitGradient: g.baseAddress!,
                                              logitCount: L, scale: 1 / Float(rows), model: newModel, experienceIndex: 1))
            }
        }
        #expect(v0 > 0)
        let h: Float = 1e-2
        for i in logits.indices {
            var up = logits, down = logits
            up[i] += h
            down[i] -= h
            let numeric = (value(up) - value(down)) / Double(2 * h)
            #expect(abs(numeric - Double(analytic[i])) <= 2e-3 * max(1, abs(numeric)), "logit \(i): \(numeric) vs \(analytic[i])")
        }
        // Identical models: the KL term and its gradient vanish.
        batch.features.withUnsafeBufferPointer { oldModel.forward($0.baseAddress!, count: rows, route: 0, workspace: ws) }
        logits = Array(UnsafeBufferPointer(start: ws.logits, count: rows * L))
        #expect(abs(value(logits)) < 1e-6)
    }

    @Test func lambdaZeroIsBitIdenticalToNaive() throws {
        let stream = try Self.stream(seed: 2)
        let a = try train([LearningWithoutForgetting(options: .init(lambda: 0))], stream: stream)
        let b = try train([], stream: stream)
        #expect(a.finalModel.parameters == b.finalModel.parameters)
        #expect(a.accuracy == b.accuracy)
    }

    /// Backward transfer BWT = mean_j<T−1 (R[T−1][j] − R[j][j]) over 3 seeds: LwF forgets less
    /// than naive fine-tuning on habit drift.
    @Test func reducesForgettingOnHabitDrift() throws {
        func bwt(_ r: [[Double]]) -> Double {
            let T = r.count
            return (0..<(T - 1)).map { r[T - 1][$0] - r[$0][$0] }.reduce(0, +) / Double(T - 1)
        }
        var naive: [Double] = [], lwf: [Double] = []
        for seed in UInt64(1)...3 {
            let stream = try Self.stream(seed: seed)
            naive.append(bwt(try train([], stream: stream, seed: seed).accuracy))
            lwf.append(bwt(try train([LearningWithoutForgetting(options: .init(lambda: 4))], stream: stream, seed: seed).accuracy))
        }
        let mn = naive.reduce(0, +) / 3, ml = lwf.reduce(0, +) / 3
        print("LwF habit drift BWT: naive \(naive) mean \(mn); lwf λ=4 \(lwf) mean \(ml)")
        #expect(ml > mn + 0.03)
    }

    @Test func multiHeadModelsAreRefused() throws {
        var spec = Self.spec
        spec.heads = 2
        var t = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1), options: TrainingOptions(epochs: 1),
                        plugins: [LearningWithoutForgetting()], seed: 1)
        let stream = try HabitDriftScenario(trainPerExperience: 50, testPerExperience: 10,
                                            phases: ["morning", "night"].map { HabitPhase.presets[$0]! }).makeStream(seed: 1)
        #expect(throws: TrainingError.self) { _ = try t.run(stream) }
    }
}
