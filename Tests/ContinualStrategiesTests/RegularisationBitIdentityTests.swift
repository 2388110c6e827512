import ContinualCore
import ContinualStrategies
import Testing

/// λ = 0 (EWC) and c = 0 (SI) must reproduce naive fine-tuning bit for bit.
@Suite("Regularisation bit identity")
struct RegularisationBitIdentityTests {
    private func run(_ plugins: [any StrategyPlugin], optimizer: OptimizerSpec) throws -> TrainingOutcome {
        let stream = try Fixture.stream()
        let spec = MLPSpec(inputs: stream.dimension, hidden: [8], head: stream.head)
        var trainer = Trainer(spec: spec, optimizer: optimizer, options: TrainingOptions(epochs: 2, batchSize: 16),
                              plugins: plugins, seed: 7)
        return try trainer.run(stream)
    }

    @Test(arguments: [OptimizerSpec.sgd(learningRate: 0.05, momentum: 0.9), .adam(learningRate: 0.01)])
    func zeroStrengthIsBitIdenticalToNaive(optimizer: OptimizerSpec) throws {
        let naive = try run([Naive()], optimizer: optimizer)
        let candidates: [(String, any StrategyPlugin)] = [
            ("ewc", EWC(options: .init(lambda: 0))),
            ("online ewc", EWC(options: .init(lambda: 0, mode: .online, gamma: 0.5))),
            ("si", SynapticIntelligence(options: .init(c: 0))),
            ("si total", SynapticIntelligence(options: .init(c: 0, gradient: .total))),
        ]
        for (label, plugin) in candidates {
            let o = try run([plugin], optimizer: optimizer)
            #expect(o.accuracy == naive.accuracy, "\(label): accuracy matrix differs")
            #expect(o.finalModel.parameters == naive.finalModel.parameters, "\(label): final parameters differ")
            #expect(o.lossCurve == naive.lossCurve, "\(label): loss curve differs")
        }
        // The comparison can fail: a positive strength does change the run.
        let ewc = try run([EWC(options: .init(lambda: 50))], optimizer: optimizer)
        let si = try run([SynapticIntelligence(options: .init(c: 1))], optimizer: optimizer)
        #expect(ewc.finalModel.parameters != naive.finalModel.parameters)
        #expect(si.finalModel.parameters != naive.finalModel.parameters)
    }

    /// Same config and seed give the same EWC run (sampled Fisher on a seeded subset included).
    @Test func sampledFisherOnSubsetIsDeterministic() throws {
        let options = EWC.Options(lambda: 10, fisher: .sample, fisherSamples: 50)
        let a = try run([EWC(options: options)], optimizer: .sgd(learningRate: 0.05))
        let b = try run([EWC(options: options)], optimizer: .sgd(learningRate: 0.05))
        #expect(a == b)
        #expect(a.pluginReports[0].report == b.pluginReports[0].report)
    }
}
