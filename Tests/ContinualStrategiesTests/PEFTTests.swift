import Testing
@testable import ContinualCore
import ContinualScenarios
@testable import ContinualStrategies

/// Records the flat vector and mask before and after every experience (placed last in the
/// plugin list, so it sees the mask the PEFT plugin set).
final class ParameterLog {
    var before: [[Float]] = []
    var after: [[Float]] = []
    var masks: [[Bool]?] = []
}

struct Recorder: StatelessPlugin {
    let log: ParameterLog
    var name: String { "recorder" }
    mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        log.before.append(model.parameters)
        log.masks.append(model.trainable)
    }
    mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        log.after.append(model.parameters)
    }
}

@Suite struct PEFTTests {
    static func stream(phases: Int = 3, train: Int = 300, test: Int = 200) throws -> ExperienceStream {
        let names = ["morning", "night", "reminder_fatigue", "weekend_only", "morning"].prefix(phases)
        return try HabitDriftScenario(trainPerExperience: train, testPerExperience: test,
                                      phases: names.map { HabitPhase.presets[$0]! }).makeStream(seed: 3)
    }

    static func run(_ plugins: [any StrategyPlugin], stream: ExperienceStream, multiHead: Bool = false,
                    activation: Activation = .relu, epochs: Int = 3) throws -> (TrainingOutcome, Trainer) {
        let spec = MLPSpec(inputs: stream.dimension, hidden: [16, 8], activation: activation, head: stream.head,
                           heads: multiHead ? stream.experiences.count : 1)
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05, momentum: 0.9),
                              options: TrainingOptions(epochs: epochs, batchSize: 32), plugins: plugins, seed: 17)
        let outcome = try trainer.run(stream)
        return (outcome, trainer)
    }

    static func bwt(_ R: [[Double]]) -> Double {
        let T = R.count
        return (0..<(T - 1)).map { R[T - 1][$0] - R[$0][$0] }.reduce(0, +) / Double(T - 1)
    }

    // MARK: BWT exactly 0

    @Test(arguments: [false, true])
    func frozenCoreWithTaskIdRoutingHasZeroBackwardTransfer(multiHead: Bool) throws {
        let s = try Self.stream()
        for plugin in [Adapters.Options().makePlugin(), LoRA.Options().makePlugin()] {
            let (outcome, _) = try Self.run([plugin], stream: s, multiHead: multiHead)
            let R = outcome.accuracy
            for i in R.indices {
                for j in 0...i {
                    #expect(R[i][j] == R[j][j], "\(plugin.name): R[\(i)][\(j)] = \(R[i][j]) ≠ R[\(j)][\(j)] = \(R[j][j])")
                }
            }
            #expect(Self.bwt(R) == 0)
            // Learning happened: the last experience's accuracy moved away from the frozen core's.
            #expect(R.last!.last! != R[0].last!)
        }
    }

    /// Control: when the core keeps training (freeze_core_after beyond the stream), earlier
    /// accuracies change, so the zero-BWT test above can fail.
    @Test func coreThatKeepsTrainingForgets() throws {
        var o = Adapters.Options()
        o.freezeCoreAfter = 10
        let (outcome, _) = try Self.run([o.makePlugin()], stream: try Self.stream())
        #expect(outcome.accuracy[2][0] != outcome.accuracy[0][0] || outcome.accuracy[2][1] != outcome.accuracy[1][1])
    }

    // MARK: only intended parameters change

    /// Hand-computed trainable ranges of experience 1 (after the freeze) for 10→16→8→1, T = 3.
    /// Plain layout: L0 W 0..<160, b 160..<176; L1 W 176..<304, b 304..<312; L2 W 312..<320, b 320.
    static var expected: [(String, any StrategyPlugin, [Range<Int>], Int)] {
        // Adapters r = 4 after both hidden layers, 3 copies: adapter 0 at 321 (148 per copy),
        // adapter 1 at 321 + 3·148 = 765 (76 per copy). Copy 1 is the second block.
        let adapters: [Range<Int>] = [469..<617, 841..<917]
        // LoRA rank 2 on the 3 dense layers, 3 copies: 52, 48, 18 per copy, blocks at 321, 477, 621.
        let lora: [Range<Int>] = [373..<425, 525..<573, 639..<657]
        return [
            ("adapters", Adapters.Options().makePlugin(), adapters, 224),
            ("lora", LoRA.Options().makePlugin(), lora, 118),
            ("last_layer", LastLayer.Options().makePlugin(), [312..<321], 9),
            ("bitfit", BitFit.Options().makePlugin(), [160..<176, 304..<312, 320..<321], 25),
        ]
    }

    @Test func onlyTheIntendedParametersChange() throws {
        let s = try Self.stream()
        for (name, plugin, ranges, count) in Self.expected {
            let log = ParameterLog()
            let (outcome, trainer) = try Self.run([plugin, Recorder(log: log)], stream: s, activation: .tanh)
            let n = trainer.model.parameterCount
            var intended = [Bool](repeating: false, count: n)
            for r in ranges { for i in r { intended[i] = true } }
            #expect(intended.filter { $0 }.count == count, "\(name): hand count")
            for e in 1..<3 {
                let before = log.before[e], after = log.after[e]
                #expect(log.masks[e] != nil)
                if e == 1 { #expect(log.masks[e] == intended, "\(name): mask differs from the hand-computed ranges") }
                var frozenChanged = 0, trainableUnchanged = 0
                let mask = log.masks[e]!
                for i in 0..<n {
                    if !mask[i] && before[i].bitPattern != after[i].bitPattern { frozenChanged += 1 }
                    if mask[i] && before[i] == after[i] { trainableUnchanged += 1 }
                }
                #expect(frozenChanged == 0, "\(name) experience \(e): \(frozenChanged) frozen parameters changed")
                #expect(trainableUnchanged == 0, "\(name) experience \(e): \(trainableUnchanged) trainable parameters did not change")
                #expect(outcome.trainableParameters[e] == count, "\(name): trainable count \(outcome.trainableParameters[e])")
            }
        }
    }

    @Test func maskOfExperienceOneEqualsTheHandComputedRanges() throws {
        let s = try Self.stream()
        for (name, plugin, ranges, _) in Self.expected {
            let log = ParameterLog()
            _ = try Self.run([plugin, Recorder(log: log)], stream: s, epochs: 1)
            let mask = try #require(log.masks[1])
            let trueIndices = mask.indices.filter { mask[$0] }
            #expect(trueIndices == ranges.flatMap { Array($0) }, "\(name)")
        }
    }

    /// Hand count of the reported arrays for adapters (r = 4 after both hidden layers, T = 3):
    /// experience 0 trains the core (321) + adapter copy 0 (224); later ones only their copy.
    @Test func reportedParameterCountsMatchAHandCount() throws {
        let (outcome, _) = try Self.run([Adapters.Options().makePlugin()], stream: try Self.stream(), epochs: 1)
        let report = try #require(outcome.pluginReports.first?.1)
        #expect(report.arrays["trainable_parameters"]?.values == [545, 224, 224])
        #expect(report.arrays["parameters_added"]?.values == [224, 224, 224])
        #expect(report.arrays["bytes_added"]?.values == [896, 896, 896])
        #expect(outcome.trainableParameters == [545, 224, 224])
        #expect(outcome.finalModel.parameterCount == 321 + 3 * 224)

        var multi = LastLayer.Options()
        multi.freezeCoreAfter = 0
        let (o2, _) = try Self.run([multi.makePlugin()], stream: try Self.stream(), multiHead: true, epochs: 1)
        // Multi-head (3 heads of 9): experience 0 trains everything (321 - 18 + 27 = 339 parameters
        // in the model), later ones only their head; each experience adds its own head (9).
        let r2 = try #require(o2.pluginReports.first?.1)
        #expect(r2.arrays["trainable_parameters"]?.values == [339, 9, 9])
        #expect(r2.arrays["parameters_added"]?.values == [9, 9, 9])
    }

    // MARK: routing

    /// Two tasks on disjoint inputs; adapter 0 amplifies input 0, adapter 1 input 1, so the
    /// right adapter gives the more confident (lower-entropy) prediction.
    static func separableCase(swapped: Bool) throws -> (PluginReport, [Predictions], [Experience]) {
        var options = Adapters.Options()
        options.routing = .entropy
        options.layers = .list([0])
        options.bottleneck = 1
        options.activation = .identity
        var plugin = Adapters(options: options)
        var rng = RandomSource(seed: 1)
        var model = MLP(spec: MLPSpec(inputs: 2, hidden: [2], activation: .identity, head: .binary), rng: &rng)
        let context = RunContext(seed: 1, pluginIndex: 0, experienceCount: 2, dimension: 2, head: .binary,
                                 training: TrainingOptions(), featureNames: ["a", "b"])
        try plugin.prepare(model: &model, context: context)
        let dense = model.layers[0], adapter = model.layers[1], out = model.layers[2]
        model.parameters.replaceSubrange(dense.parameterRange(route: 0), with: [1, 0, 0, 1, 0, 0])   // identity
        model.parameters.replaceSubrange(out.parameterRange(route: 0), with: [1, 1, 0])
        for copy in 0..<2 {
            let o = adapter.adapterOffsets(route: copy)
            let dim = swapped ? 1 - copy : copy
            model.parameters.replaceSubrange(o.wDown..<(o.wDown + 2), with: dim == 0 ? [1, 0] : [0, 1])
            model.parameters.replaceSubrange(o.wUp..<(o.wUp + 2), with: dim == 0 ? [9, 0] : [0, 9])
        }
        let values: [Float] = [-1, -0.6, -0.3, -0.1, 0.1, 0.2, 0.5, 0.9]
        func samples(_ dim: Int) -> Samples {
            Samples(dimension: 2, features: values.flatMap { dim == 0 ? [$0, 0] : [0, $0] },
                    labels: values.map { $0 > 0 ? 1 : 0 })
        }
        let experiences = (0..<2).map { Experience(index: $0, name: "t\($0)", train: samples($0), test: samples($0)) }
        let ws = model.makeWorkspace()
        var predictions: [Predictions] = []
        for i in 0..<2 {
            try plugin.beforeExperience(model: &model, context: ExperienceContext(index: i, experiences: experiences, route: Int32(i)))
        }
        for j in 0..<2 {
            predictions.append(plugin.predictions(model: model, samples: experiences[j].test, experienceIndex: j, workspace: ws)!)
        }
        return (plugin.report(), predictions, experiences)
    }

    @Test func entropyRoutingPicksTheRightAdapterOnASeparableCase() throws {
        let (report, predictions, experiences) = try Self.separableCase(swapped: false)
        #expect(report.arrays["routing_accuracy_final"]?.values == [1, 1])
        #expect(report.attributes["routing"] == .string("entropy"))
        for j in 0..<2 { #expect(predictions[j].classes == experiences[j].test.labels) }
        // Binary head: each prediction carries the positive-class logit it was thresholded from
        // (positive exactly for class 1), so AUROC is measured on routed predictions too (1 here:
        // the case is separable).
        for j in 0..<2 {
            let scores = try #require(predictions[j].scores)
            #expect(zip(scores, predictions[j].classes).allSatisfy { ($0 > 0) == ($1 == 1) })
            let record = EvaluationRecord(labels: experiences[j].test.labels, predictions: predictions[j].classes,
                                          classes: 2, scores: scores)
            #expect(record.auroc == 1)
        }
        // With the adapters' roles swapped, every sample goes to the other adapter.
        let (swapped, _, _) = try Self.separableCase(swapped: true)
        #expect(swapped.arrays["routing_accuracy_final"]?.values == [0, 0])
    }

    @Test func adapterAndLoRARunsStoreAUROCForEveryEvaluation() throws {
        var a = Adapters.Options(), l = LoRA.Options()
        a.routing = .taskId
        l.routing = .taskId
        for plugin in [a.makePlugin(), l.makePlugin()] {
            let (outcome, _) = try Self.run([plugin], stream: try Self.stream(), epochs: 2)
            let records = outcome.progress.evaluations.flatMap { $0 }
            #expect(!records.isEmpty)
            #expect(records.allSatisfy { (0...1).contains($0.auroc) && (0...1).contains($0.auprc) })
        }
    }

    @Test func entropyRoutingReportsAMatrixOnHabitDrift() throws {
        var o = Adapters.Options()
        o.routing = .entropy
        let (outcome, _) = try Self.run([o.makePlugin()], stream: try Self.stream(), epochs: 2)
        let r = try #require(outcome.pluginReports.first?.1.arrays["routing_accuracy"])
        #expect(r.shape == [3, 3])
        // Row i holds experiences 0...i in 0...1 (NaN above the diagonal); after experience 0
        // there is one adapter, so routing is trivially right for experience 0.
        for i in 0..<3 {
            for j in 0..<3 {
                let v = r.values[i * 3 + j]
                if j <= i { #expect((0...1).contains(v)) } else { #expect(v.isNaN) }
            }
        }
        #expect(r.values[0] == 1)
    }

    @Test func contextRoutingTrainsOneAdapterPerContext() throws {
        var o = Adapters.Options()
        o.routing = .context
        let log = ParameterLog()
        let s = try Self.stream()
        let (outcome, trainer) = try Self.run([o.makePlugin(), Recorder(log: log)], stream: s, activation: .tanh)
        let model = trainer.model
        let adapter = model.layers[1]
        #expect(adapter.copies == 2 && adapter.routeStride == 3)
        // Both contexts occur in every phase, so both copies train in experience 1; the core does not.
        for context in 0..<2 {
            let range = adapter.parameterRange(route: context * 3 + 1)
            #expect(range.contains { log.before[1][$0] != log.after[1][$0] })
        }
        #expect((0..<321).allSatisfy { log.before[1][$0] == log.after[1][$0] })
        let report = try #require(outcome.pluginReports.first?.1)
        #expect(report.arrays["routing_accuracy_final"]?.values == [1, 1, 1])
        #expect(report.attributes["context_feature"] == .string("weekend_tomorrow"))
        #expect(report.arrays["parameters_added"]?.values == [448, 0, 0])
    }

    @Test func contextRoutingRejectsAnUnknownFeature() throws {
        var o = LoRA.Options()
        o.routing = .context
        o.contextFeature = "moon_phase"
        #expect(throws: TrainingError.self) { try Self.run([o.makePlugin()], stream: try Self.stream(), epochs: 1) }
    }
}
