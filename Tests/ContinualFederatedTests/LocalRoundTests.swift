import ContinualCore
import ContinualFederated
import Testing

/// A local round against plain training on the same loop: FedAvg with one client equals plain
/// training, identical clients average to centralised training, FedProx at μ = 0 is FedAvg.
@Suite struct LocalRoundTests {
    static let spec = MLPSpec(inputs: 4, hidden: [8], head: .multiclass(classes: 3))

    static func data(seed: UInt64, count: Int) -> Samples {
        var rng = RandomSource(seed: seed)
        var features: [Float] = [], labels: [Int32] = []
        for _ in 0..<count {
            let x = (0..<4).map { _ in Float(rng.normal()) }
            features += x
            labels.append(x[0] + 0.5 * x[1] > 0.3 ? 0 : (x[2] > 0 ? 1 : 2))
        }
        return Samples(dimension: 4, features: features, labels: labels)
    }

    static func globalModel() -> [Float] {
        var rng = RandomSource(seed: 77)
        return MLP(spec: spec, rng: &rng).parameters
    }

    /// Plain training on the toolkit's loop: `steps` steps from `start` on `data`.
    static func plain(_ start: [Float], _ data: Samples, steps: Int, batch: Int, seed: UInt64) throws -> [Float] {
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1),
                              options: TrainingOptions(epochs: 50, batchSize: batch), plugins: [], seed: seed)
        trainer.model.parameters = start
        let stream = ExperienceStream(name: "c", featureNames: ["a", "b", "c", "d"], head: spec.head,
                                      experiences: [Experience(index: 0, name: "e", train: data, test: data)])
        return try trainer.run(stream, source: LocalRoundSource(steps: steps, epochs: 50), resumingFrom: nil, stopAfter: nil)
            .finalModel.parameters
    }

    func round(batch: Int, steps: Int, mu: Double = 0) -> LocalRound {
        LocalRound(spec: Self.spec, optimizer: .sgd(learningRate: 0.1), options: TrainingOptions(epochs: 50, batchSize: batch),
                   steps: steps, epochs: 50, proximalMu: mu)
    }

    /// Equal up to a few Float ulps of the parameters (|w| ≲ 1): Δ = local − global and
    /// global + Δ round once each, and a batch's rows may be summed in another order.
    func close(_ a: [Float], _ b: [Float]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) <= 1e-6 }
    }

    @Test func fedAvgWithOneClientAndOneStepIsPlainTraining() throws {
        let global = Self.globalModel(), data = Self.data(seed: 1, count: 40)
        let update = try round(batch: 8, steps: 1).run(global: global, data: data, head: Self.spec.head, seed: 5)
        var x = global, state = ServerOptimizerState()
        ServerOptimizer.sgd().apply(try AggregationRule.mean.aggregate([update]), to: &x, state: &state)
        let expected = try Self.plain(global, data, steps: 1, batch: 8, seed: 5)
        #expect(close(x, expected))
        #expect(x != global)
        #expect(update.samples == 40)
    }

    @Test func identicalClientsAverageToCentralisedTrainingOfTheSameSteps() throws {
        // Full-batch steps, so every client takes the same path whatever its shuffle seed (up to the
        // order in which the batch's rows are summed: a few ulps).
        let global = Self.globalModel(), data = Self.data(seed: 2, count: 30)
        let updates = try (0..<5).map { c in
            try round(batch: 30, steps: 4).run(global: global, data: data, head: Self.spec.head, seed: 100 + UInt64(c))
        }
        #expect(updates.allSatisfy { close($0.delta, updates[0].delta) })
        var x = global, state = ServerOptimizerState()
        ServerOptimizer.sgd().apply(try AggregationRule.mean.aggregate(updates), to: &x, state: &state)
        #expect(close(x, try Self.plain(global, data, steps: 4, batch: 30, seed: 1)))
    }

    @Test func fedProxAtZeroIsFedAvgAndPullsTowardsTheGlobalModelOtherwise() throws {
        let global = Self.globalModel(), data = Self.data(seed: 3, count: 64)
        let plainUpdate = try round(batch: 16, steps: 12).run(global: global, data: data, head: Self.spec.head, seed: 9)
        let zero = try round(batch: 16, steps: 12, mu: 0).run(global: global, data: data, head: Self.spec.head, seed: 9)
        #expect(zero == plainUpdate)
        let prox = try round(batch: 16, steps: 12, mu: 5).run(global: global, data: data, head: Self.spec.head, seed: 9)
        #expect(prox.l2Norm < plainUpdate.l2Norm)
    }

    @Test func proximalGradientMatchesFiniteDifferences() {
        var term = ProximalTerm(mu: 0.7)
        var model = MLP(spec: Self.spec, parameters: Self.globalModel())
        let context = ExperienceContext(index: 0, experiences: [Experience(index: 0, name: "e", train: Self.data(seed: 1, count: 2),
                                                                            test: Self.data(seed: 1, count: 2))], route: 0)
        try? term.beforeExperience(model: &model, context: context)
        var w = model.parameters
        for i in stride(from: 0, to: w.count, by: 7) { w[i] += 0.05 * Float(i % 3 + 1) }
        var grad = [Float](repeating: 0, count: w.count)
        let value = w.withUnsafeBufferPointer { p in grad.withUnsafeMutableBufferPointer { term.addPenalty(parameters: p, gradient: $0) } }
        var zeroGrad = [Float](repeating: 0, count: w.count)
        for i in stride(from: 0, to: w.count, by: 7) {
            var wp = w, wm = w
            let h: Float = 1e-2
            wp[i] += h
            wm[i] -= h
            let fp = wp.withUnsafeBufferPointer { p in zeroGrad.withUnsafeMutableBufferPointer { term.addPenalty(parameters: p, gradient: $0) } }
            let fm = wm.withUnsafeBufferPointer { p in zeroGrad.withUnsafeMutableBufferPointer { term.addPenalty(parameters: p, gradient: $0) } }
            #expect(abs((fp - fm) / (2 * Double(h)) - Double(grad[i])) < 1e-3)
        }
        #expect(value > 0)
    }
}
