import Foundation
import Testing
@testable import ContinualCore
import ContinualScenarios
@testable import ContinualStrategies

/// The loss-based defences drop exactly the samples with the largest loss, and nothing else.
@Suite struct PoisoningDefenceTests {
    static let spec = MLPSpec(inputs: 10, hidden: [8])

    static func experience(count: Int, seed: UInt64 = 3) throws -> ExperienceStream {
        var s = try HabitDriftScenario(trainPerExperience: count, testPerExperience: 20).makeStream(seed: seed)
        s.experiences = [s.experiences[0]]
        return s
    }

    /// Each row's cross-entropy under `model`, computed row by row (an independent forward pass).
    static func rowLosses(_ model: MLP, _ data: Samples) -> [Double] {
        let ws = model.makeWorkspace(capacity: 1)
        return (0..<data.count).map { r in
            Array(data.row(r)).withUnsafeBufferPointer { model.forward($0.baseAddress!, count: 1, route: 0, workspace: ws) }
            let z = Double(ws.logits[0]), y = Double(data.labels[r])
            return max(z, 0) - y * z + log1p(exp(-abs(z)))
        }
    }

    @Test("ranking: the count largest losses, ties by lower index, NaN first; ⌊q·n⌋ of n")
    func ranking() {
        #expect(LossRanking.largest(2, of: [0.1, 0.9, 0.5, 0.9]) == [1, 3])
        #expect(LossRanking.largest(2, of: [0.3, 0.3, 0.3]) == [0, 1])
        #expect(LossRanking.largest(1, of: [5, .nan, 7]) == [1])
        #expect(LossRanking.largest(0, of: [1, 2]) == [])
        #expect(LossRanking.dropCount(0.2, of: 32) == 6 && LossRanking.dropCount(0.2, of: 4) == 0 && LossRanking.dropCount(0.5, of: 5) == 2)
    }

    @Test("loss_filter: one full-batch SGD step is the step on the kept rows, weighted 1/B")
    func lossFilterStep() throws {
        let stream = try Self.experience(count: 40)
        let data = stream.experiences[0].train
        let q = 0.25, B = data.count, m = LossRanking.dropCount(q, of: B)
        func step(_ plugins: [any StrategyPlugin], on s: ExperienceStream) throws -> MLP {
            var t = Trainer(spec: Self.spec, optimizer: .sgd(learningRate: 0.5), options: TrainingOptions(epochs: 1, batchSize: B),
                            plugins: plugins, seed: 2)
            return try t.run(s).finalModel
        }
        let start = Trainer(spec: Self.spec, optimizer: .sgd(learningRate: 0.5), options: TrainingOptions(epochs: 1, batchSize: B),
                            plugins: [], seed: 2).model
        let dropped = Set(LossRanking.largest(m, of: Self.rowLosses(start, data)))
        #expect(dropped.count == 10)
        var kept = stream
        kept.experiences[0].train = data.subset((0..<B).filter { !dropped.contains($0) })
        let filtered = try step([LossFilter(options: .init(fraction: q))], on: stream)
        let onKept = try step([], on: kept)
        // Plain training on the kept rows averages over B − m rows; the filter keeps weight 1/B.
        let w = Float(B - m) / Float(B)
        for i in start.parameters.indices {
            let expected = start.parameters[i] + w * (onKept.parameters[i] - start.parameters[i])
            #expect(abs(filtered.parameters[i] - expected) <= 2e-6, "parameter \(i)")
        }
        // Dropping the lowest-loss rows instead (a wrong ranking) lands far from it.
        let lowest = Set(LossRanking.largest(m, of: Self.rowLosses(start, data).map { -$0 }))
        var wrong = stream
        wrong.experiences[0].train = data.subset((0..<B).filter { !lowest.contains($0) })
        let wrongStep = try step([], on: wrong)
        #expect(start.parameters.indices.contains { i in
            abs(start.parameters[i] + w * (wrongStep.parameters[i] - start.parameters[i]) - filtered.parameters[i]) > 1e-3 })
    }

    @Test("trimmed_loss keeps exactly the n − ⌊q·n⌋ samples with the smallest loss under the model before the experience")
    func trimmedLossSet() throws {
        let stream = try Self.experience(count: 50)
        var rng = RandomSource(seed: 11)
        var model = MLP(spec: Self.spec, rng: &rng)
        var plugin = TrimmedLoss(options: .init(fraction: 0.3))
        let context = ExperienceContext(index: 0, experiences: stream.experiences, route: 0)
        try plugin.beforeExperience(model: &model, context: context)
        var set = stream.experiences[0].train
        plugin.adjustTrainingSet(&set, context: context)
        let losses = Self.rowLosses(model, stream.experiences[0].train)
        let dropped = Set(LossRanking.largest(15, of: losses))
        #expect(set == stream.experiences[0].train.subset((0..<50).filter { !dropped.contains($0) }))
        #expect(set.count == 35)
        // Every kept sample's loss is at most every dropped sample's.
        let keptMax = (0..<50).filter { !dropped.contains($0) }.map { losses[$0] }.max()!
        #expect(dropped.allSatisfy { losses[$0] >= keptMax - 1e-6 })
    }
}
