@testable import ContinualCore
import ContinualScenarios
@testable import ContinualStrategies
import Testing

/// XdG's gates are fixed per task, a function of the seed, exactly `gated_fraction` of each
/// layer, and act in the forward pass (predictions) and the backward pass (no gradient reaches a
/// gated unit's weights while its task trains).
@Suite("ContextDependentGating")
struct ContextDependentGatingTests {
    static let spec = MLPSpec(inputs: 10, hidden: [10, 6], activation: .relu)

    static func prepared(seed: UInt64, fraction: Double = 0.6, tasks: Int = 3) throws -> ContextDependentGating {
        var rng = RandomSource(seed: 1)
        var model = MLP(spec: spec, rng: &rng)
        var xdg = ContextDependentGating(options: .init(gatedFraction: fraction))
        try xdg.prepare(model: &model, context: RunContext(seed: seed, pluginIndex: 0, experienceCount: tasks, dimension: 10,
                                                           head: .binary, training: TrainingOptions()))
        return xdg
    }

    @Test func gatesAreFixedPerTaskDeterministicFromTheSeedAndGateTheFraction() throws {
        let a = try Self.prepared(seed: 7), b = try Self.prepared(seed: 7), c = try Self.prepared(seed: 8)
        #expect(a.masks == b.masks)
        #expect(a.masks != c.masks)
        for t in 0..<3 {
            let g = try #require(a.mask(task: t))
            // 10 units: round(0.6·10) = 6 gated, 4 active; 6 units: round(3.6) = 4 gated, 2 active.
            #expect(g.values[0..<10].reduce(0, +) == 4 && g.values[10..<16].reduce(0, +) == 2)
            #expect(g.values.allSatisfy { $0 == 0 || $0 == 1 })
        }
        #expect(a.mask(task: 0) != a.mask(task: 1) || a.mask(task: 1) != a.mask(task: 2))
        // The gates of a task are the same at every step of it.
        var x = a
        let e = Experience(index: 1, name: "e", train: Samples(dimension: 10), test: Samples(dimension: 10))
        var model = MLP(spec: Self.spec, parameters: [Float](repeating: 0, count: Self.spec.parameterCount))
        try x.beforeExperience(model: &model, context: ExperienceContext(index: 1, experiences: [e, e], route: 0))
        let steps = [StepIndex(experience: 1, epoch: 0, stepInExperience: 0, stepInEpoch: 0, stepsPerEpoch: 4),
                     StepIndex(experience: 1, epoch: 3, stepInExperience: 15, stepInEpoch: 3, stepsPerEpoch: 4)]
        for s in steps { #expect(x.gates(route: 0, step: s) == a.mask(task: 1)) }
    }

    /// Records the parameters around every step, by experience.
    struct Recorder: StepObserver {
        var name: String { "recorder" }
        var steps: [(experience: Int, before: [Float], after: [Float])] = []
        mutating func afterStep(_ s: StepObservation) {
            steps.append((s.experienceIndex, Array(s.parametersBefore), Array(s.parametersAfter)))
        }
        var resources: PluginResources { .none }
        func checkpointState() -> PluginState { PluginState() }
        mutating func restore(from state: PluginState) throws {}
    }

    @Test func gatesActInTheBackwardAndTheForwardPass() throws {
        let stream = try HabitDriftScenario(trainPerExperience: 64, testPerExperience: 16,
                                            phases: ["morning", "night", "weekend_only"].map { HabitPhase.presets[$0]! })
            .makeStream(seed: 2)
        var trainer = Trainer(spec: Self.spec, optimizer: .sgd(learningRate: 0.1),
                              options: TrainingOptions(epochs: 2, batchSize: 16),
                              plugins: [ContextDependentGating(options: .init(gatedFraction: 0.5)), Recorder()], seed: 3)
        let outcome = try trainer.run(stream)
        let xdg = trainer.plugins[0] as! ContextDependentGating, recorder = trainer.plugins[1] as! Recorder
        let model = outcome.finalModel
        var movedActive = 0
        for step in recorder.steps {
            let gates = try #require(xdg.mask(task: step.experience))
            for (k, l) in [0, 1].enumerated() {
                let layer = model.layers[l], w = layer.weightOffset(route: 0), b = layer.biasOffset(route: 0)
                for o in 0..<layer.outputs {
                    let indices = (0..<layer.inputs).map { w + $0 * layer.outputs + o } + [b + o]
                    let moved = indices.contains { step.before[$0] != step.after[$0] }
                    if gates.values[gates.offsets[k] + o] == 0 {
                        #expect(!moved, "gated unit \(o) of layer \(l) moved in experience \(step.experience)")
                    } else if moved { movedActive += 1 }
                }
            }
        }
        #expect(movedActive > 0)
        // Forward: each experience is predicted through its own gates, which changes predictions.
        let ws = model.makeWorkspace()
        var plugin = xdg
        var differs = false
        for (j, e) in stream.experiences.enumerated() {
            let gates = try #require(xdg.mask(task: j))
            let predicted = plugin.predictions(model: model, samples: e.test, experienceIndex: j, workspace: ws)
            let p = try #require(predicted)
            var gated = [Float](), plain = [Float]()
            for i in 0..<e.test.count {
                let x = Array(e.test.row(i))
                model.forward(x, count: 1, route: 0, workspace: ws, gates: gates)
                gated.append(ws.logits[0])
                model.forward(x, count: 1, route: 0, workspace: ws)
                plain.append(ws.logits[0])
            }
            #expect(p.scores == gated)
            differs = differs || gated != plain
        }
        #expect(differs)
    }
}
