@testable import ContinualCore
@testable import ContinualStrategies
import Foundation
import Testing

/// BI-R's step through the plugin hooks: replay through feedback (the VAE loss's gradient lands in
/// the classifier's hidden layers and nowhere else), and the replayed rows' distillation and 1/t
/// weighting in the logit gradient.
@Suite("BIR step") struct BIRStepTests {
    static let spec = MLPSpec(inputs: 3, hidden: [5, 4], activation: .relu, head: .multiclass(classes: 3))

    static func setUp(_ options: BIR.Options = BIR.Options()) throws -> (BIR, MLP, Samples) {
        var rng = RandomSource(seed: 8)
        var model = MLP(spec: spec, rng: &rng)
        var bir = BIR(options: options)
        try bir.prepare(model: &model, context: RunContext(seed: 5, pluginIndex: 0, experienceCount: 2, dimension: 3,
                                                           head: .multiclass(classes: 3), training: TrainingOptions(batchSize: 4)))
        var train = Samples(dimension: 3)
        for i in 0..<8 {
            train.features += (0..<3).map { _ in Float(rng.normal()) }
            train.labels.append(Int32(i % 2))
        }
        return (bir, model, train)
    }

    /// Runs `addBatchLoss` on `batch` with the loop's logit gradient (mean CE over all rows);
    /// returns the logit gradient after it and the parameter gradient it added.
    static func step(_ bir: inout BIR, _ model: MLP, _ batch: Batch) -> (logits: [Float], loop: [Float], after: [Float], gradient: [Float]) {
        let n = batch.count, ws = model.makeWorkspace()
        batch.features.withUnsafeBufferPointer { model.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
        let logits = Array(UnsafeBufferPointer(start: ws.logits, count: n * 3))
        var dz = logits
        _ = batch.labels.withUnsafeBufferPointer {
            Loss.lossAndLogitGradient(head: model.spec.head, logits: &dz, labels: $0.baseAddress!, count: n, scale: 1 / Float(n))
        }
        let loop = dz
        var gradient = [Float](repeating: 0, count: model.parameterCount)
        _ = logits.withUnsafeBufferPointer { z in
            dz.withUnsafeMutableBufferPointer { g in
                gradient.withUnsafeMutableBufferPointer { pg in
                    bir.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<n)[...], route: 0, logits: z.baseAddress!,
                                                    logitGradient: g.baseAddress!, logitCount: 3, scale: 1 / Float(n), model: model,
                                                    experienceIndex: 0, parameterGradient: pg.baseAddress!))
                }
            }
        }
        return (logits, loop, dz, gradient)
    }

    /// The VAE loss of a first-experience step, differentiated by central differences with respect
    /// to the classifier's parameters: equal to what the step added to the classifier's hidden
    /// layers; the head gets nothing from it; the plugin's own parameters take one Adam step.
    @Test func feedbackTrainsTheSharedHiddenLayersOnly() throws {
        var (bir, model, train) = try Self.setUp()
        let context = ExperienceContext(index: 0, experiences: [Experience(index: 0, name: "a", train: train, test: train)], route: 0)
        try bir.beforeExperience(model: &model, context: context)
        var batch = Batch(dimension: 3, capacity: 16)
        for i in 0..<4 { batch.append(from: train, index: i, route: 0) }
        batch.ownCount = 4
        bir.extendBatch(&batch, context: context)
        #expect(batch.count == 4, "no replay in the first experience")
        let gen = try #require(bir.generator)
        var noise = bir.noise
        let eps = (0..<(4 * gen.latent)).map { _ in Float(noise.normal()) }
        let (_, loop, after, gradient) = Self.step(&bir, model, batch)
        #expect(after == loop, "first experience: one weight per row, the loop's CE untouched")
        let hiddenCount = try model.penultimateNetwork(for: "test", training: TrainingOptions()).parameterCount
        #expect(gradient[hiddenCount...].allSatisfy { $0 == 0 }, "the head is not in the VAE loss")
        #expect(gradient[..<hiddenCount].filter { $0 != 0 }.count > hiddenCount / 2)
        let x = (0..<4).flatMap { batch.row($0) }
        let pi = (0..<4).flatMap { r in (0..<3).map { Float($0 == Int(batch.labels[r]) ? 1 : 0) } }
        func vae(_ p: [Float]) throws -> Double {
            var m = model
            m.parameters = p
            let net = try m.penultimateNetwork(for: "test", training: TrainingOptions()), ws = net.makeWorkspace()
            x.withUnsafeBufferPointer { net.forward($0.baseAddress!, count: 4, route: 0, workspace: ws) }
            let h = (0..<16).map { max(ws.logits[$0], 0) }
            return gen.loss(h: h, x: x, pi: pi, weights: [0.25, 0.25, 0.25, 0.25], noise: eps)
        }
        for i in 0..<hiddenCount {
            var p = model.parameters, m = model.parameters
            p[i] += 1e-2; m[i] -= 1e-2
            let numeric = (try vae(p) - vae(m)) / 2e-2
            #expect(abs(numeric - Double(gradient[i])) < 3e-3 * max(1, abs(numeric)), "parameter \(i): \(gradient[i]) vs \(numeric)")
        }
        #expect(bir.generator!.parameters != gen.parameters, "toZ, decoder and prior take their Adam step")
    }

    /// Second experience (t = 2): the replayed rows carry seen classes; own rows' gradient is
    /// (1/t)/own · (p − y); replayed rows' is (1 − 1/t)/replayed · T (softmax(z/T) − softmax(z_prev/T)),
    /// the loop's CE on them removed.
    @Test func replayedRowsAreDistilledAndWeighted() throws {
        var (bir, model, train) = try Self.setUp()
        let first = ExperienceContext(index: 0, experiences: [Experience(index: 0, name: "a", train: train, test: train)], route: 0)
        try bir.beforeExperience(model: &model, context: first)
        try bir.afterExperience(model: &model, context: first, workspace: model.makeWorkspace())
        let previous = model
        model.parameters = model.parameters.map { $0 * 1.1 + 0.01 }
        var second = train
        second.labels = second.labels.map { _ in 2 }
        let context = ExperienceContext(index: 1, experiences: [Experience(index: 0, name: "a", train: train, test: train),
                                                                Experience(index: 1, name: "b", train: second, test: second)], route: 0)
        try bir.beforeExperience(model: &model, context: context)
        var batch = Batch(dimension: 3, capacity: 16)
        for i in 0..<4 { batch.append(from: second, index: i, route: 0) }
        batch.ownCount = 4
        bir.extendBatch(&batch, context: context)
        #expect(batch.count == 8 && (4..<8).allSatisfy { batch.labels[$0] == 0 || batch.labels[$0] == 1 })
        let (logits, _, after, _) = Self.step(&bir, model, batch)
        let ws = previous.makeWorkspace()
        for r in 0..<8 {
            let z = Array(logits[(r * 3)..<(r * 3 + 3)].map(Double.init))
            if r < 4 {
                let lse = _log(z.reduce(0) { $0 + _exp($1) })
                for c in 0..<3 {
                    let want = 0.5 / 4 * (_exp(z[c] - lse) - (c == 2 ? 1 : 0))
                    #expect(abs(Double(after[r * 3 + c]) - want) < 1e-6, "own row \(r) class \(c)")
                }
            } else {
                _ = batch.row(r).withContiguousStorageIfAvailable { previous.forward($0.baseAddress!, count: 1, route: 0, workspace: ws) }
                let zp = (0..<2).map { Double(ws.logits[$0]) / 2 }
                let t = [_exp(zp[0]) / (_exp(zp[0]) + _exp(zp[1])), _exp(zp[1]) / (_exp(zp[0]) + _exp(zp[1])), 0]
                let lse = _log(z.reduce(0) { $0 + _exp($1 / 2) })
                for c in 0..<3 {
                    let want = 0.5 / 4 * 2 * (_exp(z[c] / 2 - lse) - t[c])
                    #expect(abs(Double(after[r * 3 + c]) - want) < 1e-6, "replayed row \(r) class \(c)")
                }
            }
        }
    }
}
