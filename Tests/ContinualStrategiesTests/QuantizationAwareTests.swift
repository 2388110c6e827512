import Testing
import ContinualCore
import ContinualScenarios
import ContinualStrategies

/// Quantisation-aware training: gradients at int8-rounded weights, updates on float weights.
@Suite struct QuantizationAwareTests {
    @Test(arguments: QuantizedMLP.Granularity.allCases)
    func fakeQuantisationMatchesTheInt8ModelAndIsIdempotent(_ g: QuantizedMLP.Granularity) {
        var rng = RandomSource(seed: 8)
        let model = MLP(spec: MLPSpec(inputs: 10, hidden: [16, 8]), rng: &rng)
        var fake = model
        QuantizedMLP.fakeQuantize(&fake, granularity: g)
        var twice = fake
        QuantizedMLP.fakeQuantize(&twice, granularity: g)
        #expect(twice.parameters == fake.parameters)
        // The fake-quantised float model computes what the int8 model computes.
        let q = QuantizedMLP(model, granularity: g)
        let ws = fake.makeWorkspace(capacity: 1)
        for _ in 0..<50 {
            let x = (0..<10).map { _ in Float(rng.normal()) }
            fake.forward(x, count: 1, route: 0, workspace: ws)
            #expect(abs(ws.logits[0] - q.logits(x, route: 0)[0]) < 1e-4)
        }
        // Biases are untouched.
        for l in model.layers { #expect(model.parameters[l.biasRange(route: 0)] == fake.parameters[l.biasRange(route: 0)]) }
    }

    /// Records the first step's task gradient.
    struct FirstGradient: StatelessPlugin, StepObserver {
        var name: String { "first_gradient" }
        var gradient: [Float] = []
        mutating func afterStep(_ step: StepObservation) { if gradient.isEmpty { gradient = Array(step.taskGradient) } }
        func report() -> PluginReport { PluginReport(arrays: ["g": .init(values: gradient.map(Double.init))]) }
    }

    @Test func gradientIsTakenAtTheQuantisedWeightsAndAppliedToFloatWeights() throws {
        let stream = try HabitDriftScenario(trainPerExperience: 32, testPerExperience: 8,
                                            phases: [HabitPhase.presets["morning"]!]).makeStream(seed: 1)
        let spec = MLPSpec(inputs: 10, hidden: [8])
        let options = TrainingOptions(epochs: 1, batchSize: 32, shuffle: false)
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1), options: options,
                              plugins: [QuantizationAware(options: .init()), FirstGradient()], seed: 3)
        let initial = trainer.model
        let o = try trainer.run(stream)
        let observed = o.pluginReports[1].report.arrays["g"]!.values.map(Float.init)

        var fake = initial
        QuantizedMLP.fakeQuantize(&fake, granularity: .perChannel)
        var expected = [Float](repeating: 0, count: fake.parameterCount)
        let train = stream.experiences[0].train
        expected.withUnsafeMutableBufferPointer { g in
            _ = fake.lossAndGradient(features: train.features, labels: train.labels, count: 32, route: 0,
                                     scale: 1 / 32, workspace: fake.makeWorkspace(), gradient: g.baseAddress!)
        }
        #expect(observed == expected)
        // One plain SGD step on the *float* weights with that gradient (straight-through).
        let stepped = zip(initial.parameters, expected).map { $0 - 0.1 * $1 }
        #expect(o.finalModel.parameters == stepped)
        #expect(o.pluginReports[0].report.attributes["fake_quantised_steps"] == .int(1))
    }
}
