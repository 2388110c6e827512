@testable import ContinualCore
@testable import ContinualStrategies
import Foundation
import Testing

/// BI-R's internal replay: the first layer is frozen after the first experience, the replayed
/// rows are its activations (never appended to the batch), and runs resume bit-identically.
@Suite("BIR internal replay") struct BIRInternalTests {
    /// Class-incremental Gaussian blobs in 6 dimensions: classes {0, 1}, {2}, {3}.
    static func stream() -> ExperienceStream { RehearsalFixtures.blobs(seed: 19, perClass: 24) }

    static func trainer(internalReplay: Bool = true) -> Trainer {
        var options = BIR.Options()
        options.internalReplay = internalReplay
        options.latent = 3
        return Trainer(spec: MLPSpec(inputs: 6, hidden: [8, 6], head: .multiclass(classes: 4)), optimizer: .adam(learningRate: 0.01),
                       options: TrainingOptions(epochs: 2, batchSize: 16), plugins: [BIR(options: options)], seed: 11)
    }

    /// The first layer's parameters after the last experience are bit-identical to those after
    /// the first; every other layer keeps training. Without internal replay the first layer moves.
    @Test func firstLayerIsFrozenAfterTheFirstExperience() throws {
        let stream = Self.stream()
        var first = Self.trainer(), whole = Self.trainer()
        let after0 = try first.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: 0).finalModel
        let end = try whole.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: nil).finalModel
        let frozen = end.layers[0].parameterCount
        #expect(frozen == 6 * 8 + 8)
        #expect(end.parameters[..<frozen].map(\.bitPattern) == after0.parameters[..<frozen].map(\.bitPattern))
        #expect(zip(end.parameters[frozen...], after0.parameters[frozen...]).filter { $0 != $1 }.count > (end.parameterCount - frozen) / 2)
        var plain = Self.trainer(internalReplay: false)
        let moved = try plain.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: nil).finalModel
        #expect(moved.parameters[..<frozen] != after0.parameters[..<frozen])
    }

    /// Stopping after each experience and resuming from the encoded checkpoint gives the
    /// uninterrupted run's bits; the same seed gives the same bits.
    @Test func resumesBitIdentically() throws {
        let stream = Self.stream()
        var whole = Self.trainer()
        let expected = try whole.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: nil)
        var again = Self.trainer()
        #expect(try again.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: nil).finalModel.parameters.map(\.bitPattern)
            == expected.finalModel.parameters.map(\.bitPattern))
        for k in 0..<2 {
            var part = Self.trainer()
            _ = try part.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: k)
            let checkpoint = try TrainerCheckpoint(decoding: try #require(part.checkpoint).encoded())
            var rest = Self.trainer()
            let resumed = try rest.run(stream, source: EpochSource(), resumingFrom: checkpoint, stopAfter: nil)
            #expect(resumed.finalModel.parameters.map(\.bitPattern) == expected.finalModel.parameters.map(\.bitPattern), "after \(k)")
            #expect(resumed.accuracy.map { $0.map(\.bitPattern) } == expected.accuracy.map { $0.map(\.bitPattern) })
        }
    }

    /// A second-experience step: no row is appended; the replayed rows' distillation gradient on
    /// the layers above the first equals central differences of its loss; the first layer gets
    /// no gradient from the VAE or the replay.
    @Test func replayedActivationsTrainTheLayersAboveOnly() throws {
        var options = BIR.Options()
        options.internalReplay = true
        var (bir, model, train) = try BIRStepTests.setUp(options)
        let first = ExperienceContext(index: 0, experiences: [Experience(index: 0, name: "a", train: train, test: train)], route: 0)
        try bir.beforeExperience(model: &model, context: first)
        try bir.afterExperience(model: &model, context: first, workspace: model.makeWorkspace())
        model.parameters = model.parameters.map { $0 * 1.1 + 0.01 }
        let context = ExperienceContext(index: 1, experiences: [first.experiences[0], Experience(index: 1, name: "b", train: train, test: train)], route: 0)
        try bir.beforeExperience(model: &model, context: context)
        #expect(model.trainable?.prefix(20).allSatisfy { !$0 } == true && model.trainable?.dropFirst(20).allSatisfy { $0 } == true)
        var batch = Batch(dimension: 3, capacity: 16)
        for i in 0..<4 { batch.append(from: train, index: i, route: 0) }
        batch.ownCount = 4
        bir.extendBatch(&batch, context: context)
        #expect(batch.count == 4 && bir.replayLevel.count == 4 * 5)
        let level = bir.replayLevel, targets = bir.replayTargets
        var rows = BIR.VAERows(), gradient = [Float](repeating: 0, count: model.parameterCount)
        let z = [Float](repeating: 0, count: 12)
        var dz = z
        _ = z.withUnsafeBufferPointer { zp in
            dz.withUnsafeMutableBufferPointer { g in
                gradient.withUnsafeMutableBufferPointer { pg in
                    bir.internalReplayTerms(BatchLossInput(batch: batch, rows: Array(0..<4)[...], route: 0, logits: zp.baseAddress!,
                                                           logitGradient: g.baseAddress!, logitCount: 3, scale: 0.25, model: model,
                                                           experienceIndex: 1, parameterGradient: pg.baseAddress!), gradient: pg.baseAddress!, into: &rows)
                }
            }
        }
        #expect(gradient[..<20].allSatisfy { $0 == 0 } && rows.x == level)
        func loss(_ p: [Float]) -> Double {
            let net = MLP(spec: bir.above!.spec, parameters: Array(p[20...])), ws = net.makeWorkspace()
            level.withUnsafeBufferPointer { net.forward($0.baseAddress!, count: 4, route: 0, workspace: ws) }
            return (0..<4).reduce(0.0) { $0 + 0.5 / 4 * FeedbackGenerator.distillation(logits: ws.logits + $1 * 3, targets: targets[$1], active: nil, temperature: 2).loss }
        }
        for i in 20..<model.parameterCount {
            var p = model.parameters, m = model.parameters
            p[i] += 1e-2; m[i] -= 1e-2
            let numeric = (loss(p) - loss(m)) / 2e-2
            #expect(abs(numeric - Double(gradient[i])) < 2e-3 * max(1, abs(numeric)), "parameter \(i): \(gradient[i]) vs \(numeric)")
        }
    }
}
