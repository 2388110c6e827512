@testable import ContinualCore
import ContinualScenarios
@testable import ContinualStrategies
import Testing

/// Shared fixtures for ER-ACE, GDumb and iCaRL: a 4-class class-incremental stream of Gaussian
/// blobs and the loop's own loss on a batch, so a test can check what a batch-loss term leaves
/// in the logit gradient against an objective written out by hand.
enum RehearsalFixtures {
    static func blobs(seed: UInt64 = 5, perClass: Int = 60) -> ExperienceStream {
        var rng = RandomSource(seed: seed)
        let centres = (0..<4).map { _ in (0..<6).map { _ in Float(rng.normal() * 2) } }
        func samples(_ classes: [Int32]) -> Samples {
            var s = Samples(dimension: 6)
            for i in 0..<(perClass * classes.count) {
                let y = classes[i % classes.count]
                s.features += centres[Int(y)].map { $0 + Float(rng.normal()) }
                s.labels.append(y)
            }
            return s
        }
        let parts: [[Int32]] = [[0, 1], [2], [3]]
        return ExperienceStream(name: "blobs", featureNames: (0..<6).map { "f\($0)" }, head: .multiclass(classes: 4),
                                experiences: parts.enumerated().map { i, c in
                                    Experience(index: i, name: "e\(i)", train: samples(c), test: samples(c))
                                })
    }

    /// The loop's batch-mean CE gradient on `z` (all classes active), then `term`'s additions:
    /// returns (loop loss + term value, total logit gradient).
    static func total(_ batch: Batch, _ z: [Float], model: MLP, active: [Bool]? = nil,
                      _ term: (BatchLossInput) -> Double) -> (Double, [Float]) {
        var g = z
        let n = batch.count, L = model.logitCount
        let loop = g.withUnsafeMutableBufferPointer { gp in
            batch.labels.withUnsafeBufferPointer { y in
                if let active {
                    return active.withUnsafeBufferPointer { a in
                        Loss.lossAndLogitGradient(head: model.spec.head, logits: gp.baseAddress!, labels: y.baseAddress!,
                                                  count: n, scale: 1 / Float(n), active: a.baseAddress!)
                    }
                }
                return Loss.lossAndLogitGradient(head: model.spec.head, logits: gp.baseAddress!, labels: y.baseAddress!,
                                                 count: n, scale: 1 / Float(n))
            }
        }
        var zz = z
        let extra = zz.withUnsafeMutableBufferPointer { zp in
            g.withUnsafeMutableBufferPointer { gp in
                term(BatchLossInput(batch: batch, rows: Array(0..<n)[...], route: 0, logits: UnsafePointer(zp.baseAddress!),
                                    logitGradient: gp.baseAddress!, logitCount: L, scale: 1 / Float(n), model: model,
                                    experienceIndex: 0, activeClasses: active))
            }
        }
        return (loop / Double(n) + extra, g)   // the loop's loss is a sum; terms report batch-mean shares
    }

    /// Softmax CE of `label` over the classes in `mask`, in float64.
    static func ce(_ z: ArraySlice<Float>, _ label: Int, _ mask: [Bool]) -> Double {
        let zs = Array(z).map(Double.init)
        let m = zs.indices.filter { mask[$0] }.map { zs[$0] }.max()!
        let s = zs.indices.filter { mask[$0] }.reduce(0.0) { $0 + _exp(zs[$1] - m) }
        return m + _log(s) - zs[label]
    }

    static func context(_ head: OutputHead, dimension: Int, training: TrainingOptions = TrainingOptions()) -> RunContext {
        RunContext(seed: 2, pluginIndex: 0, experienceCount: 3, dimension: dimension, head: head, training: training)
    }

    static func bwt(_ r: [[Double]]) -> Double {
        (0..<(r.count - 1)).map { r[r.count - 1][$0] - r[$0][$0] }.reduce(0, +) / Double(r.count - 1)
    }
}

@Suite struct ERACETests {
    /// Loop + term = mean over own rows of CE over the classes present in them + mean over replayed
    /// rows of CE over every class; value and gradient, against finite differences.
    @Test func theObjectiveIsTheAsymmetricCrossEntropy() throws {
        var rng = RandomSource(seed: 3)
        var model = MLP(spec: MLPSpec(inputs: 2, hidden: [], head: .multiclass(classes: 4)), rng: &rng)
        var ace = ERACE(options: .init(capacity: 50, replayPerBatch: 3))
        try ace.prepare(model: &model, context: RehearsalFixtures.context(.multiclass(classes: 4), dimension: 2))
        // Fill the buffer with old classes 0 and 1 (one step of own rows).
        var first = Batch(dimension: 2, capacity: 16)
        for i in 0..<6 { first.append(features: [Float(i), 1], label: Int32(i % 2), route: 0) }
        first.ownCount = 6
        let ctx = ExperienceContext(index: 0, experiences: [], route: 0)
        ace.extendBatch(&first, context: ctx)
        _ = RehearsalFixtures.total(first, (0..<24).map { _ in Float(rng.uniform(-1, 1)) }, model: model) { ace.addBatchLoss($0) }
        #expect(ace.buffer.count == 6)
        // A step of new class 2 and 3 rows plus 3 replayed rows.
        var step = Batch(dimension: 2, capacity: 16)
        for i in 0..<4 { step.append(features: [1, Float(i)], label: Int32(2 + i % 2), route: 0) }
        step.ownCount = 4
        ace.extendBatch(&step, context: ctx)
        #expect(step.count == 7 && step.labels[4...].allSatisfy { $0 == 0 || $0 == 1 })
        let frozen = ace
        let present = [false, false, true, true], all = [true, true, true, true]
        func objective(_ z: [Float]) -> Double {
            let own = (0..<4).map { RehearsalFixtures.ce(z[($0 * 4)..<($0 * 4 + 4)], Int(step.labels[$0]), present) }
            let replay = (4..<7).map { RehearsalFixtures.ce(z[($0 * 4)..<($0 * 4 + 4)], Int(step.labels[$0]), all) }
            return own.reduce(0, +) / 4 + replay.reduce(0, +) / 3
        }
        let z: [Float] = (0..<28).map { _ in Float(rng.uniform(-2, 2)) }
        var copy = frozen
        let (value, g) = RehearsalFixtures.total(step, z, model: model) { copy.addBatchLoss($0) }
        #expect(abs(value - objective(z)) < 1e-5)
        let h: Float = 1e-2
        for i in z.indices {
            var up = z, down = z
            up[i] += h
            down[i] -= h
            let numeric = (objective(up) - objective(down)) / Double(2 * h)
            #expect(abs(numeric - Double(g[i])) < 1e-3, "logit \(i): \(numeric) vs \(g[i])")
        }
        // Own rows push no gradient into the logits of classes absent from the batch.
        for r in 0..<4 { #expect(abs(g[r * 4]) < 1e-7 && abs(g[r * 4 + 1]) < 1e-7) }
        // The own rows were offered to the buffer after the draw.
        #expect(copy.buffer.offered == 10)
    }

    @Test func forgetsLessThanNaiveInClassIncrementalLearning() throws {
        let stream = RehearsalFixtures.blobs()
        func bwt(_ plugins: [any StrategyPlugin]) throws -> Double {
            var t = Trainer(spec: MLPSpec(inputs: 6, hidden: [16], head: .multiclass(classes: 4)), optimizer: .sgd(learningRate: 0.05),
                            options: TrainingOptions(epochs: 3, batchSize: 10), plugins: plugins, seed: 1)
            return RehearsalFixtures.bwt(try t.run(stream).accuracy)
        }
        let naive = try bwt([]), ace = try bwt([ERACE(options: .init(capacity: 40, replayPerBatch: 10))])
        #expect(ace > naive + 0.2, "ER-ACE BWT \(ace) vs naive \(naive)")
    }
}

@Suite struct GDumbTests {
    /// The paper's greedy sampler: 30 slots, classes arriving 100 × 0, 10 × 1, 100 × 2 end at
    /// [10, 10, 10] — each new class takes slots from the largest until it has k / |Y|.
    @Test func theMemoryIsClassBalanced() throws {
        var g = GDumb(options: .init(capacity: 30))
        var r = RandomSource(seed: 1)
        var model = MLP(spec: MLPSpec(inputs: 1, hidden: [], head: .multiclass(classes: 3)), rng: &r)
        try g.prepare(model: &model, context: RehearsalFixtures.context(.multiclass(classes: 3), dimension: 1))
        for (y, n) in [(0, 100), (1, 10), (2, 100)] { for i in 0..<n { g.offer([Float(i)], label: Int32(y), route: 0) } }
        #expect(g.storedSamples.classCounts(classes: 3) == [10, 10, 10])
        // Class 0's survivors are a subset of what it offered; class 1 kept all ten.
        #expect(Set(g.storedSamples.labels.indices.filter { g.storedSamples.labels[$0] == 1 }.map { g.storedSamples.features[$0] })
                == Set((0..<10).map(Float.init)))
    }

    /// Before every experience the model is back at its initial parameters, and it trains on the
    /// memory alone.
    @Test func retrainsFromTheInitialWeightsOnTheMemoryOnly() throws {
        let stream = RehearsalFixtures.blobs()
        var g = GDumb(options: .init(capacity: 40))
        var r = RandomSource(seed: 9)
        var model = MLP(spec: MLPSpec(inputs: 6, hidden: [8], head: .multiclass(classes: 4)), rng: &r)
        let initial = model.parameters
        try g.prepare(model: &model, context: RehearsalFixtures.context(.multiclass(classes: 4), dimension: 6))
        for (k, e) in stream.experiences.enumerated() {
            model.parameters = model.parameters.map { $0 + 0.5 }   // as if trained
            let ctx = ExperienceContext(index: k, experiences: stream.experiences, route: 0)
            try g.beforeExperience(model: &model, context: ctx)
            #expect(model.parameters == initial)
            var set = e.train
            g.adjustTrainingSet(&set, context: ctx)
            #expect(set.count == min(40, stream.experiences[0...k].reduce(0) { $0 + $1.train.count }))
            let counts = set.classCounts(classes: 4), seen = counts.filter { $0 > 0 }
            #expect(seen.max()! - seen.min()! <= 1)
        }
    }

    /// With labels reused across experiences ("0 vs 1" in each), label balance keeps the first
    /// experience; balancing (experience, label) pairs shares the memory between experiences.
    @Test func experienceAndClassBalanceSharesTheMemoryBetweenExperiences() throws {
        func memory(_ balance: GDumb.Options.Balance) throws -> [Int] {
            var g = GDumb(options: .init(capacity: 30, balance: balance))
            var r = RandomSource(seed: 1)
            var model = MLP(spec: MLPSpec(inputs: 1, hidden: [], head: .multiclass(classes: 2)), rng: &r)
            try g.prepare(model: &model, context: RehearsalFixtures.context(.multiclass(classes: 2), dimension: 1))
            for e in 0..<3 {
                var set = Samples(dimension: 1, features: (0..<40).map { Float(e * 100 + $0) }, labels: (0..<40).map { Int32($0 % 2) })
                g.adjustTrainingSet(&set, context: ExperienceContext(index: e, experiences: [], route: 0))
            }
            return (0..<3).map { e in g.storedSamples.features.filter { Int($0) / 100 == e }.count }
        }
        #expect(try memory(.class) == [30, 0, 0])
        #expect(try memory(.experienceAndClass) == [10, 10, 10])
    }

    @Test func listedAloneOnly() {
        #expect(GDumb.Options.composition.isAlone)
    }
}

@Suite struct ICaRLTests {
    /// Loop + term = mean over rows of Σ over known classes of BCE(σ(z_c), t_c), t_c the previous
    /// model's σ(z°_c) for old classes and one-hot otherwise; unknown classes get no gradient.
    @Test func theLossIsSigmoidClassificationPlusDistillation() throws {
        var rng = RandomSource(seed: 4)
        var model = MLP(spec: MLPSpec(inputs: 3, hidden: [5], head: .multiclass(classes: 4)), rng: &rng)
        var icarl = ICaRL(options: .init(capacity: 20))
        try icarl.prepare(model: &model, context: RehearsalFixtures.context(.multiclass(classes: 4), dimension: 3))
        var previous = model
        previous.parameters = previous.parameters.map { $0 + Float(rng.uniform(-0.3, 0.3)) }
        try icarl.restore(from: PluginState(floats: ["means": [], "exemplars": [], "previous_parameters": previous.parameters],
                                            ints: ["old": [1, 1, 0, 0], "known": [1, 1, 1, 0], "exemplar_counts": [0, 0, 0, 0],
                                                   "mean_widths": [0, 0, 0, 0]]))
        var batch = Batch(dimension: 3, capacity: 8)
        for i in 0..<5 { batch.append(features: [Float(i) * 0.3, -1, 0.5], label: Int32([2, 0, 1, 2, 2][i]), route: 0) }
        batch.ownCount = 5
        let ws = previous.makeWorkspace(capacity: 8)
        batch.features.withUnsafeBufferPointer { previous.forward($0.baseAddress!, count: 5, route: 0, workspace: ws) }
        let old = Array(UnsafeBufferPointer(start: ws.logits, count: 20)).map(Double.init)
        func sigma(_ x: Double) -> Double { 1 / (1 + _exp(-x)) }
        func objective(_ z: [Float]) -> Double {
            var total = 0.0
            for r in 0..<5 {
                for c in 0..<3 {
                    let x = Double(z[r * 4 + c])
                    let t = c < 2 ? sigma(old[r * 4 + c]) : (Int(batch.labels[r]) == c ? 1 : 0)
                    total += -(t * _log(sigma(x)) + (1 - t) * _log(1 - sigma(x)))
                }
            }
            return total / 5
        }
        let z: [Float] = (0..<20).map { _ in Float(rng.uniform(-2, 2)) }
        var copy = icarl
        let (value, g) = RehearsalFixtures.total(batch, z, model: model) { copy.addBatchLoss($0) }
        #expect(abs(value - objective(z)) < 1e-5)
        let h: Float = 1e-2
        for i in z.indices {
            var up = z, down = z
            up[i] += h
            down[i] -= h
            let numeric = (objective(up) - objective(down)) / Double(2 * h)
            #expect(abs(numeric - Double(g[i])) < 1e-3, "logit \(i): \(numeric) vs \(g[i])")
        }
        for r in 0..<5 { #expect(abs(g[r * 4 + 3]) < 1e-7) }   // class 3 is not known yet
    }

    /// After training, predictions are the nearest normalised exemplar mean to the normalised
    /// penultimate features, computed here step by step; exemplar sets hold ⌊K / classes⌋ samples
    /// and old sets are prefixes of what they were (herding order).
    @Test func theClassifierIsTheNearestMeanOfExemplars() throws {
        let stream = RehearsalFixtures.blobs()
        let spec = MLPSpec(inputs: 6, hidden: [8], head: .multiclass(classes: 4))
        var t = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: 2, batchSize: 10),
                        plugins: [ICaRL(options: .init(capacity: 24))], seed: 3)
        _ = try t.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: 1)
        let afterTwo = (t.plugins[0] as! ICaRL).exemplarSets
        #expect(afterTwo.prefix(3).map { $0.count / 6 } == [8, 8, 8])
        var u = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: 2, batchSize: 10),
                        plugins: [ICaRL(options: .init(capacity: 24))], seed: 3)
        let outcome = try u.run(stream)
        var icarl = u.plugins[0] as! ICaRL
        let sets = icarl.exemplarSets
        #expect(sets.map { $0.count / 6 } == [6, 6, 6, 6])
        for y in 0..<3 { #expect(Array(afterTwo[y].prefix(36)) == sets[y]) }
        // By hand: φ(x) = normalised hidden activations of the final model.
        let model = outcome.finalModel
        let ws = model.makeWorkspace(capacity: 512)
        func phi(_ xs: [Float], _ n: Int) -> [[Double]] {
            xs.withUnsafeBufferPointer { model.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
            let h = ws.hiddenActivations(0)
            return (0..<n).map { r in
                let v = (0..<8).map { Double(h[r * 8 + $0]) }
                let norm = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
                return norm > 0 ? v.map { $0 / norm } : v
            }
        }
        let means: [[Double]] = sets.map { set in
            let f = phi(set, set.count / 6)
            let m = (0..<8).map { j in f.reduce(0) { $0 + $1[j] } / Double(f.count) }
            let norm = m.reduce(0) { $0 + $1 * $1 }.squareRoot()
            return m.map { $0 / norm }
        }
        var test = Samples(dimension: 6)
        for e in stream.experiences { test.append(e.test) }
        let f = phi(test.features, test.count)
        let expected = f.map { x in
            Int32((0..<4).min { a, b in
                zip(x, means[a]).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) } < zip(x, means[b]).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }
            }!)
        }
        let got = icarl.predictions(model: model, samples: test, experienceIndex: 2, workspace: model.makeWorkspace(capacity: 64))!.classes
        #expect(got == expected)
        // NME is a real classifier here: far above chance on all four classes.
        #expect(Double(zip(got, test.labels).filter { $0 == $1 }.count) / Double(test.count) > 0.6)
    }
}

/// A checkpoint's checksum only detects accidents; labels and routes restored from it later index
/// logit rows and weight copies, so every sample-storing plugin refuses stored labels, routes or
/// experience numbers outside their range (an edited file) instead of reading past a buffer.
@Suite("Edited checkpoint indices")
struct EditedCheckpointIndexTests {
    static func plugins() -> [any StrategyPlugin] {
        [ERACE(options: .init(capacity: 30, replayPerBatch: 4)), DarkExperienceReplay(plusPlus: true, alpha: 0.1, beta: 0.5, capacity: 30, replayPerBatch: 4),
         GDumb(options: .init()), GEM(options: .init()), AGEM(options: .init()), Replay(options: Replay.Options(capacity: 30))]
        // (iCaRL stores its exemplars per class, by position: no label array to edit.)
    }

    @Test(arguments: [Int64(100_000), -5, Int64(Int32.max) + 1])
    func outOfRangeStoredIndicesAreRefused(_ bad: Int64) throws {
        let stream = RehearsalFixtures.blobs()
        let spec = MLPSpec(inputs: 6, hidden: [8], head: .multiclass(classes: 4))
        for plugin in Self.plugins() {
            var t = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: 1, batchSize: 10),
                            plugins: [plugin], seed: 3)
            _ = try t.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: 0)
            let good = try #require(t.checkpoint)
            // The unedited checkpoint resumes.
            var r = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: 1, batchSize: 10),
                            plugins: [Self.plugins().first { $0.name == plugin.name }!], seed: 3)
            _ = try r.run(stream, source: EpochSource(), resumingFrom: good, stopAfter: 1)
            let keys = good.pluginStates[0].ints.keys.filter { $0.hasSuffix("labels") || $0.hasSuffix("routes") }
            #expect(!keys.isEmpty, "\(plugin.name) stores no labels?")
            // Labels must index the head; routes must be valid Int32 (a route past the model's copies
            // is wrapped by the layer helpers, so it stays inside the weights).
            for key in keys where !(good.pluginStates[0].ints[key] ?? []).isEmpty
                                  && (key.hasSuffix("labels") || bad < 0 || bad > Int64(Int32.max)) {
                var edited = good
                edited.pluginStates[0].ints[key]![0] = bad
                var u = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: 1, batchSize: 10),
                                plugins: [Self.plugins().first { $0.name == plugin.name }!], seed: 3)
                #expect(throws: CheckpointError.self, "\(plugin.name) \(key) = \(bad)") {
                    _ = try u.run(stream, source: EpochSource(), resumingFrom: edited, stopAfter: 1)
                }
            }
        }
    }
}
