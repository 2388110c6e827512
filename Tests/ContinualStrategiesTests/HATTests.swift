import Foundation
import Testing
@testable import ContinualCore
@testable import ContinualStrategies

/// Hard Attention to the Task (Serra et al. 2018): the embeddings' gradient (through the gates
/// and the attention regulariser) against finite differences, the compensation factors computed
/// by hand, and on a task-incremental stream no forgetting, with tanh and beside EWC.
@Suite struct HATTests {
    static func options(sMax: Float = 400, c: Double = 0.75) -> HAT.Options {
        var o = HAT.Options()
        o.sMax = sMax
        o.c = c
        return o
    }

    /// A task-incremental stream of `T` two-class tasks of Gaussian blobs in 10 dimensions.
    static func stream(tasks T: Int = 3, seed: UInt64 = 21) -> ExperienceStream {
        var rng = RandomSource(seed: seed)
        let experiences = (0..<T).map { t -> Experience in
            let centres = (0..<2).map { _ in (0..<10).map { _ in Float(rng.normal()) } }
            func samples(_ n: Int) -> Samples {
                var s = Samples(dimension: 10)
                for i in 0..<n {
                    s.features += centres[i % 2].map { $0 + Float(rng.normal() * 0.9) }
                    s.labels.append(Int32(i % 2))
                }
                return s
            }
            return Experience(index: t, name: "task\(t)", train: samples(128), test: samples(64))
        }
        return ExperienceStream(name: "blobs", featureNames: (0..<10).map { "f\($0)" }, head: .multiclass(classes: 2),
                                experiences: experiences)
    }

    static func runContext(_ T: Int, dimension: Int = 4, head: OutputHead = .multiclass(classes: 3)) -> RunContext {
        RunContext(seed: 1, pluginIndex: 0, experienceCount: T, dimension: dimension, head: head,
                   training: TrainingOptions(epochs: 1, batchSize: 5))
    }

    static func experiences(_ T: Int) -> [Experience] {
        (0..<T).map { Experience(index: $0, name: "e\($0)", train: Samples(dimension: 4), test: Samples(dimension: 4)) }
    }

    @Test func slopeAnnealsFromOneOverSMaxToSMaxWithinAnEpoch() {
        let low: Float = 1 / 400
        #expect(HAT.slope(sMax: 400, batch: 0, of: 11) == low)
        #expect(HAT.slope(sMax: 400, batch: 10, of: 11) == 400)
        #expect(abs(HAT.slope(sMax: 400, batch: 5, of: 11) - (low + (400 - low) / 2)) < 1e-3)
        #expect(HAT.slope(sMax: 400, batch: 0, of: 1) == 400)
    }

    /// d/de [ mean CE(x; gates σ(s·e)) + c·Σ σ(s·e)(1 − a<t) / Σ (1 − a<t) ] by central differences.
    @Test(arguments: [Activation.tanh, .relu, .sigmoid])
    func embeddingGradientMatchesFiniteDifferences(_ activation: Activation) throws {
        var rng = RandomSource(seed: 9)
        let spec = MLPSpec(inputs: 4, hidden: [5, 3], activation: activation, head: .multiclass(classes: 3))
        var model = MLP(spec: spec, rng: &rng)
        var hat = HAT(options: Self.options(sMax: 4, c: 0.75))
        try hat.prepare(model: &model, context: Self.runContext(2))
        // A past task used some units: a<t in [0, 1].
        var state = hat.checkpointState()
        let previous: [Float] = [1, 0, 0.5, 0.9, 0, 0.2, 1, 0]
        state.floats["cumulative"] = previous
        try hat.restore(from: state)
        try hat.beforeExperience(model: &model, context: ExperienceContext(index: 1, experiences: Self.experiences(2), route: 0))
        let x = (0..<(6 * 4)).map { _ in Float(rng.normal()) }
        let y: [Int32] = [0, 1, 2, 2, 1, 0]
        let step = StepIndex(experience: 1, epoch: 0, stepInExperience: 3, stepInEpoch: 3, stepsPerEpoch: 7)
        let s = HAT.slope(sMax: 4, batch: 3, of: 7)
        let maybeGates = hat.gates(route: 0, step: step)
        let gates = try #require(maybeGates)
        let ws = model.makeWorkspace(capacity: 8)
        var g = [Float](repeating: 0, count: model.parameterCount)
        var gg = [Float](repeating: 0, count: gates.count)
        model.forward(x, count: 6, route: 0, workspace: ws, gates: gates)
        _ = Loss.lossAndLogitGradient(head: spec.head, logits: ws.logits, labels: y, count: 6, scale: 1 / 6)
        g.withUnsafeMutableBufferPointer { gp in
            gg.withUnsafeMutableBufferPointer { ggp in
                model.backward(logitGradient: ws.logits, count: 6, route: 0, workspace: ws, gradient: gp.baseAddress!,
                               gates: gates, gateGradient: ggp.baseAddress)
            }
        }
        gg.withUnsafeBufferPointer { hat.didBackward(gateGradient: $0, route: 0, step: step) }
        let e = hat.parameterBlock
        let penalty = model.parameters.withUnsafeBufferPointer { p in
            g.withUnsafeMutableBufferPointer { hat.addPenalty(parameters: p, gradient: $0) }
        }
        let analytic = hat.parameterBlockGradient

        func objective(_ e: [Float]) -> Double {
            var gates = gates
            gates.values = e.map { Activation.sigmoid(s * $0) }
            model.forward(x, count: 6, route: 0, workspace: ws, gates: gates)
            let ce = Loss.lossAndLogitGradient(head: spec.head, logits: ws.logits, labels: y, count: 6, scale: 1) / 6
            var num = 0.0, den = 0.0
            for i in e.indices {
                num += Double(gates.values[i]) * Double(1 - previous[i])
                den += Double(1 - previous[i])
            }
            return ce + 0.75 * num / den
        }
        var expectedPenalty = 0.0, den = 0.0
        for i in e.indices {
            expectedPenalty += Double(Activation.sigmoid(s * e[i])) * Double(1 - previous[i])
            den += Double(1 - previous[i])
        }
        #expect(abs(penalty - 0.75 * expectedPenalty / den) < 1e-6)
        let h: Float = 1e-2
        var worst = 0.0
        for i in e.indices {
            var up = e, down = e
            up[i] += h
            down[i] -= h
            let numeric = (objective(up) - objective(down)) / Double(2 * h)
            worst = max(worst, abs(numeric - Double(analytic[i])) / max(0.05, abs(numeric)))
        }
        #expect(worst < 5e-3, "embedding gradient relative error \(worst)")
    }

    /// Eq. 4 and eq. 5 on a 4 → 3 → 3-class network whose hidden units were used (1, 0, 0.5).
    @Test func compensationFactorsAreThePapers() throws {
        var rng = RandomSource(seed: 2)
        var model = MLP(spec: MLPSpec(inputs: 4, hidden: [3], activation: .tanh, head: .multiclass(classes: 3)), rng: &rng)
        var hat = HAT(options: Self.options(sMax: 400))
        try hat.prepare(model: &model, context: Self.runContext(2))
        var state = hat.checkpointState()
        state.floats["cumulative"] = [1, 0, 0.5]
        try hat.restore(from: state)
        try hat.beforeExperience(model: &model, context: ExperienceContext(index: 1, experiences: Self.experiences(2), route: 0))
        _ = hat.gates(route: 0, step: StepIndex(experience: 1, stepInEpoch: 1, stepsPerEpoch: 3))   // s = 200.00125
        let s = HAT.slope(sMax: 400, batch: 1, of: 3)
        hat.parameterBlockGradient = [1, 1, 1]
        var g = [Float](repeating: 1, count: model.parameterCount)
        g.withUnsafeMutableBufferPointer {
            hat.adjustGradient($0, context: GradientContext(model: model, batch: Batch(dimension: 4, capacity: 1),
                                                            experienceIndex: 1, stepInExperience: 1))
        }
        let hidden = model.layers[0], output = model.layers[1]
        let used: [Float] = [1, 0, 0.5]
        for j in 0..<4 {
            for i in 0..<3 { #expect(g[hidden.weightOffset(route: 0) + j * 3 + i] == 1 - used[i]) }
        }
        for i in 0..<3 { #expect(g[hidden.biasOffset(route: 0) + i] == 1 - used[i]) }
        for j in 0..<3 {
            for c in 0..<3 { #expect(g[output.weightOffset(route: 0) + j * 3 + c] == 1 - used[j]) }
        }
        for c in 0..<3 { #expect(g[output.biasOffset(route: 0) + c] == 1) }
        for i in 0..<3 {
            let e = Double(hat.parameterBlock[i])
            let expected = 400 / Double(s) * (cosh(min(max(Double(s) * e, -50), 50)) + 1) / (cosh(e) + 1)
            #expect(abs(Double(hat.parameterBlockGradient[i]) - expected) <= 1e-4 * expected)
        }
    }

    static func train(_ plugins: [any StrategyPlugin], activation: Activation, tasks: Int = 3) throws -> TrainingOutcome {
        let stream = Self.stream(tasks: tasks)
        let spec = MLPSpec(inputs: 10, hidden: [16, 16], activation: activation, head: .multiclass(classes: 2), heads: tasks)
        var trainer = Trainer(spec: spec, optimizer: .adam(learningRate: 0.01), options: TrainingOptions(epochs: 6, batchSize: 16),
                              plugins: plugins, seed: 4)
        return try trainer.run(stream)
    }

    /// Forgetting of task j at the end: R[j][j] − R[T−1][j].
    static func forgetting(_ o: TrainingOutcome) -> [Double] {
        let T = o.accuracy.count
        return (0..<(T - 1)).map { o.accuracy[$0][$0] - o.accuracy[T - 1][$0] }
    }

    @Test(arguments: [Activation.tanh, .relu])
    func pastTasksAreNotForgotten(_ activation: Activation) throws {
        let o = try Self.train([HAT(options: Self.options())], activation: activation)
        for j in 0..<3 { #expect(o.accuracy[j][j] > 0.85, "task \(j) learned: \(o.accuracy[j][j])") }
        for f in Self.forgetting(o) { #expect(abs(f) <= 0.02, "forgetting \(Self.forgetting(o))") }
        #expect(o.penaltyCurve.flatMap { $0 }.contains { $0 > 0 }, "the attention regulariser is on the penalty curve")
    }

    @Test func composesWithAPenalty() throws {
        let ewc = try JSONDecoder().decode(EWC.Options.self, from: Data(#"{"lambda": 50}"#.utf8)).makePlugin()
        let o = try Self.train([HAT(options: Self.options()), ewc], activation: .tanh)
        for f in Self.forgetting(o) { #expect(abs(f) <= 0.02, "forgetting \(Self.forgetting(o))") }
        #expect(o.accuracy[2][2] > 0.85)
    }

    @Test func twoGatingMethodsAreRefused() {
        #expect(throws: TrainingError.self) {
            _ = try Self.train([HAT(options: Self.options()), HAT(options: Self.options())], activation: .relu, tasks: 2)
        }
    }

    @Test func badOptionsNameTheirKey() {
        for (json, key) in [(#"{"s_max": 0}"#, "s_max"), (#"{"c": -1}"#, "c"), (#"{"embedding_clamp": 0}"#, "embedding_clamp")] {
            do {
                _ = try JSONDecoder().decode(HAT.Options.self, from: Data(json.utf8))
                Issue.record("\(json) accepted")
            } catch {
                #expect("\(error)".contains(key))
            }
        }
    }
}
