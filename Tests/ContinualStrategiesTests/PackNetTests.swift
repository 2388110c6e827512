import Foundation
import Testing
@testable import ContinualCore
@testable import ContinualStrategies

/// PackNet (Mallya & Lazebnik 2018): pruning frees exactly the smallest free weights of each
/// layer; the tasks' masks are disjoint and a task's weights are bit-unchanged by every later
/// task; earlier tasks' task-IL accuracy never changes; freed capacity is reported.
@Suite struct PackNetTests {
    static func options(prune: Double = 0.5, retrain: Double = 0.25) -> PackNet.Options {
        var o = PackNet.Options()
        o.pruneFraction = prune
        o.retrainFraction = retrain
        return o
    }

    static func context(_ i: Int, _ T: Int = 2) -> ExperienceContext {
        ExperienceContext(index: i, experiences: HATTests.experiences(T), route: Int32(i))
    }

    /// A 4 → 3 → 2-class network with two heads: the hidden weight matrix (12 weights) is
    /// prunable, the heads are per-task.
    @Test func pruningFreesTheSmallestFreeWeightsOfEachLayerAndFreezesTheRest() throws {
        var rng = RandomSource(seed: 3)
        var model = MLP(spec: MLPSpec(inputs: 4, hidden: [3], activation: .relu, head: .multiclass(classes: 2), heads: 2), rng: &rng)
        var plugin = PackNet(options: Self.options())
        try plugin.prepare(model: &model, context: HATTests.runContext(2, dimension: 4, head: .multiclass(classes: 2)))
        try plugin.beforeExperience(model: &model, context: Self.context(0))
        let hidden = model.layers[0], head = model.layers[1]
        let w = hidden.weightOffset(route: 0)
        // Hand-set magnitudes: |w| = 12, 11, …, 1 with alternating signs; the six smallest are
        // the last six.
        for k in 0..<12 { model.parameters[w + k] = Float(12 - k) * (k % 2 == 0 ? 1 : -1) }
        #expect(model.trainable == [Bool](repeating: true, count: model.parameterCount))
        plugin.prune(&model)
        for k in 0..<12 {
            #expect((model.parameters[w + k] == 0) == (k >= 6), "weight \(k)")
            #expect(model.trainable?[w + k] == (k < 6))
        }
        for i in hidden.biasRange(route: 0) { #expect(model.trainable?[i] == true, "the first task trains the biases") }
        for i in head.offset..<(head.offset + head.parameterCount) { #expect(model.trainable?[i] == true) }
        try plugin.afterExperience(model: &model, context: Self.context(0), workspace: model.makeWorkspace())
        #expect(plugin.weightsPerTask == [6])
        #expect(plugin.freeFraction == [0.5])

        // Task 1 trains only the six freed weights (and its head); the biases are frozen.
        try plugin.beforeExperience(model: &model, context: Self.context(1))
        for k in 0..<12 { #expect(model.trainable?[w + k] == (k >= 6)) }
        for i in hidden.biasRange(route: 0) { #expect(model.trainable?[i] == false) }
        for k in 6..<12 { model.parameters[w + k] = Float(k) }   // trained: 6, 7, …, 11
        try plugin.afterExperience(model: &model, context: Self.context(1), workspace: model.makeWorkspace())
        // Of the six, the three smallest (6, 7, 8) are pruned; 9, 10, 11 belong to task 1.
        for k in 6..<12 { #expect((model.parameters[w + k] == 0) == (k < 9)) }
        #expect(plugin.weightsPerTask == [6, 3])
        #expect(plugin.freeFraction == [0.5, 0.25])
        #expect(plugin.owner[w..<(w + 12)].map { Int($0) } == [0, 0, 0, 0, 0, 0, -1, -1, -1, 1, 1, 1])

        // Task 0 is predicted without task 1's weights; task 1 with both.
        let t0 = plugin.network(task: 0, of: model), t1 = plugin.network(task: 1, of: model)
        for k in 9..<12 {
            #expect(t0.parameters[w + k] == 0)
            #expect(t1.parameters[w + k] == Float(k))
        }
        #expect(Array(t0.parameters[w..<(w + 6)]) == Array(model.parameters[w..<(w + 6)]))
    }

    @Test func retrainingIsTheLastShareOfThePlannedSteps() {
        let p = PackNet(options: Self.options(retrain: 0.25))
        #expect(p.phaseStarts(plannedSteps: 375, context: Self.context(0)) == [281])   // 94 retraining steps
        #expect(p.phaseStarts(plannedSteps: 1, context: Self.context(0)) == [])
        #expect(p.phaseStarts(plannedSteps: Int.max, context: Self.context(0)) == [])
        #expect(PackNet(options: Self.options(retrain: 0)).phaseStarts(plannedSteps: 375, context: Self.context(0)) == [])
    }

    static func trainer(tasks: Int = 3, options: PackNet.Options = options()) -> Trainer {
        let spec = MLPSpec(inputs: 10, hidden: [16, 16], activation: .relu, head: .multiclass(classes: 2), heads: tasks)
        return Trainer(spec: spec, optimizer: .adam(learningRate: 0.01), options: TrainingOptions(epochs: 10, batchSize: 16),
                       plugins: [PackNet(options: options)], seed: 4)
    }

    /// After every experience, the weights every task owns so far are the ones it had when it
    /// was frozen, bit for bit (and the biases the first task's); no weight changes owner.
    @Test func tasksOwnDisjointMasksAndTheirWeightsNeverChangeAgain() throws {
        let stream = HATTests.stream(tasks: 3)
        var snapshots: [(owner: [Int32], parameters: [Float])] = []
        for stop in 0..<3 {
            var t = Self.trainer()
            _ = try t.run(stream, resumingFrom: nil, stopAfter: stop)
            let p = try #require(t.plugins[0] as? PackNet)
            snapshots.append((p.owner, t.model.parameters))
        }
        let final = snapshots[2]
        for (t, snap) in snapshots.enumerated() {
            for i in snap.owner.indices where snap.owner[i] >= 0 {
                #expect(final.owner[i] == snap.owner[i], "parameter \(i) changed owner after task \(t)")
                #expect(final.parameters[i].bitPattern == snap.parameters[i].bitPattern, "parameter \(i) of task \(snap.owner[i]) moved")
            }
            let owned = (0...t).map { k in snap.owner.filter { $0 == Int32(k) }.count }
            #expect(owned.allSatisfy { $0 > 0 }, "every task keeps weights: \(owned)")
        }
        // Pruned weights that no task took are exactly 0 (never trained during retraining).
        for i in final.owner.indices where final.owner[i] == PackNet.free { #expect(final.parameters[i] == 0) }
    }

    @Test func earlierTasksKeepTheirExactAccuracy() throws {
        var t = Self.trainer()
        let o = try t.run(HATTests.stream(tasks: 3))
        for j in 0..<3 {
            #expect(o.accuracy[j][j] > 0.85, "task \(j) learned: \(o.accuracy[j][j])")
            for i in j..<3 { #expect(o.accuracy[i][j] == o.accuracy[j][j], "R[\(i)][\(j)] = \(o.accuracy[i][j]) ≠ R[\(j)][\(j)]") }
        }
        // The freed capacity is in the report, one value per experience, shrinking.
        let report = try #require(o.pluginReports.first?.1)
        let free = try #require(report.arrays["free_fraction"]?.values)
        #expect(free.count == 3 && free[0] > free[1] && free[1] > free[2] && free[2] > 0, "\(free)")
        #expect(abs(free[0] - 0.5) < 0.01)
        // The unmasked network is not what predicts task 0: later tasks' weights change it.
        let p = try #require(t.plugins[0] as? PackNet)
        #expect(p.network(task: 0, of: o.finalModel).parameters != o.finalModel.parameters)
    }

    @Test func badOptionsNameTheirKey() {
        for (json, key) in [(#"{"prune_fraction": 1}"#, "prune_fraction"), (#"{"prune_fraction": 0}"#, "prune_fraction"),
                            (#"{"retrain_fraction": -0.1}"#, "retrain_fraction"), (#"{"retrain_fraction": 1}"#, "retrain_fraction"),
                            (#"{"prune": 0.5}"#, "prune")] {
            do {
                _ = try JSONDecoder().decode(PackNet.Options.self, from: Data(json.utf8))
                Issue.record("\(json) accepted")
            } catch {
                #expect("\(error)".contains(key), "\(error)")
            }
        }
    }
}
