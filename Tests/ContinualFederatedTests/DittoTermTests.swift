import ContinualCore
import ContinualFederated
import Testing

/// Ditto's personal step (DittoTerm) against plain training on the toolkit's loop: λ = 0 is plain
/// local training bit for bit, one full-batch step is the proximal-gradient formula, and a huge
/// λ lands on the global model.
@Suite struct DittoTermTests {
    typealias L = LocalRoundTests

    /// `steps` steps of the personal model from `start`, pulled towards `global` with λ.
    static func personal(_ start: [Float], global: [Float], lambda: Double, _ data: Samples, steps: Int, batch: Int) throws -> [Float] {
        var term = DittoTerm(lambda: lambda, learningRate: 0.1)
        term.anchor = global
        var trainer = Trainer(spec: L.spec, optimizer: .sgd(learningRate: 0.1),
                              options: TrainingOptions(epochs: 50, batchSize: batch), plugins: [term], seed: 5)
        trainer.model.parameters = start
        let stream = ExperienceStream(name: "c", featureNames: ["a", "b", "c", "d"], head: L.spec.head,
                                      experiences: [Experience(index: 0, name: "e", train: data, test: data)])
        return try trainer.run(stream, source: LocalRoundSource(steps: steps, epochs: 50), resumingFrom: nil, stopAfter: nil)
            .finalModel.parameters
    }

    /// A personal model that has drifted from the global one.
    static func drifted() -> [Float] {
        var rng = RandomSource(seed: 3)
        return L.globalModel().map { $0 + Float(0.2 * rng.normal()) }
    }

    @Test func lambdaZeroIsPlainLocalTraining() throws {
        let data = L.data(seed: 1, count: 40), v0 = Self.drifted()
        let ditto = try Self.personal(v0, global: L.globalModel(), lambda: 0, data, steps: 7, batch: 8)
        #expect(ditto == (try L.plain(v0, data, steps: 7, batch: 8, seed: 5)))
    }

    @Test func oneStepIsTheProximalGradientStep() throws {
        let data = L.data(seed: 2, count: 32), v0 = Self.drifted(), w = L.globalModel()
        let lambda: Float = 3, eta: Float = 0.1
        let plain = try L.plain(v0, data, steps: 1, batch: 32, seed: 5)    // v0 − η∇F(v0)
        let ditto = try Self.personal(v0, global: w, lambda: Double(lambda), data, steps: 1, batch: 32)
        for i in v0.indices {
            let expected = (plain[i] + eta * lambda * w[i]) / (1 + eta * lambda)
            #expect(abs(ditto[i] - expected) <= 2e-6, "parameter \(i)")
        }
        // Not the explicit step, which would overshoot at ηλ = 0.3 by a visible amount.
        let explicit = v0.indices.map { plain[$0] - eta * lambda * (v0[$0] - w[$0]) }
        #expect(zip(ditto, explicit).contains { abs($0 - $1) > 1e-3 })
    }

    @Test func hugeLambdaLandsOnTheGlobalModel() throws {
        let data = L.data(seed: 4, count: 40), v0 = Self.drifted(), w = L.globalModel()
        let ditto = try Self.personal(v0, global: w, lambda: 1e30, data, steps: 5, batch: 8)
        #expect(zip(ditto, w).allSatisfy { abs($0 - $1) <= 1e-6 })
        #expect(zip(v0, w).contains { abs($0 - $1) > 0.1 })
    }
}
