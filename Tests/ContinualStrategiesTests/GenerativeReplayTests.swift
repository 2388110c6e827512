@testable import ContinualCore
@testable import ContinualStrategies
import Foundation
import Testing

@Suite("Generative replay") struct GenerativeReplayTests {
    /// A tiny VAE and a batch with unequal row weights and fixed noise.
    static func fixture(_ reconstruction: VariationalAutoencoder.Reconstruction)
        -> (VariationalAutoencoder, [Float], [Float], [Float]) {
        var rng = RandomSource(seed: 5)
        var vae = VariationalAutoencoder(dimension: 3, hidden: [4], latent: 2, reconstruction: reconstruction,
                                         learningRate: 0.001, rng: &rng)
        // Move off the initialisation so log σ² and μ are not ≈ 0 (their terms would vanish).
        for i in vae.encoder.parameters.indices { vae.encoder.parameters[i] += Float(rng.uniform() - 0.5) * 0.8 }
        for i in vae.decoder.parameters.indices { vae.decoder.parameters[i] += Float(rng.uniform() - 0.5) * 0.8 }
        let n = 3
        let x = (0..<(n * 3)).map { _ in reconstruction == .bernoulli ? Float(rng.uniform()) : Float(rng.normal()) }
        let noise = (0..<(n * 2)).map { _ in Float(rng.normal()) }
        return (vae, x, [0.2, 0.3, 0.5], noise)
    }

    /// ∂(Σ w_i · negative ELBO_i)/∂θ of encoder and decoder, with the reparameterisation's noise
    /// fixed, against central differences of the loss (float64 sums of a float32 network).
    @Test("VAE gradient matches finite differences", arguments: VariationalAutoencoder.Reconstruction.allCases)
    func gradient(_ reconstruction: VariationalAutoencoder.Reconstruction) {
        let (vae, x, w, noise) = Self.fixture(reconstruction)
        var gEnc = [Float](repeating: 0, count: vae.encoder.parameterCount)
        var gDec = [Float](repeating: 0, count: vae.decoder.parameterCount)
        _ = gEnc.withUnsafeMutableBufferPointer { ge in
            gDec.withUnsafeMutableBufferPointer { gd in
                vae.loss(x, weights: w, noise: noise, encoderGradient: ge.baseAddress!, decoderGradient: gd.baseAddress!)
            }
        }
        let h: Float = 1e-2
        var worst = 0.0
        for (which, analytic) in [(0, gEnc), (1, gDec)] {
            for i in analytic.indices {
                var plus = vae, minus = vae
                if which == 0 { plus.encoder.parameters[i] += h; minus.encoder.parameters[i] -= h } else {
                    plus.decoder.parameters[i] += h; minus.decoder.parameters[i] -= h
                }
                let numeric = (plus.loss(x, weights: w, noise: noise) - minus.loss(x, weights: w, noise: noise)) / Double(2 * h)
                let error = abs(numeric - Double(analytic[i])) / max(1, abs(numeric))
                worst = max(worst, error)
                #expect(error < 5e-3, "parameter \(i) of the \(which == 0 ? "encoder" : "decoder"): \(analytic[i]) vs \(numeric)")
            }
        }
        // Every parameter of both networks gets a gradient (none silently dropped).
        #expect(gEnc.filter { $0 != 0 }.count > gEnc.count / 2 && gDec.filter { $0 != 0 }.count > gDec.count / 2)
    }

    /// The loss by hand for one row with a linear decoder and encoder (no hidden layers).
    @Test func lossByHand() {
        var rng = RandomSource(seed: 1)
        var vae = VariationalAutoencoder(dimension: 1, hidden: [], latent: 1, reconstruction: .gaussian,
                                         learningRate: 0.001, rng: &rng)
        // Encoder [x] → [μ, log σ²]: weights [1 × 2] then biases; decoder [z] → [l].
        vae.encoder.parameters = [0.5, -1, 0.1, 0.2]   // μ = 0.5x + 0.1, log σ² = −x + 0.2
        vae.decoder.parameters = [2, -0.3]              // l = 2z − 0.3
        let x: Float = 0.8, eps: Float = 0.7
        let mu = 0.5 * 0.8 + 0.1, lv = -0.8 + 0.2
        let z = mu + exp(0.5 * lv) * 0.7
        let l = 2 * z - 0.3
        let expected = 0.5 * (l - 0.8) * (l - 0.8) - 0.5 * (1 + lv - mu * mu - exp(lv))
        let value = vae.loss([x], weights: [1], noise: [eps])
        #expect(abs(value - expected) < 1e-6, "\(value) vs \(expected)")
    }

    /// The previous solver labels a generated row with its most probable class among the classes
    /// it was trained on for the row's route; a binary head labels by the logit's sign.
    @Test func labelsComeFromTheSeenClassesOfTheRoute() {
        // Linear 2 → 3 model: logits = x·W + b, W row-major [inputs × outputs].
        let spec = MLPSpec(inputs: 2, hidden: [], head: .multiclass(classes: 3))
        let solver = MLP(spec: spec, parameters: [3, 2, 1,
                                                  0, 0, 0,
                                                  0, 0, 0])
        let x: [Float] = [1, 0, 1, 0]   // two rows, logits (3, 2, 1)
        let all = GenerativeReplay.label(x, routes: [0, 0], solver: solver, seen: [0: [true, true, true]], dimension: 2)
        #expect(all == [0, 0])
        let unseen0 = GenerativeReplay.label(x, routes: [0, 0], solver: solver, seen: [0: [false, true, true]], dimension: 2)
        #expect(unseen0 == [1, 1])
        let only2 = GenerativeReplay.label(x, routes: [0, 0], solver: solver, seen: [0: [false, false, true]], dimension: 2)
        #expect(only2 == [2, 2])
        let binary = MLP(spec: MLPSpec(inputs: 1, hidden: [], head: .binary), parameters: [1, -0.5])
        #expect(GenerativeReplay.label([0.2, 0.9], routes: [0, 0], solver: binary, seen: [:], dimension: 1) == [0, 1])
    }

    /// With `inverse_task`, own rows weigh 1/t and replayed rows 1 − 1/t of the batch loss: the
    /// loop's per-row gradient (1/n each) is rescaled accordingly; `equal` leaves it untouched.
    @Test("mixture weights", arguments: [GenerativeReplay.Weighting.inverseTask, .equal])
    func mixture(_ weighting: GenerativeReplay.Weighting) throws {
        var options = GenerativeReplay.Options()
        options.weighting = weighting
        options.latent = 2
        var plugin = GenerativeReplay(options: options)
        let spec = MLPSpec(inputs: 2, hidden: [3], head: .multiclass(classes: 2))
        var rng = RandomSource(seed: 3)
        var model = MLP(spec: spec, rng: &rng)
        try plugin.prepare(model: &model, context: RunContext(seed: 1, pluginIndex: 0, experienceCount: 3, dimension: 2,
                                                               head: spec.head, training: TrainingOptions(batchSize: 4)))
        func experience(_ i: Int, _ label: Int32) -> Experience {
            let s = Samples(dimension: 2, features: (0..<8).map { _ in Float(rng.normal()) },
                            labels: [Int32](repeating: label, count: 4))
            return Experience(index: i, name: "e\(i)", train: s, test: s)
        }
        let experiences = [experience(0, 0), experience(1, 1), experience(2, 1)]
        for t in 0..<3 {
            let context = ExperienceContext(index: t, experiences: experiences, route: 0)
            try plugin.beforeExperience(model: &model, context: context)
            var batch = Batch(dimension: 2, capacity: 8)
            for r in 0..<4 { batch.append(features: experiences[t].train.features[(2 * r)..<(2 * r + 2)], label: experiences[t].train.labels[r], route: 0) }
            batch.ownCount = 4
            plugin.extendBatch(&batch, context: context)
            #expect(batch.count == (t == 0 ? 4 : 8), "experience \(t): \(batch.count) rows")
            var gradient = [Float](repeating: 1, count: batch.count * 2)
            let logits = [Float](repeating: 0, count: batch.count * 2)
            _ = logits.withUnsafeBufferPointer { z in
                gradient.withUnsafeMutableBufferPointer { g in
                    plugin.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<batch.count)[...], route: 0,
                                                       logits: z.baseAddress!, logitGradient: g.baseAddress!, logitCount: 2,
                                                       scale: 1 / Float(batch.count), model: model, experienceIndex: t))
                }
            }
            // Row weight = gradient factor × 1/n: own rows sum to 1/t, replayed rows to 1 − 1/t.
            let n = Float(batch.count)
            let own = (0..<4).reduce(Float(0)) { $0 + gradient[2 * $1] / n }
            let replayed = (4..<batch.count).reduce(Float(0)) { $0 + gradient[2 * $1] / n }
            let tt = Float(t + 1)
            if weighting == .inverseTask || t == 0 {
                #expect(abs(own - 1 / tt) < 1e-6 && abs(replayed - (t == 0 ? 0 : 1 - 1 / tt)) < 1e-6, "t = \(t + 1): \(own), \(replayed)")
            } else {
                #expect(gradient.allSatisfy { $0 == 1 })
            }
            // Replayed rows carry a class the previous solver saw (class 0 after the first experience).
            if t == 1 { #expect((4..<8).allSatisfy { batch.labels[$0] == 0 }) }
            try plugin.afterExperience(model: &model, context: context, workspace: model.makeWorkspace())
        }
    }

    /// `bernoulli` refuses features outside [0, 1], naming the option to use instead.
    @Test func bernoulliRefusesFeaturesOutsideTheUnitInterval() throws {
        var options = GenerativeReplay.Options()
        options.reconstruction = .bernoulli
        var plugin = GenerativeReplay(options: options)
        let spec = MLPSpec(inputs: 2, hidden: [3])
        var rng = RandomSource(seed: 3)
        var model = MLP(spec: spec, rng: &rng)
        try plugin.prepare(model: &model, context: RunContext(seed: 1, pluginIndex: 0, experienceCount: 1, dimension: 2,
                                                               head: .binary, training: TrainingOptions()))
        let s = Samples(dimension: 2, features: [0.5, 1.5], labels: [1])
        let context = ExperienceContext(index: 0, experiences: [Experience(index: 0, name: "e", train: s, test: s)], route: 0)
        #expect(throws: TrainingError.self) { try plugin.beforeExperience(model: &model, context: context) }
        do { try plugin.beforeExperience(model: &model, context: context) } catch {
            #expect("\(error)".contains("gaussian") && "\(error)".contains("1.5"))
        }
    }
}
