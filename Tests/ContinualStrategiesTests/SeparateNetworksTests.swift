@testable import ContinualCore
import ContinualScenarios
@testable import ContinualStrategies
import Testing

/// Separate networks: training later tasks never changes an earlier task's predictions (bit for
/// bit), each task is predicted by its own network, and the parameter budget is enforced.
@Suite("SeparateNetworks")
struct SeparateNetworksTests {
    static func stream() throws -> ExperienceStream {
        try HabitDriftScenario(trainPerExperience: 80, testPerExperience: 40,
                               phases: ["morning", "night", "weekend_only"].map { HabitPhase.presets[$0]! }).makeStream(seed: 6)
    }

    static func trainer(_ stream: ExperienceStream) -> Trainer {
        Trainer(spec: MLPSpec(inputs: stream.dimension, hidden: [12, 8]), optimizer: .adam(learningRate: 0.01),
                options: TrainingOptions(epochs: 3, batchSize: 16), plugins: [SeparateNetworks()], seed: 4)
    }

    /// Task j's predictions as the loop makes them: the plugin's override, or (task 0, whose
    /// network is the model) the model itself.
    static func predict(_ plugin: inout SeparateNetworks, _ model: MLP, _ samples: Samples, task j: Int) -> Predictions {
        let ws = model.makeWorkspace()
        if let p = plugin.predictions(model: model, samples: samples, experienceIndex: j, workspace: ws) { return p }
        var classes: [Int32] = [], scores: [Float] = []
        for i in 0..<samples.count {
            let x = Array(samples.row(i))
            model.forward(x, count: 1, route: 0, workspace: ws)
            scores.append(ws.logits[0])
            classes.append(ws.logits[0] > 0 ? 1 : 0)
        }
        return Predictions(classes: classes, scores: scores)
    }

    @Test func laterTasksNeverChangeAnEarlierTasksPredictions() throws {
        let stream = try Self.stream()
        var snapshots: [[Predictions]] = []
        var checkpoint: TrainerCheckpoint?
        var last = Self.trainer(stream)
        for k in 0..<stream.experiences.count {
            var t = Self.trainer(stream)
            _ = try t.run(stream, resumingFrom: checkpoint, stopAfter: k < stream.experiences.count - 1 ? k : nil)
            checkpoint = t.checkpoint
            var plugin = t.plugins[0] as! SeparateNetworks
            snapshots.append((0...k).map { Self.predict(&plugin, t.model, stream.experiences[$0].test, task: $0) })
            last = t
        }
        for j in 0..<3 {
            for k in j..<3 {
                #expect(snapshots[k][j] == snapshots[j][j], "task \(j)'s predictions changed after training task \(k)")
            }
        }
        // Each task has its own network: the networks predict differently on the same inputs.
        var plugin = last.plugins[0] as! SeparateNetworks
        let x = stream.experiences[0].test
        let byNetwork = (0..<3).map { Self.predict(&plugin, last.model, x, task: $0).scores! }
        #expect(byNetwork[0] != byNetwork[1] && byNetwork[1] != byNetwork[2])
        #expect(plugin.report().attributes["parameters_per_network"] == .int(Int64(last.model.parameterCount)))
    }

    @Test func theParameterBudgetIsEnforcedAndNamesTheWidthThatFits() throws {
        let spec = MLPSpec(inputs: 10, hidden: [12, 12])
        var rng = RandomSource(seed: 1)
        var model = MLP(spec: spec, rng: &rng)
        let context = RunContext(seed: 1, pluginIndex: 0, experienceCount: 3, dimension: 10, head: .binary, training: TrainingOptions())
        var fits = SeparateNetworks(options: .init(parameterBudget: 3 * model.parameterCount))
        try fits.prepare(model: &model, context: context)
        var tight = SeparateNetworks(options: .init(parameterBudget: 3 * model.parameterCount - 1))
        #expect(throws: TrainingError.self) { try tight.prepare(model: &model, context: context) }
        // The suggested width w: 3 networks of width w fit, of width w + 1 do not.
        let budget = 1000
        let w = SeparateNetworks.largestWidth(inputs: 10, layers: 2, outputs: 1, budget: budget / 3)
        func parameters(_ w: Int) -> Int { 10 * w + w + w * w + w + w + 1 }
        #expect(3 * parameters(w) <= budget && 3 * parameters(w + 1) > budget)
    }
}
