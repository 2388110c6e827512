@testable import ContinualCore
@testable import ContinualStrategies
import Testing

/// BiC's bias layer is fitted on the held-out validation split alone (the held-out rows never
/// reach training; a training-only row does not move α, β; a held-out one does), corrects only the
/// newest classes' logits, is the identity at α = 1, β = 0, and reaches the minimum of its stage-2
/// objective; the stage-1 term's gradient matches central differences of its value.
@Suite("BiC")
struct BiCTests {
    static let K = 4
    static let head = OutputHead.multiclass(classes: K)
    static let run = RunContext(seed: 6, pluginIndex: 0, experienceCount: 2, dimension: 3, head: head,
                                training: TrainingOptions(epochs: 1, batchSize: 8))

    /// Two class-incremental experiences ({0, 1}, {2, 3}) of 40 rows per class.
    static func experiences(seed: UInt64 = 2) -> [Experience] {
        var rng = RandomSource(seed: seed)
        func samples(_ classes: [Int32], _ n: Int) -> Samples {
            var s = Samples(dimension: 3)
            for i in 0..<n {
                let y = classes[i % classes.count]
                s.features += (0..<3).map { Float(rng.normal()) + ($0 == Int(y) % 3 ? 2 : 0) }
                s.labels.append(y)
            }
            return s
        }
        return [Experience(index: 0, name: "a", train: samples([0, 1], 80), test: samples([0, 1], 20)),
                Experience(index: 1, name: "b", train: samples([2, 3], 80), test: samples([2, 3], 20))]
    }

    static func model() -> MLP {
        var rng = RandomSource(seed: 17)
        return MLP(spec: MLPSpec(inputs: 3, hidden: [5], activation: .tanh, head: head), rng: &rng)
    }

    /// What one pass over the experiences produced (the model is not trained: the plugin alone).
    struct Pass {
        var bic: BiC
        var trainingSets: [Samples] = []
        var splits: [Samples] = []
    }

    static func pass(_ exps: [Experience], options: BiC.Options = .init(capacity: 40, validationFraction: 0.25)) throws -> Pass {
        var model = Self.model()
        var p = Pass(bic: BiC(options: options))
        try p.bic.prepare(model: &model, context: run)
        let ws = model.makeWorkspace(capacity: 64)
        for i in exps.indices {
            let context = ExperienceContext(index: i, experiences: exps, route: 0)
            try p.bic.beforeExperience(model: &model, context: context)
            var train = exps[i].train
            p.bic.adjustTrainingSet(&train, context: context)
            p.trainingSets.append(train)
            p.splits.append(p.bic.validationSplit)
            try p.bic.afterExperience(model: &model, context: context, workspace: ws)
        }
        return p
    }

    static func rows(_ s: Samples) -> [[Float]] { (0..<s.count).map { Array(s.row($0)) + [Float(s.labels[$0])] } }

    /// capacity 40, fraction 0.25: after {0, 1} m = 20, v = 5; after {2, 3} m = 10, v = 2.
    @Test func validationSamplesAreExactlyTheHeldOutOnesAndNeverTrain() throws {
        let exps = Self.experiences()
        let p = try Self.pass(exps)
        let (train0, split0) = (Self.rows(p.trainingSets[0]), Self.rows(p.splits[0]))
        #expect(split0.count == 10 && train0.count == 70)
        #expect(Set(train0 + split0) == Set(Self.rows(exps[0].train)) && Set(train0).isDisjoint(with: split0))
        let (train1, split1) = (Self.rows(p.trainingSets[1]), Self.rows(p.splits[1]))
        // 80 − 4 held out + 8 training exemplars of each old class; 2 validation rows per class.
        #expect(train1.count == 76 + 16 && split1.count == 8)
        #expect(Set(train1).isDisjoint(with: split1) && Set(train0).isDisjoint(with: split1))
        #expect(Set(split1).isSubset(of: Set(split0 + Self.rows(exps[1].train))))
        #expect(p.bic.correction.corrected == [false, false, true, true])
        #expect(p.bic.correction.alpha != 1 || p.bic.correction.beta != 0)
    }

    /// α, β are the stage-2 minimum on the split, whatever the training-only rows hold.
    @Test func biasLayerDependsOnTheValidationSplitOnly() throws {
        let exps = Self.experiences()
        let p = try Self.pass(exps)
        let split = p.splits[1]
        let trainingOnly = (0..<exps[1].train.count).first { i in !Self.rows(split).contains(Array(exps[1].train.row(i)) + [Float(exps[1].train.labels[i])]) }!
        let heldOut = (0..<exps[1].train.count).first { i in Self.rows(split).contains(Array(exps[1].train.row(i)) + [Float(exps[1].train.labels[i])]) }!
        func changed(_ row: Int) throws -> BiasCorrection {
            var e = exps
            for f in 0..<3 { e[1].train.features[row * 3 + f] += 3 }
            return try Self.pass(e).bic.correction
        }
        #expect(try changed(trainingOnly) == p.bic.correction)
        #expect(try changed(heldOut) != p.bic.correction)
        // Recomputed from the split's logits alone.
        var refit = BiasCorrection(corrected: [false, false, true, true])
        let z = BiC.logits(model: Self.model(), samples: split, workspace: Self.model().makeWorkspace(capacity: 64))
        refit.fit(logits: z, labels: split.labels, L: Self.K, over: [true, true, true, true], betaDecay: 0, epochs: 200, lr: 0.1)
        #expect(refit == p.bic.correction)
    }

    /// The correction changes the newest classes' logits only; α = 1, β = 0 changes nothing.
    @Test func correctionTouchesOnlyTheNewestClassesAndIdentityIsExact() throws {
        let c = BiasCorrection(alpha: 0.7, beta: -1.25, corrected: [false, false, true, true])
        var z: [Float] = [0.3, -2.1, 1.7, 0.05]
        z.withUnsafeMutableBufferPointer { c.apply($0.baseAddress!, L: 4) }
        #expect(z[0] == 0.3 && z[1] == -2.1)
        let expected2: Float = Float(0.7 * Double(Float(1.7)) - 1.25)
        let expected3: Float = Float(0.7 * Double(Float(0.05)) - 1.25)
        #expect(z[2] == expected2)
        #expect(z[3] == expected3)
        var w: [Float] = [0.3, -2.1, 1.7, 0.05, .pi]
        let before = w
        w.withUnsafeMutableBufferPointer { BiasCorrection(corrected: [true, true, true, true, true]).apply($0.baseAddress!, L: 5) }
        #expect(w.map(\.bitPattern) == before.map(\.bitPattern))
        // After the first experience the correction is the identity: the network's own argmax.
        let exps = Self.experiences()
        var p = try Self.pass(Array(exps.prefix(1)))
        let model = Self.model(), ws = model.makeWorkspace(capacity: 64)
        var own = [Int32](repeating: 0, count: exps[0].test.count)
        exps[0].test.features.withUnsafeBufferPointer { x in
            own.withUnsafeMutableBufferPointer { model.predict(x.baseAddress!, count: exps[0].test.count, route: 0, workspace: ws, into: $0.baseAddress!) }
        }
        #expect(p.bic.predictions(model: model, samples: exps[0].test, experienceIndex: 0, workspace: ws)?.classes == own)
    }

    /// Stage 2 is Avalanche's schedule (momentum 0.9; lr ÷ 10 at 1/4, 1/2, 3/4 of the epochs) on
    /// the validation CE: the fit equals a float64 recursion on central-difference gradients of an
    /// independently written loss, the analytic gradient matches those differences, and on a split
    /// the correction cannot separate it ends near the minimum (no point of a grid around it is
    /// lower by 10⁻⁴: the decayed rate stops it short of the exact minimum).
    @Test func stageTwoDescendsTheValidationCrossEntropy() throws {
        var rng = RandomSource(seed: 12)
        let n = 24, L = 4
        let z = (0..<(n * L)).map { _ in Float(rng.normal() * 2) }
        let labels: [Int32] = (0..<n).map { (i: Int) -> Int32 in Int32(i % 3 == 0 ? 2 + i % 2 : i % 2) }
        let over = [true, true, true, true], newest = [false, false, true, true]
        func loss(_ a: Double, _ b: Double, _ decay: Double) -> Double {
            var total = 0.0
            for r in 0..<n {
                let u = (0..<L).map { c in newest[c] ? a * Double(z[r * L + c]) + b : Double(z[r * L + c]) }
                total += _log(u.reduce(0) { $0 + _exp($1) }) - u[Int(labels[r])]
            }
            return total / Double(n) + decay * b * b / 2
        }
        for decay in [0.0, 0.1] {
            var c = BiasCorrection(corrected: newest)
            c.fit(logits: z, labels: labels, L: L, over: over, betaDecay: decay, epochs: 200, lr: 0.1)
            var (a, b, va, vb) = (1.0, 0.0, 0.0, 0.0)
            let h = 1e-6
            for e in 0..<200 {
                let ga = (loss(a + h, b, decay) - loss(a - h, b, decay)) / (2 * h)
                let gb = (loss(a, b + h, decay) - loss(a, b - h, decay)) / (2 * h)
                let analytic = BiasCorrection(alpha: a, beta: b, corrected: newest).objective(z, labels: labels, L: L, over: over, betaDecay: decay).g
                #expect(abs(analytic.0 - ga) < 1e-6 && abs(analytic.1 - gb) < 1e-6)
                let rate = 0.1 * [1, 0.1, 0.01, 0.001][e / 50]
                (va, vb) = (0.9 * va + ga, 0.9 * vb + gb)
                (a, b) = (a - rate * va, b - rate * vb)
            }
            #expect(abs(c.alpha - a) < 1e-5 && abs(c.beta - b) < 1e-5, "\(c.alpha), \(c.beta) vs \(a), \(b)")
            let best = loss(c.alpha, c.beta, decay)
            for da in stride(from: -0.05, through: 0.05, by: 0.01) {
                for db in stride(from: -0.05, through: 0.05, by: 0.01) {
                    #expect(loss(c.alpha + da, c.beta + db, decay) >= best - 1e-4)
                }
            }
        }
    }

    /// In the second experience λ = 2 / (2 + 2); the term's logit gradient is ∂(value)/∂z.
    @Test func stageOneTermGradientMatchesCentralDifferences() throws {
        let exps = Self.experiences()
        var p = try Self.pass(Array(exps.prefix(1)))
        var model = Self.model()
        try p.bic.beforeExperience(model: &model, context: ExperienceContext(index: 1, experiences: exps, route: 0))
        #expect(p.bic.lambda == 0.5)
        var batch = Batch(dimension: 3, capacity: 8)
        for i in 0..<4 { batch.append(features: exps[i % 2].train.row(i), label: exps[i % 2].train.labels[i], route: 0) }
        batch.ownCount = 4
        var rng = RandomSource(seed: 5)
        let z0 = (0..<16).map { _ in Float(rng.normal()) }
        func term(_ z: [Float], _ bic: inout BiC) -> (Double, [Float]) {
            var g = [Float](repeating: 0, count: 16)
            let v = z.withUnsafeBufferPointer { zp in
                g.withUnsafeMutableBufferPointer { gp in
                    bic.addBatchLoss(BatchLossInput(batch: batch, rows: ArraySlice(0..<4), route: 0, logits: zp.baseAddress!,
                                                    logitGradient: gp.baseAddress!, logitCount: 4, scale: 0.25, model: model,
                                                    experienceIndex: 1))
                }
            }
            return (v, g)
        }
        var bic = p.bic
        let g = term(z0, &bic).1
        for j in 0..<16 {
            var plus = z0, minus = z0
            plus[j] += 1e-2
            minus[j] -= 1e-2
            let numeric = (term(plus, &bic).0 - term(minus, &bic).0) / (Double(plus[j]) - Double(minus[j]))
            #expect(abs(Double(g[j]) - numeric) < 1e-4, "logit \(j): \(g[j]) vs \(numeric)")
        }
    }
}
