import ContinualCore

/// BiC, bias correction (Wu, Chen, Wang, Ye, Liu, Guo & Fu, CVPR 2019, "Large Scale Incremental
/// Learning"): class-incremental rehearsal with distillation, then a two-parameter correction
/// of the newest classes' logits fitted on a held-out validation split.
///
/// - **Memory and split** (Sec. 4.1): `capacity` exemplars in all, m = ⌊capacity / classes seen⌋
///   per class, of which v = max(1, ⌊`validation_fraction` · m⌋) are validation exemplars and the
///   rest training exemplars. When an experience brings new classes, the old classes' sets are cut
///   to their first m − v and v (the memory then has the size it keeps after the experience), and
///   each new class holds out v of its samples (a seeded draw; at most half of them) as its
///   validation exemplars: they never enter training. The experience trains on its other samples
///   plus every training exemplar.
/// - **Stage 1** (Eq. 1-2): each row's loss is (1 − λ)·CE + λ·L_d, with the loop's CE (scaled,
///   not replaced) and L_d = −Σ_{c ∈ O} q_c log p_c, p = softmax(z_O / T), q = softmax(ẑ_O / T),
///   ẑ the previous model's logits after its own correction, O the old classes. λ = |O| / (|O| + |N|)
///   by default (the paper's n / (n + m)), T = `temperature` = 2; no T² factor (the paper's Eq. 1).
/// - **Stage 2** (Eq. 3-4): with the network frozen, α and β minimise the validation split's mean
///   CE (softmax over the classes seen so far) with the newest classes' logits set to α·z + β.
/// - **Prediction**: the argmax of the corrected logits, over every output.
///
/// Choices the paper leaves open, and ours: O = classes seen before the experience and absent from
/// its data, N = the experience's classes (in a class-incremental stream: old and new classes);
/// an experience without new classes, or without old ones, has no stage 2 and predicts with the
/// identity correction. Exemplars are a seeded random draw per class, not herding. Stage 2 runs
/// `bias_epochs` (200) full-batch steps of SGD with momentum 0.9 at `bias_lr` (0.1), divided by 10
/// at 1/4, 1/2 and 3/4 of them (Avalanche's schedule; the paper gives none); `beta_decay` adds
/// the authors' code's β²/2 penalty (0.1 there, 0 in the paper).
/// Multi-class single-head models only (refused in `prepare`).
public struct BiC: BatchLossTerm, PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options
    var dimension = 0
    /// Per class: training and validation exemplars, features [n × dimension].
    var trainSets: [[Float]] = []
    var validationSets: [[Float]] = []
    /// Classes seen before the current experience, through it, and in its data.
    var known: [Bool] = []
    var current: [Bool] = []
    var distilled: [Bool] = []
    var fresh: [Bool] = []
    /// The correction the model predicts with (and the previous model's, during training).
    public internal(set) var correction = BiasCorrection()
    var previous: MLP?
    var template: MLP?
    var rng = RandomSource(seed: 0)
    var lambda = 0.0
    /// The current experience's held-out samples of its new classes, and their training parts.
    public internal(set) var heldOut = Samples(dimension: 0)
    var newTraining: [Int: [Float]] = [:]
    /// Per experience: α, β, λ and the validation samples stage 2 used (0 = no stage 2).
    var history: [[Double]] = []
    var previousForward = RowsForward()
    var batchSize = 1

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        let k = try ExemplarSets.classCount(method: "bic", head: context.head, model: model)
        dimension = context.dimension
        trainSets = Array(repeating: [], count: k)
        validationSets = trainSets
        known = Array(repeating: false, count: k)
        (current, distilled, fresh) = (known, known, known)
        correction = BiasCorrection(corrected: known)
        (previous, template, history) = (nil, model, [])
        rng = context.randomSource("bic.split")
        batchSize = context.training.batchSize
    }

    /// Per-class sizes once `classes` classes are seen: validation v and training m − v.
    func shares(classes: Int) -> (train: Int, validation: Int) {
        let m = classes == 0 ? 0 : options.capacity / classes
        let v = m == 0 ? 0 : min(m, max(1, Int(options.validationFraction * Double(m))))
        return (m - v, v)
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        current = Array(repeating: false, count: known.count)
        for y in context.experience.train.labels where y >= 0 && Int(y) < known.count { current[Int(y)] = true }
        distilled = zip(known, current).map { $0 && !$1 }
        fresh = zip(current, known).map { $0 && !$1 }
        let newClasses = fresh.contains(true)
        for y in known.indices where current[y] { known[y] = true }
        let (o, n) = (distilled.lazy.filter { $0 }.count, current.lazy.filter { $0 }.count)
        lambda = options.lambda ?? (o + n == 0 ? 0 : Double(o) / Double(o + n))
        guard newClasses else { return }
        let (t, v) = shares(classes: known.lazy.filter { $0 }.count)
        for y in known.indices {
            trainSets[y] = Array(trainSets[y].prefix(t * dimension))
            validationSets[y] = Array(validationSets[y].prefix(v * dimension))
        }
    }

    /// Holds out the new classes' validation samples and adds every training exemplar.
    public mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        heldOut = Samples(dimension: dimension)
        newTraining = [:]
        let v = shares(classes: known.lazy.filter { $0 }.count).validation
        var hold = Set<Int>()
        for y in known.indices where fresh[y] {
            var members = samples.labels.indices.filter { samples.labels[$0] == Int32(y) }
            for i in members.indices.dropLast() { members.swapAt(i, i + rng.uniformInt(below: members.count - i)) }
            let k = min(v, members.count / 2)
            for i in members.prefix(k) { hold.insert(i) }
            heldOut.append(samples.subset(Array(members.prefix(k)).sorted()))
            newTraining[y] = members.dropFirst(k).flatMap { samples.row($0) }
        }
        if !hold.isEmpty { samples = samples.subset(samples.labels.indices.filter { !hold.contains($0) }) }
        ExemplarSets.append(trainSets, to: &samples, dimension: dimension, route: context.route)
    }
}

extension BiC {
    /// Stage 1: scales the loop's CE by 1 − λ and adds λ·L_d on the old classes (the rows' share
    /// of the batch mean, like the loop's loss).
    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        let L = input.logitCount, n = input.rows.count
        guard n > 0, lambda > 0, let prev = previous, distilled.contains(true) else { return 0 }
        let old = previousForward.logits(prev, input, batchSize: batchSize)
        for k in 0..<n { correction.apply(old + k * L, L: L) }
        let scale = Double(input.scale), T = options.temperature
        var value = 0.0
        for (k, row) in input.rows.enumerated() {
            let z = input.logits + k * L, g = input.logitGradient + k * L
            let label = Int(input.batch.labels[row])
            if label >= 0 && label < L {
                let loop = RowLoss.loopCrossEntropy(z, L: L, label: label, active: input.activeClasses)
                let grad = RowLoss.ceGradient(loop.p, label: label)
                for c in 0..<L { g[c] -= Float(scale * lambda * grad[c]) }
                value -= scale * lambda * loop.loss
            }
            let p = Self.softmax(z, L: L, over: distilled, temperature: T)
            let q = Self.softmax(UnsafePointer(old + k * L), L: L, over: distilled, temperature: T)
            for c in 0..<L where distilled[c] {
                value -= scale * lambda * q[c] * _log(max(p[c], .leastNormalMagnitude))
                g[c] += Float(scale * lambda * (p[c] - q[c]) / T)
            }
        }
        return value
    }

    /// softmax(z / T) over the classes in `over` (0 elsewhere), in float64.
    static func softmax(_ z: UnsafePointer<Float>, L: Int, over: [Bool], temperature T: Double) -> [Double] {
        var p = [Double](repeating: 0, count: L)
        var m = -Double.infinity
        for c in 0..<L where over[c] { m = max(m, Double(z[c]) / T) }
        var s = 0.0
        for c in 0..<L where over[c] { p[c] = _exp(Double(z[c]) / T - m); s += p[c] }
        return p.map { $0 / s }
    }

    /// Stage 2 on the validation split, then the new classes' exemplars and the old model.
    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace ws: Workspace) throws {
        var used = 0
        correction = BiasCorrection(corrected: Array(repeating: false, count: known.count))
        if fresh.contains(true) && distilled.contains(true) {
            let set = validationSplit
            correction.corrected = current
            let z = Self.logits(model: model, samples: set, workspace: ws)
            correction.fit(logits: z, labels: set.labels, L: model.logitCount, over: known, betaDecay: options.betaDecay,
                           epochs: options.biasEpochs, lr: options.biasLR)
            used = set.count
        }
        let t = shares(classes: known.lazy.filter { $0 }.count).train
        for y in known.indices where fresh[y] {
            trainSets[y] = Array((newTraining[y] ?? []).prefix(t * dimension))
            validationSets[y] = heldOut.subset(heldOut.labels.indices.filter { heldOut.labels[$0] == Int32(y) }).features
        }
        history.append([correction.alpha, correction.beta, lambda, Double(used)])
        (previous, heldOut, newTraining) = (model, Samples(dimension: dimension), [:])
    }

    /// Stage 2's data: every old class's validation exemplars, then the held-out new samples.
    public var validationSplit: Samples {
        var set = Samples(dimension: dimension)
        for (y, v) in validationSets.enumerated() where !v.isEmpty {
            set.append(Samples(dimension: dimension, features: v, labels: Array(repeating: Int32(y), count: v.count / dimension)))
        }
        set.append(heldOut)
        return set
    }

    /// The model's logits for `samples` through route 0, [count × logitCount].
    static func logits(model: MLP, samples: Samples, workspace ws: Workspace) -> [Float] {
        let L = model.logitCount, chunk = max(ws.capacity, 1)
        var out = [Float](repeating: 0, count: samples.count * L)
        samples.features.withUnsafeBufferPointer { xs in
            var start = 0
            while start < samples.count {
                let m = min(chunk, samples.count - start)
                model.forward(xs.baseAddress! + start * samples.dimension, count: m, route: 0, workspace: ws)
                for k in 0..<(m * L) { out[start * L + k] = ws.logits[k] }
                start += m
            }
        }
        return out
    }

    /// The argmax of the corrected logits over every output (first index on ties, as the loop).
    public mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int, workspace: Workspace) -> Predictions? {
        let L = model.logitCount
        var z = Self.logits(model: model, samples: samples, workspace: workspace)
        let classes = z.withUnsafeMutableBufferPointer { zp in
            (0..<samples.count).map { r -> Int32 in
                let row = zp.baseAddress! + r * L
                correction.apply(row, L: L)
                var best = 0
                for c in 1..<max(L, 1) where row[c] > row[best] { best = c }
                return Int32(best)
            }
        }
        return Predictions(classes: classes)
    }
}
