import Testing
@testable import ContinualCore

/// Plain SGD in one pass (`MLP.sgdStep`, `ck_mlp_backward_sgd`): each layer updated once its own
/// input gradient is made, wide layers in their weight gradient's epilogue. The parameters must
/// be those of the gradient into zeros followed by `Optimizer.step`, bit for bit, on every kernel
/// path, thread count, shape and batch — and a Trainer run, which takes the one pass whenever
/// nothing but the optimizer would read the gradient, the numbers of a run through the hooks.
@Suite struct SGDStepTests {
    /// The dense-chain shapes of DenseChainTests, and wide ones whose weight gradients take the
    /// panels' update epilogue on the avx512-fma path (≥ 128 inputs, ≥ 256 outputs, at most 256
    /// rows; the tests force the panels on and off, whatever the CPU's kind): 300 outputs leave 12
    /// columns past the last 32-column strip, and 257 rows make chains of two blocks.
    static let shapes: [(widths: [Int], head: OutputHead, activation: Activation)] =
        DenseChainTests.cases.map { ($0.widths, $0.head, $0.activation) }
        + [([10, 300, 260], .binary, .relu), ([130, 300], .multiclass(classes: 5), .relu),
           ([20, 128, 512], .multiclass(classes: 3), .relu)]

    /// `steps` steps of SGD both ways from the same model: (one pass, separate) parameters' bits.
    static func bothWays(_ spec: MLPSpec, batch: Int, weightDecay: Float, active: [Bool]?, steps: Int = 3)
        -> (onePass: [UInt32], separate: [UInt32]) {
        var rng = RandomSource(seed: UInt64(batch * 7 + spec.inputs))
        var a = MLP(spec: spec, rng: &rng)
        var b = a
        let optimizer = OptimizerSpec.sgd(learningRate: 0.3, weightDecay: weightDecay)
        var optA = Optimizer(spec: optimizer, parameterCount: a.parameterCount), optB = optA
        let ws = a.makeWorkspace(capacity: max(batch, 1))
        var scratch = [Float](repeating: .nan, count: a.parameterCount)  // never read as a gradient
        var g = [Float](repeating: 0, count: b.parameterCount)
        let mask = active ?? []
        for step in 0..<steps {
            let x = (0..<(batch * spec.inputs)).map { i in (i + step) % 5 == 0 ? 0 : Float(rng.normal()) }
            let y = (0..<batch).map { Int32(($0 + step) % spec.head.classCount) }
            let (lr, wd) = optA.beginPlainSGDStep()!
            let (la, lb) = mask.withUnsafeBufferPointer { m -> (Double, Double) in
                let act = active == nil ? nil : m.baseAddress
                let la = scratch.withUnsafeMutableBufferPointer { s in
                    a.sgdStep(features: x, labels: y, count: batch, scale: 1 / Float(max(batch, 1)), learningRate: lr,
                              weightDecay: wd, workspace: ws, scratch: s.baseAddress!, active: act)!
                }
                let lb = g.withUnsafeMutableBufferPointer { gp in
                    gp.update(repeating: 0)
                    return b.lossAndGradient(features: x, labels: y, count: batch, route: 0, scale: 1 / Float(max(batch, 1)),
                                             workspace: ws, gradient: gp.baseAddress!, active: act)
                }
                return (la, lb)
            }
            g.withUnsafeBufferPointer { optB.step(parameters: &b.parameters, gradient: $0.baseAddress!, trainable: nil) }
            #expect(la.bitPattern == lb.bitPattern, "the loss")
        }
        return (a.parameters.map(\.bitPattern), b.parameters.map(\.bitPattern))
    }

    /// How many parameters differ (a count: a failure message with the arrays would be megabytes).
    static func differing(_ a: [UInt32], _ b: [UInt32]) -> Int { a.count == b.count ? zip(a, b).filter { $0 != $1 }.count : -1 }

    @Test(arguments: Kernels.availablePaths, [true, false])
    func onePassGivesTheSeparateStepsBits(_ path: String, _ panels: Bool) {
        Kernels.withPath(path) { Kernels.withPackedLeftOperand(panels) {
            for (widths, head, activation) in Self.shapes {
                let spec = MLPSpec(inputs: widths[0], hidden: Array(widths.dropFirst()), activation: activation, head: head)
                let wide = widths.max()! >= 256
                for batch in wide ? [7, 128, 257] : [1, 5, 32, 48] {
                    for wd: Float in [0, 0.01] {
                        let active = head.classCount > 2 ? (0..<head.classCount).map { $0 != 1 } : nil
                        for mask in [nil, active] {
                            let (one, separate) = Self.bothWays(spec, batch: batch, weightDecay: wd, active: mask)
                            let differing = Self.differing(one, separate)
                            #expect(differing == 0, "\(path) panels \(panels) \(widths) batch \(batch) wd \(wd) mask \(mask != nil): \(differing) differ")
                        }
                    }
                }
            }
        } }
    }

    /// The wide layers' weight gradients split over threads (each column range its own epilogue:
    /// 512 columns each, or 3 × 112 of 300, under 256 and so through scratch), batches of one and
    /// of two blocks of rows, and the one pass with no rows (the update with a zero gradient).
    @Test func threadsLongBatchesAndEmptyBatches() {
        Kernels.withPackedLeftOperand(true) {
            for (threads, hidden, batch) in [(2, 1024, 128), (3, 300, 200), (2, 300, 512)] {
                Kernels.withThreads(threads) {
                    let spec = MLPSpec(inputs: 200, hidden: [hidden], activation: .relu, head: .binary)
                    let (one, separate) = Self.bothWays(spec, batch: batch, weightDecay: 0.01, active: nil, steps: 2)
                    #expect(Self.differing(one, separate) == 0, "\(threads) threads, \(hidden) wide, batch \(batch)")
                }
            }
        }
        let spec = MLPSpec(inputs: 4, hidden: [6], activation: .relu, head: .binary)
        let (one, separate) = Self.bothWays(spec, batch: 0, weightDecay: 0.1, active: nil, steps: 2)
        #expect(Self.differing(one, separate) == 0, "no rows")
    }

    @Test func onlyPlainSGDOnADenseChainWithNoHookTakesTheOnePass() {
        let spec = MLPSpec(inputs: 4, hidden: [6], activation: .relu, head: .multiclass(classes: 3))
        func trainer(_ optimizer: OptimizerSpec, _ options: TrainingOptions = TrainingOptions()) -> Trainer {
            Trainer(spec: spec, optimizer: optimizer, options: options, plugins: [], seed: 1)
        }
        let plain = trainer(.sgd(learningRate: 0.1, weightDecay: 0.01))
        let ws = plain.model.makeWorkspace(capacity: 4)
        #expect(plain.takesOnePassStep(PluginCapabilities([]), workspace: ws))
        #expect(!plain.takesOnePassStep(PluginCapabilities([FrozenPrefixTests.Watcher()]), workspace: ws))
        #expect(!trainer(.sgd(learningRate: 0.1, momentum: 0.9)).takesOnePassStep(PluginCapabilities([]), workspace: ws))
        #expect(!trainer(.adam(learningRate: 0.01)).takesOnePassStep(PluginCapabilities([]), workspace: ws))
        var frozen = plain
        frozen.model.trainable = FrozenPrefixTests.mask(frozen.model, freezing: [0])
        #expect(!frozen.takesOnePassStep(PluginCapabilities([]), workspace: ws))
        #expect(!frozen.model.runsSGDStep(workspace: ws), "sgdStep itself refuses a partly frozen model")
        var mixed = TrainingOptions()
        mixed.precision = TrainingPrecision(format: .bfloat16)
        #expect(!trainer(.sgd(learningRate: 0.1), mixed).takesOnePassStep(PluginCapabilities([]), workspace: ws))
        // Every kind of hook, one at a time.
        let hooks: [(String, (inout PluginCapabilities) -> Void)] = [
            ("penalty", { $0.penalties = [0] }), ("batch loss", { $0.batchLosses = [0] }),
            ("adjuster", { $0.adjusters = [0] }), ("observer", { $0.observers = [0] }),
            ("transform", { $0.transforms = [0] }), ("block owner", { $0.blockOwners = [0] }),
            ("gate", { $0.gate = 0 }), ("column", { $0.column = 0 }),
        ]
        for (name, add) in hooks {
            var caps = PluginCapabilities()
            add(&caps)
            #expect(!plain.takesOnePassStep(caps, workspace: ws), "\(name)")
        }
    }

    /// A whole run takes the one pass without plugins and the hooks' path with an observer that
    /// does nothing: the same parameters, losses and accuracies (with a learning-rate schedule,
    /// whose rate the one pass must take).
    @Test func aRunGivesTheSameNumbersThroughTheOnePassAsThroughTheHooks() throws {
        for (hidden, wd) in [([12, 9], Float(0)), ([12, 9], 0.01), ([300], 0)] {
            let spec = MLPSpec(inputs: 4, hidden: hidden, activation: .relu, head: .multiclass(classes: 3))
            func run(_ plugins: [any StrategyPlugin]) throws -> (parameters: [UInt32], numbers: [Double]) {
                var options = TrainingOptions(epochs: 3, batchSize: 8)
                options.learningRateSchedule = LearningRateSchedule(.cosine(minimumFactor: 0.1), warmupSteps: 3)
                var t = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05, weightDecay: wd),
                                options: options, plugins: plugins, seed: 2)
                #expect(t.takesOnePassStep(PluginCapabilities(plugins), workspace: t.model.makeWorkspace(capacity: 8))
                        == plugins.isEmpty)
                let outcome = try t.run(FrozenPrefixTests.stream())
                return (t.model.parameters.map(\.bitPattern),
                        outcome.progress.lossCurve.flatMap { $0 } + outcome.progress.accuracy.flatMap { $0 })
            }
            let onePass = try run([]), hooks = try run([FrozenPrefixTests.Watcher()])
            #expect(Self.differing(onePass.parameters, hooks.parameters) == 0, "\(hidden) wd \(wd)")
            #expect(onePass.numbers.map(\.bitPattern) == hooks.numbers.map(\.bitPattern))
        }
    }
}
