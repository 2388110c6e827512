import Testing
@testable import ContinualCore
import ContinualScenarios
@testable import ContinualStrategies

/// The Trainer's loop: hook order, determinism, divergence, evaluation shape, naive vs joint.
@Suite struct TrainerTests {
    static func smallHabitStream(seed: UInt64 = 3, train: Int = 400, test: Int = 200) throws -> ExperienceStream {
        try HabitDriftScenario(trainPerExperience: train, testPerExperience: test).makeStream(seed: seed)
    }

    static let spec = MLPSpec(inputs: 10, hidden: [16, 8])

    func train(_ plugins: [any StrategyPlugin], stream: ExperienceStream, seed: UInt64 = 1, epochs: Int = 5,
               optimizer: OptimizerSpec = .sgd(learningRate: 0.05, momentum: 0.9), heads: Int = 1) throws -> TrainingOutcome {
        var spec = Self.spec
        spec.heads = heads
        var trainer = Trainer(spec: spec, optimizer: optimizer, options: TrainingOptions(epochs: epochs, batchSize: 32),
                              plugins: plugins, seed: seed)
        return try trainer.run(stream)
    }

    /// Records the order in which hooks fire.
    struct Recorder: StatelessPlugin, StepObserver {
        var name: String { "recorder" }
        var log: [String] = []
        var steps = 0
        var batchesExtended = 0
        mutating func prepare(model: inout MLP, context: RunContext) throws { log.append("prepare") }
        mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws { log.append("before\(context.index)") }
        mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) { log.append("set\(context.index)") }
        mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) { batchesExtended += 1 }
        mutating func afterStep(_ step: StepObservation) { steps += 1 }
        mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
            log.append("after\(context.index)")
        }
        func report() -> PluginReport {
            PluginReport(attributes: ["log": .string(log.joined(separator: ",")), "steps": .int(Int64(steps)),
                                      "batches": .int(Int64(batchesExtended))])
        }
    }

    @Test func hooksFireInTheDocumentedOrder() throws {
        let stream = try Self.smallHabitStream(train: 100, test: 20)
        let outcome = try train([Recorder()], stream: stream, epochs: 2)
        let report = outcome.pluginReports[0].report
        let expected = ["prepare"] + (0..<5).flatMap { ["before\($0)", "set\($0)", "after\($0)"] }
        #expect(report.attributes["log"] == .string(expected.joined(separator: ",")))
        // 100 samples, batch 32 → 4 batches per epoch, 2 epochs, 5 experiences.
        #expect(report.attributes["steps"] == .int(40))
        #expect(report.attributes["batches"] == .int(40))
        #expect(outcome.steps == [8, 8, 8, 8, 8])
        #expect(outcome.samplesProcessed == [200, 200, 200, 200, 200])
    }

    @Test func sameSeedGivesBitIdenticalOutcomes() throws {
        let stream = try Self.smallHabitStream()
        let a = try train([Naive()], stream: stream)
        let b = try train([Naive()], stream: stream)
        #expect(a.accuracy == b.accuracy)
        #expect(a.lossCurve == b.lossCurve)
        #expect(a.finalModel.parameters.map(\.bitPattern) == b.finalModel.parameters.map(\.bitPattern))
        let c = try train([Naive()], stream: stream, seed: 2)
        #expect(c.finalModel.parameters != a.finalModel.parameters)
    }

    @Test func accuracyMatrixAndBaselinesHaveTheDocumentedShape() throws {
        let stream = try Self.smallHabitStream()
        let o = try train([Naive()], stream: stream)
        #expect(o.accuracy.count == 5 && o.accuracy.allSatisfy { $0.count == 5 })
        #expect(o.initialAccuracy.count == 5 && o.randomAccuracy.count == 5)
        #expect(o.testSizes == [200, 200, 200, 200, 200])
        #expect(o.lossCurve.count == 5 && o.lossCurve.allSatisfy { $0.count == 5 })
        // The random baseline is a different network from the run's own initial weights.
        #expect(o.initialAccuracy != o.randomAccuracy)
        for row in o.accuracy { for v in row { #expect((0...1).contains(v)) } }
        // Training lowers the loss within an experience.
        #expect(o.lossCurve[0].last! < o.lossCurve[0].first!)
    }

    @Test func hugeLearningRateIsReportedAsDivergence() throws {
        let stream = try Self.smallHabitStream(train: 100, test: 20)
        #expect(throws: TrainingError.self) {
            _ = try train([Naive()], stream: stream, optimizer: .sgd(learningRate: 1e6, momentum: 0.9))
        }
        do {
            _ = try train([Naive()], stream: stream, optimizer: .sgd(learningRate: 1e30))
        } catch let TrainingError.diverged(experience, _, loss) {
            #expect(experience == 0)
            #expect(!loss.isFinite)
        }
    }

    @Test func naiveForgetsAndJointForgetsLess() throws {
        let stream = try Self.smallHabitStream(train: 1000, test: 300)
        let naive = try train([Naive()], stream: stream, epochs: 10)
        let joint = try train([Joint()], stream: stream, epochs: 10)
        func bwt(_ r: [[Double]]) -> Double {
            let T = r.count
            return (0..<(T - 1)).map { r[T - 1][$0] - r[$0][$0] }.reduce(0, +) / Double(T - 1)
        }
        #expect(bwt(naive.accuracy) < -0.1)
        #expect(bwt(joint.accuracy) > bwt(naive.accuracy) + 0.1)
        let accNaive = naive.accuracy[4].reduce(0, +) / 5, accJoint = joint.accuracy[4].reduce(0, +) / 5
        #expect(accJoint > accNaive)
    }

    @Test func jointTrainsOnEverythingSeenSoFar() throws {
        let stream = try Self.smallHabitStream(train: 100, test: 20)
        let o = try train([Joint()], stream: stream, epochs: 1)
        #expect(o.trainSetSizes == [100, 200, 300, 400, 500])
    }

    @Test func multiHeadTrainsOnlyTheCurrentHead() throws {
        let stream = try Self.smallHabitStream(train: 100, test: 20)
        var spec = Self.spec
        spec.heads = 5
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: 1),
                              plugins: [Naive()], seed: 1)
        let initial = trainer.model
        let o = try trainer.run(stream)
        let head = initial.layers.last!
        for r in 0..<5 {
            // Every head moved (each was trained on its experience)...
            #expect(head.parameterRange(route: r).contains { o.finalModel.parameters[$0] != initial.parameters[$0] })
        }
        // ...and joint on a multi-head model keeps each sample's own head (mixed-route batches).
        var trainer2 = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: 1),
                               plugins: [Joint()], seed: 1)
        _ = try trainer2.run(stream)
    }

    /// Weight decay and carried-over momentum must not move the heads of finished experiences:
    /// only shared parameters and the heads of routes present in a batch are stepped.
    @Test(arguments: [
        OptimizerSpec.adamw(learningRate: 0.01, weightDecay: 0.1),
        .sgd(learningRate: 0.05, momentum: 0.9, weightDecay: 0.01),
    ])
    func finishedHeadsStayBitIdentical(_ optimizer: OptimizerSpec) throws {
        let stream = try Self.smallHabitStream(train: 100, test: 20)
        var spec = Self.spec
        spec.heads = 5
        let head = spec.layers().last!
        var snapshots: [[Float]] = []
        /// Records the model after each experience.
        struct Snapshot: StatelessPlugin {
            var name: String { "snapshot" }
            var models: [[Float]] = []
            mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
                models.append(model.parameters)
            }
            func report() -> PluginReport {
                PluginReport(arrays: ["p": .init(values: models.flatMap { $0.map(Double.init) })])
            }
        }
        var trainer = Trainer(spec: spec, optimizer: optimizer,
                              options: TrainingOptions(epochs: 2, resetOptimizerPerExperience: false),
                              plugins: [Snapshot()], seed: 1)
        let o = try trainer.run(stream)
        let flat = o.pluginReports[0].report.arrays["p"]!.values
        let p = spec.layers().last!.offset + head.parameterCount
        snapshots = (0..<5).map { i in flat[(i * p)..<((i + 1) * p)].map { Float($0) } }
        for j in 0..<4 {
            let range = head.parameterRange(route: j)
            for later in (j + 1)..<5 {
                #expect(range.allSatisfy { snapshots[later][$0].bitPattern == snapshots[j][$0].bitPattern },
                        "head \(j) moved during experience \(later)")
            }
        }
        // Shared layers did keep training.
        #expect(snapshots[4][0] != snapshots[0][0])
    }

    @Test func tooFewHeadsIsAnError() throws {
        let stream = try Self.smallHabitStream(train: 50, test: 10)
        var spec = Self.spec
        spec.heads = 2
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(),
                              plugins: [Naive()], seed: 1)
        #expect(throws: TrainingError.self) { _ = try trainer.run(stream) }
    }
}
