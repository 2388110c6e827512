@testable import ContinualCore
import Foundation
import Testing
@testable import ContinualStrategies

/// CLS-ER (Arani et al. 2022) against its definition: the EMA with the authors' warm-up, the
/// update coins' frequencies, the per-row choice of the more confident memory as the consistency
/// target, and predictions by the stable memory.
@Suite("CLS-ER")
struct CLSERTests {
    static let spec = MLPSpec(inputs: 3, hidden: [5], activation: .tanh, head: .multiclass(classes: 3))

    static func prepared(_ options: CLSER.Options, seed: UInt64 = 5) throws -> (CLSER, MLP) {
        var rng = RandomSource(seed: seed)
        var model = MLP(spec: spec, rng: &rng)
        var plugin = CLSER(options: options)
        try plugin.prepare(model: &model, context: RunContext(seed: 1, pluginIndex: 0, experienceCount: 2, dimension: 3,
                                                               head: spec.head, training: TrainingOptions(batchSize: 4)))
        return (plugin, model)
    }

    static func step(_ plugin: inout CLSER, after: [Float]) {
        let zeros = [Float](repeating: 0, count: after.count)
        zeros.withUnsafeBufferPointer { z in
            after.withUnsafeBufferPointer { a in
                plugin.afterStep(StepObservation(taskGradient: z, totalGradient: z, parametersBefore: z, parametersAfter: a,
                                                 experienceIndex: 0, stepInExperience: 0))
            }
        }
    }

    @Test("every update is θ ← aθ + (1 − a)θ_W with a = min(1 − 1/(t + 1), α), recomputed in float64")
    func emaWithWarmUp() throws {
        var options = CLSER.Options()
        (options.plasticUpdateFrequency, options.stableUpdateFrequency) = (1, 1)
        (options.plasticAlpha, options.stableAlpha) = (0.6, 0.95)
        let made = try Self.prepared(options)
        var plugin = made.0
        let model = made.1
        var expectedP = model.parameters.map(Double.init), expectedS = expectedP
        var rng = RandomSource(seed: 9)
        for t in 1...12 {
            let working = model.parameters.map { $0 + Float(rng.normal()) }
            Self.step(&plugin, after: working)
            for (alpha, index) in [(0.6, 0), (0.95, 1)] {
                let a = min(1 - 1 / Double(t + 1), alpha)
                for i in working.indices {
                    let v = (index == 0 ? expectedP : expectedS)[i] * a + Double(working[i]) * (1 - a)
                    if index == 0 { expectedP[i] = v } else { expectedS[i] = v }
                }
            }
        }
        let p = try #require(plugin.plastic).parameters, s = try #require(plugin.stable).parameters
        #expect(zip(p, expectedP).allSatisfy { abs(Double($0) - $1) < 1e-5 * max(1, abs($1)) })
        #expect(zip(s, expectedS).allSatisfy { abs(Double($0) - $1) < 1e-5 * max(1, abs($1)) })
        #expect(plugin.globalStep == 12 && plugin.plasticUpdates == 12 && plugin.stableUpdates == 12)
        // The first update (t = 1) is a = 1/2 whatever α: the warm-up, not α = 0.95.
        let again = try Self.prepared(options)
        var fresh = again.0
        Self.step(&fresh, after: again.1.parameters.map { $0 + 1 })
        #expect(zip(try #require(fresh.stable).parameters, again.1.parameters).allSatisfy { s, p in abs(s - (p + 0.5)) < 1e-6 })
    }

    @Test("the update coins come up with probabilities r_P and r_S (binomial, 5 sigma over 20,000 steps)")
    func updateFrequencies() throws {
        var options = CLSER.Options()
        (options.plasticUpdateFrequency, options.stableUpdateFrequency) = (0.9, 0.3)
        let made = try Self.prepared(options)
        var plugin = made.0
        let n = 20_000
        for _ in 0..<n { Self.step(&plugin, after: made.1.parameters) }
        for (count, r) in [(plugin.plasticUpdates, 0.9), (plugin.stableUpdates, 0.3)] {
            let sigma = (Double(n) * r * (1 - r)).squareRoot()
            #expect(abs(Double(count) - Double(n) * r) < 5 * sigma, "\(count) of \(n) at r = \(r)")
        }
    }

    /// Two replayed rows: for each, the target is the memory whose softmax gives the true label
    /// more probability; the term adds 2λ(z − Z)/(|M|·C) to the logit gradient of replayed rows only.
    @Test("the consistency target is, per row, the memory more confident in the true label")
    func consistencyTarget() throws {
        var options = CLSER.Options()
        options.replayPerBatch = 8
        options.regWeight = 0.7
        let made = try Self.prepared(options)
        var plugin = made.0
        let model = made.1
        // Distinct memories: two other random networks, at a scale that makes them confident.
        var rng = RandomSource(seed: 3)
        plugin.plastic!.parameters = MLP(spec: Self.spec, rng: &rng).parameters.map { $0 * 3 }
        plugin.stable!.parameters = MLP(spec: Self.spec, rng: &rng).parameters.map { $0 * 3 }
        for i in 0..<8 {
            plugin.buffer.offer(features: (0..<3).map { _ in Float(rng.normal()) }[...], label: Int32(i % 3), route: 0, logits: nil, rng: &rng)
        }
        var batch = Batch(dimension: 3, capacity: 8)
        for i in 0..<3 { batch.append(features: (0..<3).map { _ in Float(rng.normal()) }, label: Int32(i), route: 0) }
        batch.ownCount = 3
        plugin.extendBatch(&batch, context: ExperienceContext(index: 1, experiences: [], route: 0))
        #expect(batch.count == 11)
        let n = batch.count, ws = model.makeWorkspace()
        func logits(_ net: MLP) -> [Double] {
            batch.features.withUnsafeBufferPointer { net.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
            return (0..<(n * 3)).map { Double(ws.logits[$0]) }
        }
        let z = logits(model), zP = logits(plugin.plastic!), zS = logits(plugin.stable!)
        var dz = [Float](repeating: 0, count: n * 3)
        let zf = z.map(Float.init)
        _ = zf.withUnsafeBufferPointer { zp in
            dz.withUnsafeMutableBufferPointer { g in
                plugin.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<n)[...], route: 0, logits: zp.baseAddress!,
                                                   logitGradient: g.baseAddress!, logitCount: 3, scale: 1 / Float(n),
                                                   model: model, experienceIndex: 1))
            }
        }
        func probability(_ l: [Double], _ r: Int, _ y: Int) -> Double {
            let row = Array(l[(r * 3)..<(r * 3 + 3)]), e = row.map { _exp($0 - row.max()!) }
            return e[y] / e.reduce(0, +)
        }
        var sources: [String] = []
        for r in 0..<n {
            for c in 0..<3 {
                var expected = 0.0
                if r >= 3 {
                    let y = Int(batch.labels[r])
                    let target = probability(zS, r, y) > probability(zP, r, y) ? zS : zP
                    expected = 2 * 0.7 * (z[r * 3 + c] - target[r * 3 + c]) / Double(8 * 3)
                    if c == 0 { sources.append(target == zS ? "stable" : "plastic") }
                }
                #expect(abs(Double(dz[r * 3 + c]) - expected) < 1e-5, "row \(r) class \(c)")
            }
        }
        // The test is only worth something if both memories were chosen at least once.
        #expect(Set(sources) == ["stable", "plastic"], "\(sources)")
        #expect(plugin.buffer.offered == 11)   // the 8 stored + the 3 incoming rows offered
    }

    @Test("predictions come from the stable memory by default, from the working model on request")
    func stableMemoryPredicts() throws {
        let made = try Self.prepared(CLSER.Options())
        var plugin = made.0
        let model = made.1
        var rng = RandomSource(seed: 4)
        plugin.stable!.parameters = MLP(spec: Self.spec, rng: &rng).parameters.map { $0 * 3 }
        let samples = Samples(dimension: 3, features: (0..<60).map { _ in Float(rng.normal()) }, labels: [Int32](repeating: 0, count: 20))
        let ws = model.makeWorkspace()
        let answer = plugin.predictions(model: model, samples: samples, experienceIndex: 0, workspace: ws)
        let byStable = try #require(answer)
        let expected = TestEvaluation(model: plugin.stable!, samples: samples, route: 0, workspace: ws).predictions
        let working = TestEvaluation(model: model, samples: samples, route: 0, workspace: ws).predictions
        #expect(byStable.classes == expected && expected != working)
        var options = CLSER.Options()
        options.inference = .working
        let working2 = try Self.prepared(options)
        var other = working2.0
        #expect(other.predictions(model: working2.1, samples: samples, experienceIndex: 0, workspace: ws) == nil)
    }
}
