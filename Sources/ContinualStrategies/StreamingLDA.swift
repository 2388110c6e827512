import ContinualCore

/// Deep Streaming LDA (Hayes & Kanan 2020) and its nearest-class-mean special case: the network
/// trains on the first `base_experiences` experiences as usual, is then frozen, and a linear
/// discriminant on its penultimate features classifies — the cheapest on-device learner (no
/// backward pass after the base experiences, one running mean per class and one shared
/// covariance).
///
/// - Statistics: after each experience, every training sample of that experience (its own data,
///   never a replayed set) updates, in order, its class mean μ_y (running mean) and, for
///   `"covariance": "shared"`, the shared covariance with the paper's streaming rule
///   Σ ← (t·Σ + t/(t+1)·(z − μ_y)(z − μ_y)ᵀ)/(t + 1), t = samples seen before (eq. 3–4).
///   After the base experiences the statistics start from the frozen network's features of
///   those experiences' own training data, gathered as each ends; the backbone then no longer
///   changes, so they stay exact.
/// - Prediction: scores s_k = w_k·z + b_k over the classes seen so far, with
///   Λ = [(1 − ε)Σ + εI]⁻¹, w_k = Λμ_k, b_k = −½ μ_kᵀΛμ_k (eq. 5); `"covariance": "none"` is
///   Λ = I, the nearest class mean in Euclidean distance.
/// - After the base experiences no training step runs (the training set is emptied), so the
///   loop charges no training FLOPs; the feature passes are `extraFLOPsPerExperience`.
///
/// Single-head models only (the discriminant replaces the head). The classifier is linear in
/// the penultimate features, so `continual export` writes it as the output layer.
public struct StreamingLDA: PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options

    private var classes = 0
    private var width = 0
    /// Running class means [classes × width] and counts.
    private(set) var means: [Double] = []
    private(set) var counts: [Double] = []
    /// Shared covariance [width × width] and the samples it has seen.
    private(set) var covariance: [Double] = []
    private var seen = 0.0
    private var lastTrainCount = 0
    private var forwardFLOPs = 0

    public init(options: Options) { self.options = options }

    public var resources: PluginResources {
        let stats = means.count + counts.count + covariance.count
        return PluginResources(stateBytes: 8 * stats,
                               extraFLOPsPerExperience: lastTrainCount * (forwardFLOPs + (options.covariance == .shared ? 3 * width * width : 4 * width))
                                   + (options.covariance == .shared ? 2 * width * width * width + 2 * classes * width * width : 0))
    }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        guard model.routeCount == 1 else {
            throw TrainingError.invalidSetting(path: ".model.multi_head", message: "slda replaces the output head by a discriminant on the "
                + "penultimate features; this model has \(model.routeCount) heads (use one head)")
        }
        guard model.layers.count >= 2 else {
            throw TrainingError.invalidSetting(path: ".model.hidden", message: "slda classifies the last hidden layer's features; "
                + "model.hidden is empty")
        }
        guard !model.spec.isExtended else {
            throw TrainingError.invalid("slda needs a plain network (no adapters or LoRA blocks in the same list)")
        }
        classes = max(context.head.classCount, 2)
        width = model.layers[model.layers.count - 2].outputs
        means = [Double](repeating: 0, count: classes * width)
        counts = [Double](repeating: 0, count: classes)
        covariance = [Double](repeating: 0, count: options.covariance == .shared ? width * width : 0)
        seen = 0
        forwardFLOPs = model.flopsPerPrediction
        binaryHead = context.head.logitCount == 1
    }

    /// After the base experiences the backbone is frozen: nothing left to train.
    public mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        if context.index >= options.baseExperiences { samples = Samples(dimension: samples.dimension) }
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace ws: Workspace) throws {
        // The base experiences' statistics are gathered once the backbone is final.
        let last = options.baseExperiences - 1
        if context.index < last { lastTrainCount = 0; return }
        let sets = context.index == last ? Array(context.seen) : [context.experience]
        lastTrainCount = sets.reduce(0) { $0 + $1.train.count }
        for e in sets { update(with: Self.features(model: model, samples: e.train, workspace: ws), labels: e.train.labels) }
    }

    /// The streaming updates of eq. 3–4, one sample at a time in order.
    mutating func update(with features: [Float], labels: [Int32]) {
        let h = width
        var d = [Double](repeating: 0, count: h)
        for (r, label) in labels.enumerated() {
            let y = Int(label)
            guard y >= 0 && y < classes else { continue }
            for j in 0..<h { d[j] = Double(features[r * h + j]) - means[y * h + j] }
            if options.covariance == .shared {
                let t = seen
                for a in 0..<h {
                    for b in 0..<h {
                        // d[a]·d[b] first, so that Σ stays exactly symmetric.
                        covariance[a * h + b] = (t * covariance[a * h + b] + t / (t + 1) * (d[a] * d[b])) / (t + 1)
                    }
                }
            }
            for j in 0..<h { means[y * h + j] += d[j] / (counts[y] + 1) }
            counts[y] += 1
            seen += 1
        }
    }

    /// Penultimate features of `samples` [count × width] through the (single-route) network.
    static func features(model: MLP, samples: Samples, workspace ws: Workspace) -> [Float] {
        let h = model.layers[model.layers.count - 2].outputs
        var out = [Float](repeating: 0, count: samples.count * h)
        let chunk = max(ws.capacity, 1)
        var start = 0
        samples.features.withUnsafeBufferPointer { xs in
            while start < samples.count {
                let m = min(chunk, samples.count - start)
                model.forward(xs.baseAddress! + start * samples.dimension, count: m, route: 0, workspace: ws)
                let z = ws.hiddenActivations(model.layers.count - 2)
                for i in 0..<(m * h) { out[start * h + i] = z[i] }
                start += m
            }
        }
        return out
    }

    /// The discriminant (w_k, b_k) of every class; classes without samples get b = −∞.
    public func discriminant() -> (weights: [Double], biases: [Double]) {
        let h = width
        var weights = [Double](repeating: 0, count: classes * h)
        var biases = [Double](repeating: -.infinity, count: classes)
        let lambda: ((ArraySlice<Double>) -> [Double])
        if options.covariance == .shared {
            var a = covariance.map { (1 - options.shrinkage) * $0 }
            for j in 0..<h { a[j * h + j] += options.shrinkage }
            let factor = Self.cholesky(a, h)
            lambda = { Self.solve(factor, h, Array($0)) }
        } else {
            lambda = { Array($0) }
        }
        for k in 0..<classes where counts[k] > 0 {
            let mu = means[(k * h)..<((k + 1) * h)]
            let w = lambda(mu)
            var quad = 0.0
            for j in 0..<h { quad += mu[mu.startIndex + j] * w[j] }
            weights.replaceSubrange((k * h)..<((k + 1) * h), with: w)
            biases[k] = -quad / 2
        }
        return (weights, biases)
    }

    /// Lower-triangular L with L·Lᵀ = a (a symmetric positive definite, h × h).
    static func cholesky(_ a: [Double], _ h: Int) -> [Double] {
        var l = [Double](repeating: 0, count: h * h)
        for i in 0..<h {
            for j in 0...i {
                var s = a[i * h + j]
                for k in 0..<j { s -= l[i * h + k] * l[j * h + k] }
                l[i * h + j] = i == j ? (s > 0 ? s.squareRoot() : 1e-300) : s / l[j * h + j]
            }
        }
        return l
    }

    /// x with L·Lᵀ·x = b.
    static func solve(_ l: [Double], _ h: Int, _ b: [Double]) -> [Double] {
        var y = b
        for i in 0..<h {
            for k in 0..<i { y[i] -= l[i * h + k] * y[k] }
            y[i] /= l[i * h + i]
        }
        for i in stride(from: h - 1, through: 0, by: -1) {
            for k in (i + 1)..<h { y[i] -= l[k * h + i] * y[k] }
            y[i] /= l[i * h + i]
        }
        return y
    }

    public mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int, workspace ws: Workspace) -> Predictions? {
        guard counts.contains(where: { $0 > 0 }) else { return nil }   // nothing learned yet: the network decides
        let (w, b) = discriminant()
        let h = width
        let z = Self.features(model: model, samples: samples, workspace: ws)
        let binary = model.spec.head.logitCount == 1
        var classesOut = [Int32](repeating: 0, count: samples.count)
        var scores = binary ? [Float](repeating: 0, count: samples.count) : nil
        for r in 0..<samples.count {
            var best = -Double.infinity, arg = 0
            var s = [Double](repeating: -.infinity, count: classes)
            for k in 0..<classes where b[k] > -.infinity {
                var v = b[k]
                for j in 0..<h { v += w[k * h + j] * Double(z[r * h + j]) }
                s[k] = v
                if v > best { best = v; arg = k }
            }
            classesOut[r] = Int32(arg)
            // Finite even when one class is unseen (its score is −∞), so AUROC stays defined.
            if binary { scores![r] = Float(max(min(s[1] - s[0], 1e30), -1e30)) }
        }
        return Predictions(classes: classesOut, scores: scores)
    }

    /// The output layer that computes the discriminant (for export): weights [width × logits],
    /// biases [logits]; a binary head gets s₁ − s₀. Unseen classes get a bias of −1e30.
    public func outputLayer() -> [Double] {
        let (w, b) = discriminant()
        let h = width
        let finite = b.map { $0.isFinite ? $0 : -1e30 }
        if binaryHead {
            return (0..<h).map { w[h + $0] - w[$0] } + [finite[1] - finite[0]]
        }
        var layer = [Double](repeating: 0, count: h * classes + classes)
        for j in 0..<h { for k in 0..<classes { layer[j * classes + k] = w[k * h + j] } }
        for k in 0..<classes { layer[h * classes + k] = finite[k] }
        return layer
    }
    private var binaryHead = false

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "covariance": .string(options.covariance.rawValue), "shrinkage": .double(options.shrinkage),
            "base_experiences": .int(Int64(options.baseExperiences)), "samples_seen": .int(Int64(seen)),
        ], arrays: [
            "class_counts": PluginReport.Array(values: counts),
            "output_layer": PluginReport.Array(values: outputLayer(), attributes: [
                "meaning": .string("the discriminant as the output layer: weights [width × logits] row-major, then biases [logits]")]),
        ])
    }

    public func checkpointState() -> PluginState {
        PluginState(doubles: ["means": means, "counts": counts, "covariance": covariance, "seen": [seen]],
                    ints: ["last_train_count": [Int64(lastTrainCount)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let m = state.doubles["means"], m.count == means.count, let c = state.doubles["counts"], c.count == counts.count,
              let s = state.doubles["covariance"], s.count == covariance.count else {
            throw CheckpointError.mismatch("slda: the checkpoint's statistics do not match this model")
        }
        means = m
        counts = c
        covariance = s
        seen = state.doubles["seen"]?.first ?? 0
        lastTrainCount = Int(state.ints["last_train_count"]?.first ?? 0)
    }

    /// `{"type": "slda", "covariance": "shared", "shrinkage": 1e-4, "base_experiences": 1}`
    public struct Options: PluginOptions {
        public static let typeName = "slda"
        public static let summary = "deep streaming LDA (Hayes & Kanan 2020) or nearest class mean on a backbone frozen after the base experiences"
        public enum Covariance: String, Codable, Sendable, CaseIterable {
            /// One covariance shared by all classes (SLDA).
            case shared
            /// The identity: nearest class mean.
            case none
        }
        public var covariance = Covariance.shared
        /// ε in [(1 − ε)Σ + εI]⁻¹ (Hayes & Kanan: 1e-4).
        public var shrinkage = 1e-4
        /// Experiences the backbone trains on before it is frozen.
        public var baseExperiences = 1

        public init() {}

        enum CodingKeys: String, CodingKey, CaseIterable {
            case covariance, shrinkage, baseExperiences = "base_experiences"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            covariance = try c.decodeChoice(.covariance, default: .shared)
            shrinkage = try c.decode(.shrinkage, default: 1e-4)
            baseExperiences = try c.decode(.baseExperiences, default: 1)
            try c.require(shrinkage > 0 && shrinkage <= 1, .shrinkage, "must be in (0, 1], got \(shrinkage)")
            try c.require(baseExperiences >= 1, .baseExperiences, "must be ≥ 1, got \(baseExperiences)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(covariance, forKey: .covariance)
            try c.encode(shrinkage, forKey: .shrinkage)
            try c.encode(baseExperiences, forKey: .baseExperiences)
        }

        /// The discriminant is linear in the penultimate features: exported as the output layer.
        public var predictionExport: PredictionExport { .replacedOutputLayer(reportArray: "output_layer") }
        public func makePlugin() -> any StrategyPlugin { StreamingLDA(options: self) }
    }
}
