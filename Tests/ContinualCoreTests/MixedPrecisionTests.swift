import Testing
@testable import ContinualCore

/// Mixed-precision training (`TrainingPrecision`): one bfloat16 step against a step emulated by
/// hand with the documented rounding points; the loss scaler's rule; float16 overflow skipping
/// steps; resuming with the scaler's state.
@Suite struct MixedPrecisionTests {
    /// MLP 2-3-2 (ReLU): W1 [2×3] at 0, b1 [3] at 6, W2 [3×2] at 9, b2 [2] at 15.
    let spec = MLPSpec(inputs: 2, hidden: [3], activation: .relu, head: .multiclass(classes: 2))
    let x: [Float] = [0.731, -1.377, 1.913, 0.2891]
    let y: [Int32] = [1, 0]

    func stream(_ experiences: Int = 1, rows: [Float]? = nil, labels: [Int32]? = nil) -> ExperienceStream {
        let s = Samples(dimension: 2, features: rows ?? x, labels: labels ?? y)
        return ExperienceStream(name: "tiny", featureNames: ["a", "b"], head: .multiclass(classes: 2),
                                experiences: (0..<experiences).map { Experience(index: $0, name: "e\($0)", train: s, test: s) })
    }

    func options(_ precision: TrainingPrecision, epochs: Int = 1, batch: Int = 2) -> TrainingOptions {
        var o = TrainingOptions(epochs: epochs, batchSize: batch, shuffle: false)
        o.precision = precision
        return o
    }

    /// One SGD step (lr 0.1) on the batch, emulated with plain float32 loops in the kernels'
    /// order (the "generic", unfused path) and rounding to bfloat16 exactly where
    /// `TrainingPrecision` says: weights, input, layer outputs, logit gradient, gradients after
    /// the activation derivative, input gradients, and the batch's parameter gradients.
    func handStep(_ p0: [Float]) -> [Float] {
        let r = { (v: Float) in NumericFormatTests.bfloat16Reference(v) }
        let p = p0.map(r)
        let xs = x.map(r)
        let n = 2
        var h = [Float](repeating: 0, count: n * 3), z = [Float](repeating: 0, count: n * 2)
        for s in 0..<n {
            for j in 0..<3 {
                var a = p[6 + j]
                for k in 0..<2 { a = a + xs[s * 2 + k] * p[k * 3 + j] }
                h[s * 3 + j] = r(max(a, 0))
            }
            for j in 0..<2 {
                var a = p[15 + j]
                for k in 0..<3 { a = a + h[s * 3 + k] * p[9 + k * 2 + j] }
                z[s * 2 + j] = r(a)
            }
        }
        var dz = z
        _ = dz.withUnsafeMutableBufferPointer { g in
            y.withUnsafeBufferPointer {
                Loss.lossAndLogitGradient(head: spec.head, logits: g.baseAddress!, labels: $0.baseAddress!, count: n, scale: 0.5)
            }
        }
        dz = dz.map(r)
        var g = [Float](repeating: 0, count: 17)
        for k in 0..<3 { for j in 0..<2 { for s in 0..<n { g[9 + k * 2 + j] = g[9 + k * 2 + j] + h[s * 3 + k] * dz[s * 2 + j] } } }
        for j in 0..<2 { for s in 0..<n { g[15 + j] = g[15 + j] + dz[s * 2 + j] } }
        var dh = [Float](repeating: 0, count: n * 3)
        for s in 0..<n {
            for k in 0..<3 {
                var a: Float = 0
                for j in 0..<2 { a = a + dz[s * 2 + j] * p[9 + k * 2 + j] }
                dh[s * 3 + k] = r(a)
                dh[s * 3 + k] = r(h[s * 3 + k] > 0 ? dh[s * 3 + k] : 0)
            }
        }
        for k in 0..<2 { for j in 0..<3 { for s in 0..<n { g[k * 3 + j] = g[k * 3 + j] + xs[s * 2 + k] * dh[s * 3 + j] } } }
        for j in 0..<3 { for s in 0..<n { g[6 + j] = g[6 + j] + dh[s * 3 + j] } }
        g = g.map(r)
        var out = p0
        for i in out.indices { out[i] -= 0.1 * (g[i] + 0 * out[i]) }
        return out
    }

    @Test func aBfloat16StepEqualsTheHandEmulatedStep() throws {
        try Kernels.withPath("generic") {
            var t = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1), options: options(TrainingPrecision(format: .bfloat16)),
                            plugins: [], seed: 5)
            let p0 = t.model.parameters
            let outcome = try t.run(stream())
            #expect(outcome.steps == [1])
            let expected = handStep(p0)
            for i in expected.indices {
                #expect(t.model.parameters[i].bitPattern == expected[i].bitPattern, "parameter \(i)")
            }
            // And the rounding matters: the float32 step differs.
            var f = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1), options: options(.float32), plugins: [], seed: 5)
            _ = try f.run(stream())
            #expect(f.model.parameters != t.model.parameters)
        }
    }

    @Test func float32PrecisionIsTheOrdinaryPathBitForBit() throws {
        var plain = Trainer(spec: spec, optimizer: .adam(learningRate: 0.01), options: TrainingOptions(epochs: 3, batchSize: 1, shuffle: false),
                            plugins: [], seed: 3)
        var explicit = Trainer(spec: spec, optimizer: .adam(learningRate: 0.01),
                               options: options(TrainingPrecision(format: .float32), epochs: 3, batch: 1), plugins: [], seed: 3)
        #expect(explicit.options == plain.options)
        let a = try plain.run(stream(2)), b = try explicit.run(stream(2))
        #expect(plain.model.parameters == explicit.model.parameters)
        #expect(a.progress.lossCurve == b.progress.lossCurve && b.progress.skippedSteps == [0, 0])
        #expect(explicit.lossScaler == nil)
    }

    @Test func theDynamicScalerHalvesOnOverflowAndDoublesAfterTheInterval() {
        var s = LossScaler(.dynamic(initial: 1024, growthInterval: 3))
        #expect(s.scale == 1024)
        #expect(s.update(overflowed: true) == false && s.scale == 512)
        #expect(s.update(overflowed: false) && s.update(overflowed: false) && s.scale == 512)
        #expect(s.update(overflowed: false) && s.scale == 1024 && s.goodSteps == 0)
        #expect(s.update(overflowed: false) && s.update(overflowed: true) == false && s.scale == 512 && s.goodSteps == 0)
        #expect(s.skippedSteps == 2)
        var fixed = LossScaler(.fixed(8))
        #expect(fixed.update(overflowed: true) == false && fixed.scale == 8 && fixed.skippedSteps == 1)
        var copy = LossScaler(.dynamic(initial: 1024, growthInterval: 3))
        #expect(copy.restore(s.state) && copy == s)
        #expect(!copy.restore([1, 2]) && !copy.restore([-1, 0, 0]))
        #expect(TrainingPrecision(format: .float16).lossScaling == .dynamic())
        #expect(TrainingPrecision(format: .bfloat16).lossScaling == LossScaling.none)
    }

    /// A fixed scale of 2^100 makes every scaled logit gradient ∞ in float16: every step is
    /// skipped, the weights stay at their initial values, and the skips are counted.
    @Test func float16OverflowSkipsTheStep() throws {
        let p = TrainingPrecision(format: .float16, lossScaling: .fixed(0x1p100))
        var t = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1), options: options(p, epochs: 4, batch: 1), plugins: [], seed: 5)
        let p0 = t.model.parameters
        let outcome = try t.run(stream())
        #expect(outcome.steps == [8] && outcome.progress.skippedSteps == [8])
        #expect(t.model.parameters == p0)
    }

    /// The dynamic scaler starting far too high: the first steps overflow and halve the scale
    /// until the gradients fit; those steps change nothing, later ones train.
    @Test func theDynamicScalerRecoversFromATooLargeScale() throws {
        let p = TrainingPrecision(format: .float16, lossScaling: .dynamic(initial: 0x1p60, growthInterval: 1000))
        var t = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1), options: options(p, epochs: 30, batch: 1), plugins: [], seed: 5)
        let p0 = t.model.parameters
        let outcome = try t.run(stream())
        let skipped = outcome.progress.skippedSteps[0]
        #expect(skipped >= 40 && skipped < 60)   // 2^60 · |∂L/∂z| must drop below 65504
        #expect(t.lossScaler?.scale == Float(sign: .plus, exponent: 60 - skipped, significand: 1))
        #expect(t.model.parameters != p0)
    }

    /// A float16 run stopped after its first experience and resumed from the checkpoint's bytes
    /// (which carry the loss scale) ends bit-identical to the uninterrupted run.
    @Test func resumingKeepsTheLossScaler() throws {
        let p = TrainingPrecision(format: .float16, lossScaling: .dynamic(initial: 0x1p30, growthInterval: 3))
        func make() -> Trainer {
            Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1, momentum: 0.9), options: options(p, epochs: 5, batch: 1),
                    plugins: [], seed: 9)
        }
        var whole = make()
        let full = try whole.run(stream(3))
        var first = make()
        _ = try first.run(stream(3), resumingFrom: nil, stopAfter: 0)
        let cp = try TrainerCheckpoint(decoding: try #require(first.checkpoint).encoded())
        #expect(cp.progress.lossScalerState.count == 3)
        var second = make()
        let resumed = try second.run(stream(3), resumingFrom: cp, stopAfter: nil)
        #expect(second.model.parameters == whole.model.parameters)
        #expect(resumed.progress.skippedSteps == full.progress.skippedSteps)
        #expect(second.lossScaler == whole.lossScaler)
        #expect(full.progress.skippedSteps[0] > 0)
    }
}
