@testable import ContinualCore
import ContinualScenarios
import ContinualStrategies
import Foundation
import Testing

/// RWalk's importance F̂ + ŝ against a brute-force recomputation from the paper's equations over
/// the recorded trajectory of a real run, and its penalty gradient against finite differences.
@Suite("RWalk")
struct RWalkTests {
    /// Records every step the loop shows a `StepObserver` (after RWalk, in list order) and the
    /// parameters at each experience's end.
    struct Recorder: StepObserver {
        var name: String { "recorder" }
        struct Step { var experience: Int; var g: [Double]; var before: [Double]; var after: [Double] }
        var steps: [Step] = []
        var ends: [[Double]] = []
        mutating func afterStep(_ s: StepObservation) {
            steps.append(Step(experience: s.experienceIndex, g: s.taskGradient.map(Double.init),
                              before: s.parametersBefore.map(Double.init), after: s.parametersAfter.map(Double.init)))
        }
        mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
            ends.append(model.parameters.map(Double.init))
        }
        var resources: PluginResources { .none }
        func checkpointState() -> PluginState { PluginState() }
        mutating func restore(from state: PluginState) throws {}
    }

    /// F, s and F̂ + ŝ recomputed from the trajectory: F(t) in closed form
    /// (1−α)^t g₀² + Σ_{τ=1..t} α (1−α)^{t−τ} g_τ², each experience's steps cut into intervals of
    /// Δt (the last one shorter), s_k = Σ_intervals Σ_{t∈I} −g(t)Δθ(t) / (½ F(t₂)(θ(t₂) − θ(t₁))² + ε),
    /// s = s₁ then ½ (s + s_k), and the normalised, clipped sum.
    static func bruteForce(_ r: Recorder, options o: RWalk.Options) -> (fisher: [Double], score: [Double], weights: [Double]) {
        let p = r.steps[0].g.count
        func fisher(upTo t: Int) -> [Double] {
            (0..<p).map { i in
                var f = pow(1 - o.alpha, Double(t)) * r.steps[0].g[i] * r.steps[0].g[i]
                if t >= 1 {
                    for tau in 1...t { f += o.alpha * pow(1 - o.alpha, Double(t - tau)) * r.steps[tau].g[i] * r.steps[tau].g[i] }
                }
                return f
            }
        }
        var score = [Double](repeating: 0, count: p)
        let experiences = Set(r.steps.map(\.experience)).sorted()
        for (k, e) in experiences.enumerated() {
            let indices = r.steps.indices.filter { r.steps[$0].experience == e }
            var sk = [Double](repeating: 0, count: p)
            for chunk in stride(from: 0, to: indices.count, by: o.scoreInterval) {
                let interval = Array(indices[chunk..<min(chunk + o.scoreInterval, indices.count)])
                let f = fisher(upTo: interval.last!)
                for i in 0..<p {
                    let loss = interval.reduce(0.0) { $0 - r.steps[$1].g[i] * (r.steps[$1].after[i] - r.steps[$1].before[i]) }
                    let d = r.steps[interval.last!].after[i] - r.steps[interval.first!].before[i]
                    sk[i] += loss / (0.5 * f[i] * d * d + o.epsilon)
                }
            }
            score = k == 0 ? sk : zip(score, sk).map { 0.5 * ($0 + $1) }
        }
        let f = fisher(upTo: r.steps.count - 1)
        let maxF = f.max()!, maxS = score.max()!
        let weights = (0..<p).map { f[$0] / maxF + max(score[$0], 0) / maxS }
        return (f, score, weights)
    }

    static func stream() throws -> ExperienceStream {
        try HabitDriftScenario(trainPerExperience: 60, testPerExperience: 10,
                               phases: ["morning", "night", "weekend_only"].map { HabitPhase.presets[$0]! }).makeStream(seed: 4)
    }

    /// 3 experiences × 2 epochs × 8 steps of 8 rows: intervals of 3 cross epochs and the last is
    /// shorter; λ = 1 makes the task and total gradients differ from the second experience on, so
    /// a plugin that integrated the total gradient would fail.
    @Test(arguments: [RWalk.Options(lambda: 1, alpha: 0.7, scoreInterval: 3),
                      RWalk.Options(lambda: 0.5, alpha: 1, scoreInterval: 1)])
    func importanceMatchesBruteForceRecomputation(_ options: RWalk.Options) throws {
        let stream = try Self.stream()
        var trainer = Trainer(spec: MLPSpec(inputs: stream.dimension, hidden: [3], activation: .tanh),
                              optimizer: .sgd(learningRate: 0.2), options: TrainingOptions(epochs: 2, batchSize: 8),
                              plugins: [RWalk(options: options), Recorder()], seed: 5)
        _ = try trainer.run(stream)
        let rwalk = trainer.plugins[0] as! RWalk, recorder = trainer.plugins[1] as! Recorder
        #expect(recorder.steps.count == 3 * 2 * 8)
        let expected = Self.bruteForce(recorder, options: options)
        for i in 0..<expected.weights.count {
            #expect(Fixture.close(rwalk.fisher[i], expected.fisher[i], relative: 1e-9), "F[\(i)]")
            #expect(Fixture.close(rwalk.score[i], expected.score[i], relative: 1e-9, floor: 1e-9), "s[\(i)]")
            #expect(Fixture.close(Double(rwalk.penaltyWeights[i]), expected.weights[i], relative: 1e-6), "w[\(i)]")
        }
        #expect(rwalk.anchor.map(Double.init) == recorder.ends.last!)
        // Both halves matter: some parameters have a positive score, and F̂ alone is not the weight.
        #expect(expected.score.contains { $0 > 0 })
        #expect(zip(expected.weights, expected.fisher).contains { abs($0 - $1 / expected.fisher.max()!) > 1e-3 })
    }

    /// Central differences of λ Σ w (θ − θ*)² match the added gradient 2λ w (θ − θ*).
    @Test func penaltyGradientPassesFiniteDifferenceCheck() throws {
        let stream = try Self.stream()
        var trainer = Trainer(spec: MLPSpec(inputs: stream.dimension, hidden: [3], activation: .tanh),
                              optimizer: .sgd(learningRate: 0.2), options: TrainingOptions(epochs: 1, batchSize: 8),
                              plugins: [RWalk(options: .init(lambda: 0.8, scoreInterval: 2))], seed: 6)
        _ = try trainer.run(stream)
        var plugin = trainer.plugins[0] as! RWalk
        var rng = RandomSource(seed: 2)
        let theta = plugin.anchor.map { $0 + Float(rng.normal() * 0.3) }
        func value(_ x: [Double]) -> Double {
            var scratch = [Float](repeating: 0, count: x.count)
            let xf = x.map(Float.init)
            return xf.withUnsafeBufferPointer { t in scratch.withUnsafeMutableBufferPointer { plugin.addPenalty(parameters: t, gradient: $0) } }
        }
        var gradient = [Float](repeating: 0, count: theta.count)
        let v = theta.withUnsafeBufferPointer { t in gradient.withUnsafeMutableBufferPointer { plugin.addPenalty(parameters: t, gradient: $0) } }
        #expect(v > 0)
        let x = theta.map(Double.init), h = 1e-2
        for i in 0..<x.count {
            var plus = x, minus = x
            plus[i] += h
            minus[i] -= h
            let numeric = (value(plus) - value(minus)) / (2 * h)
            #expect(abs(numeric - Double(gradient[i])) < 1e-3 * max(1, abs(numeric)), "∂/∂θ[\(i)]: \(numeric) vs \(gradient[i])")
        }
    }

    /// Without normalisation the weight is F + max(s, 0) (a negative score would count 0). λ = 0:
    /// raw scores reach ~1/ε where F·Δθ² is tiny, which is why the paper normalises; the weights
    /// are still computed.
    @Test func unnormalisedWeightsAreFisherPlusClippedScore() throws {
        let stream = try Self.stream()
        let options = RWalk.Options(lambda: 0, alpha: 0.5, scoreInterval: 4, normalize: false)
        var trainer = Trainer(spec: MLPSpec(inputs: stream.dimension, hidden: [3], activation: .tanh),
                              optimizer: .sgd(learningRate: 0.2), options: TrainingOptions(epochs: 1, batchSize: 8),
                              plugins: [RWalk(options: options)], seed: 7)
        _ = try trainer.run(stream)
        let rwalk = trainer.plugins[0] as! RWalk
        #expect(rwalk.score.contains { $0 > 0 })
        for i in 0..<rwalk.penaltyWeights.count {
            #expect(rwalk.penaltyWeights[i] == Float(rwalk.fisher[i] + max(rwalk.score[i], 0)))
        }
    }
}
