@testable import ContinualCore
import Foundation
import ContinualStrategies
import Testing

@Suite("SynapticIntelligence")
struct SynapticIntelligenceTests {
    /// Feeds `plugin` the steps of gradient descent θ ← θ − η a (θ − m) on the separable quadratic
    /// L(θ) = ½ Σ a_i (θ_i − m_i)², with `extra` added to the *total* gradient only.
    private func descend(_ plugin: inout SynapticIntelligence, from start: [Float], a: [Double], m: [Double],
                         eta: Double, steps: Int, extra: Float = 0) -> [Float] {
        var theta = start
        for t in 0..<steps {
            let task = (0..<2).map { Float(a[$0] * (Double(theta[$0]) - m[$0])) }
            let total = task.map { $0 + extra }
            var after = theta
            for i in 0..<2 { after[i] = Float(Double(theta[i]) - eta * Double(task[i])) }
            task.withUnsafeBufferPointer { tg in
                total.withUnsafeBufferPointer { gg in
                    theta.withUnsafeBufferPointer { b in
                        after.withUnsafeBufferPointer { af in
                            plugin.afterStep(StepObservation(taskGradient: tg, totalGradient: gg, parametersBefore: b,
                                                             parametersAfter: af, experienceIndex: 0, stepInExperience: t))
                        }
                    }
                }
            }
            theta = after
        }
        return theta
    }

    private func started(_ options: SynapticIntelligence.Options, _ start: [Float]) throws -> SynapticIntelligence {
        var plugin = SynapticIntelligence(options: options)
        var model = MLP(spec: MLPSpec(inputs: 1, hidden: [], head: .binary), parameters: start)
        try plugin.prepare(model: &model, context: RunContext(seed: 1, pluginIndex: 0, experienceCount: 1, dimension: 1,
                                                              head: .binary, training: TrainingOptions()))
        let experience = Experience(index: 0, name: "q", train: Samples(dimension: 1), test: Samples(dimension: 1))
        try plugin.beforeExperience(model: &model, context: ExperienceContext(index: 0, experiences: [experience], route: 0))
        return plugin
    }

    /// With d_t = θ_t − m = r^t d_0, r = 1 − η a, each step contributes −g·Δθ = η a² d_t², so
    /// ω = η a² d_0² (1 − r^{2T}) / (1 − r²); then Ω = ω / ((d_T − d_0)² + ξ).
    @Test func omegaMatchesAnalyticPathIntegralOfGradientDescent() throws {
        let a = [2.0, 0.5], m = [1.0, -2.0], eta = 0.1, T = 40, xi = 0.01
        let start: [Float] = [3, 1]
        var plugin = try started(.init(c: 1, xi: xi), start)
        // The penalty-only part of the total gradient must not enter ω in the paper's variant.
        let end = descend(&plugin, from: start, a: a, m: m, eta: eta, steps: T, extra: 0.3)
        for i in 0..<2 {
            let d0 = Double(start[i]) - m[i]
            let r = 1 - eta * a[i]
            let analytic = eta * a[i] * a[i] * d0 * d0 * (1 - pow(r, 2 * Double(T))) / (1 - r * r)
            #expect(Fixture.close(plugin.omega[i], analytic, relative: 1e-5), "ω[\(i)] = \(plugin.omega[i]) vs \(analytic)")
            // And it is close to the loss decrease ½ a (d_0² − d_T²) (exact only as η → 0).
            let dT = pow(r, Double(T)) * d0
            let decrease = 0.5 * a[i] * (d0 * d0 - dT * dT)
            #expect(abs(plugin.omega[i] - decrease) < eta * a[i] * plugin.omega[i])
        }
        let omega = plugin.omega
        plugin.finishExperience(parameters: end)
        for i in 0..<2 {
            let delta = Double(end[i]) - Double(start[i])
            #expect(Fixture.close(plugin.importance[i], omega[i] / (delta * delta + xi), relative: 1e-12))
        }
        #expect(plugin.omega == [0, 0])
        #expect(plugin.anchor == end)
    }

    /// Avalanche's variant uses the total gradient (here shifted by `extra`) and clips Ω at 0.001.
    @Test func totalGradientVariantUsesTotalGradientAndClips() throws {
        let a = [2.0, 0.5], m = [1.0, -2.0], eta = 0.1
        let start: [Float] = [3, 1]
        var task = try started(.init(c: 1, xi: 0.01, gradient: .task), start)
        var total = try started(.init(c: 1, xi: 0.01, gradient: .total), start)
        _ = descend(&task, from: start, a: a, m: m, eta: eta, steps: 10, extra: 0.3)
        let end = descend(&total, from: start, a: a, m: m, eta: eta, steps: 10, extra: 0.3)
        #expect(task.omega != total.omega)
        // Σ_t −(g_t + e)Δθ_t = ω_task − e (θ_T − θ_0).
        for i in 0..<2 {
            let expected = task.omega[i] - 0.3 * (Double(end[i]) - Double(start[i]))
            #expect(Fixture.close(total.omega[i], expected, relative: 1e-5))
        }
        total.finishExperience(parameters: end)
        #expect(total.importance.allSatisfy { $0 > 0.001 })
        #expect(total.penaltyWeights == [0.001, 0.001])
    }

    /// Ω accumulates over experiences; ω restarts at each experience.
    @Test func importanceAccumulatesOverExperiences() throws {
        var plugin = try started(.init(c: 1, xi: 0.1), [3, 1])
        let end1 = descend(&plugin, from: [3, 1], a: [1, 1], m: [0, 0], eta: 0.1, steps: 5)
        plugin.finishExperience(parameters: end1)
        let first = plugin.importance
        var model = MLP(spec: MLPSpec(inputs: 1, hidden: [], head: .binary), parameters: end1)
        let e = Experience(index: 1, name: "q", train: Samples(dimension: 1), test: Samples(dimension: 1))
        try plugin.beforeExperience(model: &model, context: ExperienceContext(index: 0, experiences: [e], route: 0))
        let end2 = descend(&plugin, from: end1, a: [1, 1], m: [2, 2], eta: 0.1, steps: 5)
        let omega2 = plugin.omega
        plugin.finishExperience(parameters: end2)
        for i in 0..<2 {
            let d = Double(end2[i]) - Double(end1[i])
            #expect(Fixture.close(plugin.importance[i], first[i] + omega2[i] / (d * d + 0.1), relative: 1e-12))
        }
    }

    /// Central differences of c Σ Ω (θ − θ̃)² match the added gradient 2c Ω (θ − θ̃).
    @Test func penaltyGradientPassesFiniteDifferenceCheck() throws {
        var plugin = try started(.init(c: 0.7, xi: 0.05), [3, 1])
        let end = descend(&plugin, from: [3, 1], a: [2, 0.5], m: [1, -2], eta: 0.1, steps: 8)
        plugin.finishExperience(parameters: end)
        let theta: [Float] = [0.3, -1.4]
        var gradient: [Float] = [0.5, 0.5]
        func value(_ x: [Float]) -> Double {
            var scratch: [Float] = [0, 0]
            return x.withUnsafeBufferPointer { t in scratch.withUnsafeMutableBufferPointer { plugin.addPenalty(parameters: t, gradient: $0) } }
        }
        _ = theta.withUnsafeBufferPointer { t in gradient.withUnsafeMutableBufferPointer { plugin.addPenalty(parameters: t, gradient: $0) } }
        var expected = 0.0
        for i in 0..<2 {
            var plus = theta, minus = theta
            plus[i] += 1e-2
            minus[i] -= 1e-2
            let numeric = (value(plus) - value(minus)) / Double(plus[i] - minus[i])
            #expect(Fixture.close(Double(gradient[i]) - 0.5, numeric, relative: 1e-4))
            let d = Double(theta[i]) - Double(end[i])
            expected += 0.7 * Double(plugin.penaltyWeights[i]) * d * d
        }
        #expect(Fixture.close(value(theta), expected, relative: 1e-6))
    }

    /// On a real run the path integral is accumulated from the Trainer's observations.
    @Test func trainerFeedsThePathIntegral() throws {
        let stream = try Fixture.stream()
        let spec = MLPSpec(inputs: stream.dimension, hidden: [8], head: stream.head)
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: 1),
                              plugins: [SynapticIntelligence(options: .init(c: 1))], seed: 2)
        let outcome = try trainer.run(stream)
        let si = try #require(trainer.plugins[0] as? SynapticIntelligence)
        #expect(si.importance.count == spec.layers().last!.offset + spec.layers().last!.parameterCount)
        #expect(si.importance.reduce(0, +) > 0)
        #expect(si.anchor == outcome.finalModel.parameters)
        #expect(outcome.penaltyCurve[1][0] > 0)
    }
}
