import Testing
@testable import ContinualCore

/// A network whose first layers are frozen (a trained head on a frozen body: FedRep's head
/// epochs, a linear probe) back-propagates only into the layers that train when nothing but the
/// optimizer reads the gradient (`MLP.frozenPrefix`, `Trainer.onlyTheOptimizerReadsTheGradient`).
/// The layers it runs must get the same bits, and a whole run the same numbers.
@Suite struct FrozenPrefixTests {
    /// The mask freezing every parameter of `layers` (and nothing else).
    static func mask(_ model: MLP, freezing layers: [Int]) -> [Bool] {
        var mask = [Bool](repeating: true, count: model.parameterCount)
        for l in layers { for i in model.layers[l].parameterRange(route: 0) { mask[i] = false } }
        return mask
    }

    @Test func thePrefixCountsTheFrozenLayersFromTheInput() {
        var rng = RandomSource(seed: 3)
        var m = MLP(spec: MLPSpec(inputs: 6, hidden: [5, 4], activation: .relu, head: .multiclass(classes: 3)), rng: &rng)
        #expect(m.frozenPrefix == 0)
        m.trainable = Self.mask(m, freezing: [0])
        #expect(m.frozenPrefix == 1)
        m.trainable = Self.mask(m, freezing: [0, 1])
        #expect(m.frozenPrefix == 2)
        m.trainable = Self.mask(m, freezing: [1])          // a trained first layer ends the prefix
        #expect(m.frozenPrefix == 0)
        var oneBias = Self.mask(m, freezing: [0, 1])
        oneBias[m.layers[1].parameterRange(route: 0).upperBound - 1] = true
        m.trainable = oneBias                              // one trained bias keeps its layer
        #expect(m.frozenPrefix == 1)
        m.trainable = Self.mask(m, freezing: [0, 1, 2])
        #expect(m.frozenPrefix == 3)
        m.trainable = nil
        #expect(m.frozenPrefix == 0)
    }

    @Test(arguments: Kernels.availablePaths)
    func theLayersItRunsGetTheSameBits(_ path: String) {
        Kernels.withPath(path) {
            // (Not with a one-wide layer: a one-unit ReLU may be off for every sample, and one input,
            // zero in a one-sample batch, leaves every unit at its zero bias; then no layer below
            // gets a gradient to compare.)
            for (c, spec) in DenseChainTests.cases.enumerated() where spec.widths.count >= 2 && spec.widths.min()! > 1 {
                var rng = RandomSource(seed: UInt64(70 + c))
                var model = MLP(spec: MLPSpec(inputs: spec.widths[0], hidden: Array(spec.widths.dropFirst()),
                                              activation: spec.activation, head: spec.head), rng: &rng)
                for frozen in 1..<model.layers.count {
                    let mask = Self.mask(model, freezing: Array(0..<frozen))
                    model.trainable = mask
                    #expect(model.frozenPrefix == frozen)
                    for count in [1, 5, 32] {
                        let x = (0..<(count * model.inputCount)).map { i in i % 7 == 0 ? 0 : Float(rng.normal()) }
                        let labels = (0..<count).map { Int32($0 % max(2, model.logitCount)) }
                        func gradient(_ skip: Bool) -> [Float] {
                            var g = [Float](repeating: 0, count: model.parameterCount)
                            let ws = model.makeWorkspace(capacity: 8)
                            g.withUnsafeMutableBufferPointer { gp in
                                _ = model.lossAndGradient(features: x, labels: labels, count: count, route: 0, scale: 0.5,
                                                          workspace: ws, gradient: gp.baseAddress!, skippingFrozen: skip)
                            }
                            return g
                        }
                        let full = gradient(false), part = gradient(true)
                        let trained = mask.indices.filter { mask[$0] }
                        #expect(trained.allSatisfy { full[$0].bitPattern == part[$0].bitPattern },
                                "\(path) \(spec.widths) frozen \(frozen) batch \(count): trained entries")
                        #expect(mask.indices.allSatisfy { mask[$0] || part[$0] == 0 }, "frozen entries untouched")
                        #expect(mask.indices.contains { !mask[$0] && full[$0] != 0 }, "the full pass did reach them")
                    }
                }
            }
        }
    }

    /// Observes every step and does nothing: the step then computes the whole gradient.
    struct Watcher: StepObserver {
        var name: String { "watcher" }
        mutating func afterStep(_ step: StepObservation) {}
        var resources: PluginResources { PluginResources() }
        func checkpointState() -> PluginState { PluginState() }
        mutating func restore(from state: PluginState) throws {}
    }

    static func stream() -> ExperienceStream {
        var rng = RandomSource(seed: 9, stream: "data")
        func samples(_ n: Int) -> Samples {
            var s = Samples(dimension: 4)
            for i in 0..<n {
                let y = Int32(i % 3)
                s.features += (0..<4).map { k in Float(rng.normal()) + Float(y) * Float(k + 1) / 4 }
                s.labels.append(y)
            }
            return s
        }
        return ExperienceStream(name: "blobs", featureNames: ["a", "b", "c", "d"], head: .multiclass(classes: 3),
                                experiences: (0..<2).map { Experience(index: $0, name: "e\($0)", train: samples(40), test: samples(20)) })
    }

    @Test func aRunWithAFrozenBodyGivesTheSameNumbersWithTheSkipAsWithout() throws {
        let spec = MLPSpec(inputs: 4, hidden: [12, 9], activation: .relu, head: .multiclass(classes: 3))
        let optimizers: [OptimizerSpec] = [.sgd(learningRate: 0.05, momentum: 0.9, weightDecay: 0.01), .adam(learningRate: 0.01)]
        for optimizer in optimizers {
            func run(_ plugins: [any StrategyPlugin]) throws -> (skipped: Bool, parameters: [UInt32], losses: [Double]) {
                var t = Trainer(spec: spec, optimizer: optimizer, options: TrainingOptions(epochs: 3, batchSize: 8),
                                plugins: plugins, seed: 2)
                let initial = t.model.parameters
                t.model.trainable = Self.mask(t.model, freezing: [0, 1])
                let skipped = t.onlyTheOptimizerReadsTheGradient(PluginCapabilities(plugins))
                let outcome = try t.run(Self.stream())
                let body = t.model.layers[0].parameterRange(route: 0).lowerBound..<t.model.layers[1].parameterRange(route: 0).upperBound
                #expect(Array(t.model.parameters[body]) == Array(initial[body]), "the body stayed frozen")
                return (skipped, t.model.parameters.map(\.bitPattern), outcome.progress.lossCurve.flatMap { $0 } + outcome.progress.accuracy.flatMap { $0 })
            }
            let fast = try run([]), full = try run([Watcher()])
            #expect(fast.skipped && !full.skipped)
            #expect(fast.parameters == full.parameters, "\(optimizer)")
            #expect(fast.losses == full.losses)
        }
    }

    @Test func theSkipIsOffWhenAnythingButTheOptimizerReadsTheGradient() {
        let spec = MLPSpec(inputs: 4, hidden: [6], activation: .relu, head: .multiclass(classes: 3))
        let plain = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1), options: TrainingOptions(), plugins: [], seed: 1)
        #expect(plain.onlyTheOptimizerReadsTheGradient(PluginCapabilities([])))
        #expect(!plain.onlyTheOptimizerReadsTheGradient(PluginCapabilities([Watcher()])))
        let factored = Trainer(spec: spec, optimizer: .adafactor(AdafactorOptions(learningRate: 0.01)), options: TrainingOptions(),
                               plugins: [], seed: 1)
        #expect(!factored.onlyTheOptimizerReadsTheGradient(PluginCapabilities([])))
    }
}
