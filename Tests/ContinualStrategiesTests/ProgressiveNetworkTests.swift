import Foundation
import Testing
@testable import ContinualCore
@testable import ContinualStrategies

/// Progressive Neural Networks (Rusu et al. 2016): the gradient of a column's own and lateral
/// weights against finite differences; earlier tasks' predictions bit-identical after later
/// training; the parameter growth counted by hand and reported.
@Suite struct ProgressiveNetworkTests {
    static func context(_ i: Int, _ T: Int) -> ExperienceContext {
        ExperienceContext(index: i, experiences: HATTests.experiences(T), route: Int32(i))
    }

    /// d/dθ mean CE(column 2(x)) for every parameter θ of column 2 (own weights, biases, laterals
    /// from the model and from column 1), by central differences. (Smooth activations: a step of
    /// 1e-2 moves ReLU units across their kink; ReLU's backward is the model's, tested there.)
    @Test(arguments: [Activation.tanh, .sigmoid])
    func columnGradientMatchesFiniteDifferences(_ activation: Activation) throws {
        var rng = RandomSource(seed: 5)
        let spec = MLPSpec(inputs: 4, hidden: [5, 3], activation: activation, head: .multiclass(classes: 3))
        var model = MLP(spec: spec, rng: &rng)
        var pnn = ProgressiveNetwork(options: ProgressiveNetwork.Options())
        try pnn.prepare(model: &model, context: HATTests.runContext(3))
        let ws = model.makeWorkspace(capacity: 8)
        for k in 0..<2 {
            try pnn.beforeExperience(model: &model, context: Self.context(k, 3))
            try pnn.afterExperience(model: &model, context: Self.context(k, 3), workspace: ws)
        }
        try pnn.beforeExperience(model: &model, context: Self.context(2, 3))
        #expect(model.trainable == [Bool](repeating: false, count: model.parameterCount), "column 0 is frozen")
        let x = (0..<(6 * 4)).map { _ in Float(rng.normal()) }
        let y: [Int32] = [0, 1, 2, 2, 1, 0]
        let step = StepIndex(experience: 2)

        func loss(_ block: [Float]) -> Double {
            pnn.parameterBlock = block
            model.forward(x, count: 6, route: 0, workspace: ws)
            let replaced = x.withUnsafeBufferPointer {
                pnn.columnForward(model: model, input: $0.baseAddress!, count: 6, route: 0, workspace: ws, step: step)
            }
            precondition(replaced)
            return Loss.lossAndLogitGradient(head: spec.head, logits: ws.logits, labels: y, count: 6, scale: 1) / 6
        }
        let theta = pnn.parameterBlock
        model.forward(x, count: 6, route: 0, workspace: ws)
        _ = x.withUnsafeBufferPointer {
            pnn.columnForward(model: model, input: $0.baseAddress!, count: 6, route: 0, workspace: ws, step: step)
        }
        _ = Loss.lossAndLogitGradient(head: spec.head, logits: ws.logits, labels: y, count: 6, scale: 1 / 6)
        var modelGradient = [Float](repeating: 0, count: model.parameterCount)
        pnn.parameterBlockGradient = [Float](repeating: 0, count: theta.count)
        modelGradient.withUnsafeMutableBufferPointer {
            pnn.columnBackward(model: model, logitGradient: ws.logits, count: 6, route: 0, workspace: ws, gradient: $0.baseAddress!)
        }
        let analytic = pnn.parameterBlockGradient
        #expect(modelGradient.allSatisfy { $0 == 0 }, "no gradient reaches the frozen model")
        let h: Float = 1e-2
        var worst = 0.0
        for i in theta.indices {
            var up = theta, down = theta
            up[i] += h
            down[i] -= h
            let numeric = (loss(up) - loss(down)) / Double(2 * h)
            worst = max(worst, abs(numeric - Double(analytic[i])) / max(0.05, abs(numeric)))
        }
        #expect(worst < 5e-3, "column gradient relative error \(worst)")
        // The laterals from the model (column 0) and from column 1 into layer 2 get gradient.
        let widths = [4, 5, 3, 3]
        let l2 = ProgressiveNetwork.layerOffset(widths: widths, column: 2, layer: 2, lateral: true) + 5 * 3 + 3
        #expect(analytic[l2..<(l2 + 2 * 5 * 3)].contains { $0 != 0 })
    }

    static func trainer(tasks: Int = 3) -> Trainer {
        let spec = MLPSpec(inputs: 10, hidden: [16, 16], activation: .relu, head: .multiclass(classes: 2), heads: tasks)
        return Trainer(spec: spec, optimizer: .adam(learningRate: 0.01), options: TrainingOptions(epochs: 6, batchSize: 16),
                       plugins: [ProgressiveNetwork(options: .init())], seed: 4)
    }

    @Test func earlierTasksPredictionsAreBitIdenticalAfterLaterTraining() throws {
        let stream = HATTests.stream(tasks: 3)
        var partial = Self.trainer()
        _ = try partial.run(stream, resumingFrom: nil, stopAfter: 1)
        var plugins = partial.plugins
        let before = Trainer.evaluations(model: partial.model, plugins: &plugins, experiences: stream.experiences,
                                         workspace: partial.model.makeWorkspace())
        var full = Self.trainer()
        let o = try full.run(stream)
        let final = o.finalPredictions
        for j in 0...1 { #expect(final[j] == before[j].predictions, "task \(j)'s predictions changed") }
        for j in 0..<3 {
            #expect(o.accuracy[j][j] > 0.85, "task \(j) learned: \(o.accuracy[j][j])")
            for i in j..<3 { #expect(o.accuracy[i][j] == o.accuracy[j][j]) }
        }
        #expect(o.finalModel.parameters == partial.model.parameters, "column 0 never moves after the first task")
    }

    /// widths 10 → 16 → 16 → 2: column k has 10·16+16 + (16·16+16)(own) + k·16·16 + (16·2+2) + k·16·2.
    @Test func parameterGrowthIsCountedAndReported() throws {
        func expected(_ k: Int) -> Int { 10 * 16 + 16 + 16 * 16 + 16 + k * 16 * 16 + 16 * 2 + 2 + k * 16 * 2 }
        let widths = [10, 16, 16, 2]
        for k in 1...3 { #expect(ProgressiveNetwork.parameterCount(widths: widths, column: k, lateral: true) == expected(k)) }
        #expect(ProgressiveNetwork.parameterCount(widths: widths, column: 3, lateral: false) == expected(0))
        var t = Self.trainer()
        let o = try t.run(HATTests.stream(tasks: 3))
        let report = try #require(o.pluginReports.first?.1)
        let per = try #require(report.arrays["parameters_per_column"]?.values)
        let model = 10 * 16 + 16 + 16 * 16 + 16 + 16 * 2 + 2
        #expect(per == [Double(model), Double(expected(1)), Double(expected(2))])
        #expect(report.attributes["total_parameters"] == .int(Int64(model + expected(1) + expected(2))))
        // Resources: the frozen and the live column are state; the live one is trained.
        let r = try #require(o.pluginResources.first)
        #expect(r.ownedParameters == expected(2))
        #expect(r.stateBytes == 4 * (expected(1) + expected(2)))
        #expect(r.extraFLOPsPerStep > 0)
    }

    @Test func badOptionsNameTheirKey() {
        for (json, key) in [(#"{"lateral": 1}"#, "lateral"), (#"{"laterals": true}"#, "laterals")] {
            do {
                _ = try JSONDecoder().decode(ProgressiveNetwork.Options.self, from: Data(json.utf8))
                Issue.record("\(json) accepted")
            } catch {
                #expect("\(error)".contains(key), "\(error)")
            }
        }
    }
}
