import ContinualCore

/// iCaRL, incremental classifier and representation learning (Rebuffi, Kolesnikov, Sperl &
/// Lampert, CVPR 2017): herding exemplars, a sigmoid loss with distillation, and the
/// nearest-mean-of-exemplars classifier.
///
/// Following the paper:
/// - **Exemplars** (Alg. 4, 5): a memory of `capacity` samples, m = ⌊capacity / classes seen⌋ per
///   class. After each experience the sets of old classes are cut to their first m (herding order
///   makes every prefix a good set), and each new class gets m exemplars chosen by herding on the
///   L2-normalised features φ(x) (the penultimate layer; the inputs when the model has no hidden
///   layer) of that class's training samples, computed with the model just trained.
/// - **Training** (Alg. 3): on the experience's data ∪ every exemplar, each row's task loss is
///   replaced by Σ_c BCE(σ(z_c), t_c) over the classes seen so far, with t_c the previous model's
///   σ(z°_c) for classes of earlier experiences (distillation) and 1[c = y] for the others
///   (classification); mean over the batch's rows. The term removes the loop's softmax share from
///   the logit gradient and adds its own, so other terms compose.
/// - **Classifier** (Alg. 1): the class whose exemplar mean μ_y = normalise(mean φ(p)) is nearest
///   to normalise(φ(x)). `"classifier": "logits"` uses the network's own argmax instead, for
///   comparison (recorded in the results).
///
/// Choices: no data augmentation (the paper's flipped images); outputs beyond the classes seen
/// so far get no loss (the paper grows its output layer); multi-class single-head models only
/// (refused in `prepare` otherwise).
public struct ICaRL: BatchLossTerm, PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options
    /// Exemplars per class, in herding order: features [n × dimension].
    private var exemplars: [[Float]] = []
    private var dimension = 0
    /// Classes met in experiences before the current one, and through the current one.
    private var old: [Bool] = []
    private var known: [Bool] = []
    private var previous: MLP?
    private var template: MLP?
    private var means: [[Float]] = []
    private var previousForward = RowsForward()
    private var batchSize = 1

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        let k = try ExemplarSets.classCount(method: "icarl", head: context.head, model: model)
        dimension = context.dimension
        exemplars = Array(repeating: [], count: k)
        old = Array(repeating: false, count: k)
        known = old
        means = Array(repeating: [], count: k)
        previous = nil
        template = model
        batchSize = context.training.batchSize
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        old = known
        for y in context.experience.train.labels where y >= 0 && Int(y) < known.count { known[Int(y)] = true }
    }

    public mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        ExemplarSets.append(exemplars, to: &samples, dimension: dimension, route: context.route)
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        let L = input.logitCount, n = input.rows.count
        guard n > 0 else { return 0 }
        var oldLogits: UnsafeMutablePointer<Float>? = nil
        if let prev = previous, old.contains(true) { oldLogits = previousForward.logits(prev, input, batchSize: batchSize) }
        let scale = Double(input.scale)
        var value = 0.0
        for (k, row) in input.rows.enumerated() {
            let label = Int(input.batch.labels[row])
            guard label >= 0, label < max(L, 2) else { continue }
            let z = input.logits + k * L, g = input.logitGradient + k * L
            let loop = RowLoss.loopCrossEntropy(z, L: L, label: label, active: input.activeClasses)
            let loopGrad = RowLoss.ceGradient(loop.p, label: label)
            var bce = 0.0
            for c in 0..<L {
                var grad = -loopGrad[c]
                if known[c] {
                    let x = Double(z[c])
                    let t = old[c] && oldLogits != nil ? Self.sigmoid(Double(oldLogits![k * L + c])) : (c == label ? 1 : 0)
                    // BCE(σ(x), t) = max(x, 0) − t·x + log(1 + e^{−|x|}); ∂/∂x = σ(x) − t.
                    bce += max(x, 0) - t * x + _log1p(_exp(-abs(x)))
                    grad += Self.sigmoid(x) - t
                }
                g[c] += Float(scale * grad)
            }
            value += scale * (bce - loop.loss)
        }
        return value
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace ws: Workspace) throws {
        let classes = known.lazy.filter { $0 }.count
        let m = classes == 0 ? 0 : options.capacity / classes
        for y in exemplars.indices where old[y] { exemplars[y] = Array(exemplars[y].prefix(m * dimension)) }
        let own = context.experience.train
        let (phi, width) = Self.features(model: model, samples: own, route: Int(context.route), workspace: ws)
        for y in exemplars.indices where known[y] && !old[y] {
            let members = own.labels.indices.filter { own.labels[$0] == Int32(y) }
            let picks = HerdingPolicy.herd(phi, dimension: width, members: members, count: m)
            var set: [Float] = []
            set.reserveCapacity(picks.count * dimension)
            for i in picks { set.append(contentsOf: own.row(i)) }
            exemplars[y] = set
        }
        previous = model
        // Class means with the model that will be evaluated.
        for y in exemplars.indices {
            guard !exemplars[y].isEmpty else { means[y] = []; continue }
            let set = Samples(dimension: dimension, features: exemplars[y],
                              labels: Array(repeating: Int32(y), count: exemplars[y].count / dimension))
            let (f, w) = Self.features(model: model, samples: set, route: Int(context.route), workspace: ws)
            var mean = [Double](repeating: 0, count: w)
            for r in 0..<set.count { for j in 0..<w { mean[j] += Double(f[r * w + j]) } }
            means[y] = Self.normalised(mean.map { $0 / Double(set.count) }).map { Float($0) }
        }
    }

    public mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int, workspace: Workspace) -> Predictions? {
        guard options.classifier == .nme, means.contains(where: { !$0.isEmpty }) else { return nil }
        let (f, w) = Self.features(model: model, samples: samples, route: 0, workspace: workspace)
        // Multi-class heads only (prepare refuses binary ones), so there is no positive-class score.
        let classes = (0..<samples.count).map { r in
            var best = Int32(0), bestDistance = Double.infinity
            for (y, mu) in means.enumerated() where !mu.isEmpty {
                // φ(x) is unit length, so the nearest mean maximises ⟨φ(x), μ_y⟩ − ‖μ_y‖²/2; compute
                // the distance itself to state the rule plainly.
                var d = 0.0
                for j in 0..<w { let t = Double(f[r * w + j]) - Double(mu[j]); d += t * t }
                if d < bestDistance { bestDistance = d; best = Int32(y) }
            }
            return best
        }
        return Predictions(classes: classes)
    }

    /// L2-normalised φ(x) for every sample: the penultimate layer's activations, or the inputs
    /// when the model has no hidden layer. A zero vector stays zero.
    static func features(model: MLP, samples: Samples, route: Int, workspace ws: Workspace) -> ([Float], Int) {
        let raw: [Float], width: Int
        if model.layers.count < 2 {
            (raw, width) = (samples.features, samples.dimension)
        } else {
            (raw, width) = Replay.penultimate(model: model, samples: samples, route: route, workspace: ws)
        }
        var out = raw
        for r in 0..<samples.count {
            var s = 0.0
            for j in 0..<width { s += Double(raw[r * width + j]) * Double(raw[r * width + j]) }
            let inv = s > 0 ? 1 / s.squareRoot() : 0
            for j in 0..<width { out[r * width + j] = Float(Double(raw[r * width + j]) * inv) }
        }
        return (out, width)
    }

    static func normalised(_ v: [Double]) -> [Double] {
        let s = v.reduce(0) { $0 + $1 * $1 }
        return s > 0 ? v.map { $0 / s.squareRoot() } : v
    }

    @inline(__always) static func sigmoid(_ x: Double) -> Double { x >= 0 ? 1 / (1 + _exp(-x)) : _exp(x) / (1 + _exp(x)) }

    /// The exemplar sets (class → features in herding order), for tests and reports.
    public var exemplarSets: [[Float]] { exemplars }
    /// The class means the classifier uses (empty for classes without exemplars).
    public var classMeans: [[Float]] { means }

    public var resources: PluginResources {
        let stored = exemplars.reduce(0) { $0 + $1.count } * 4 + exemplars.reduce(0) { $0 + $1.count / max(dimension, 1) } * 4
        let meanBytes = means.reduce(0) { $0 + $1.count } * 4
        guard let prev = previous else { return PluginResources(storedSampleBytes: stored, stateBytes: meanBytes) }
        return PluginResources(storedSampleBytes: stored, stateBytes: 4 * prev.parameterCount + meanBytes,
                               extraFLOPsPerStep: batchSize * (prev.flopsPerPrediction + 10 * prev.logitCount))
    }

    public func checkpointState() -> PluginState {
        var s = PluginState(floats: ["means": means.flatMap { $0 }],
                            ints: ["old": old.map { $0 ? 1 : 0 }, "known": known.map { $0 ? 1 : 0 },
                                   "exemplar_counts": exemplars.map { Int64($0.count / max(dimension, 1)) },
                                   "mean_widths": means.map { Int64($0.count) }])
        s.floats["exemplars"] = exemplars.flatMap { $0 }
        if let prev = previous { s.floats["previous_parameters"] = prev.parameters }
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        let k = exemplars.count
        guard let o = state.ints["old"], let kn = state.ints["known"], let counts = state.ints["exemplar_counts"],
              let widths = state.ints["mean_widths"], let flat = state.floats["exemplars"], let mu = state.floats["means"],
              o.count == k, kn.count == k, counts.count == k, widths.count == k,
              counts.allSatisfy({ $0 >= 0 && $0 <= Int64(options.capacity) }), widths.allSatisfy({ $0 >= 0 && $0 <= 1 << 20 }),
              flat.count == Int(counts.reduce(0, +)) * dimension, mu.count == Int(widths.reduce(0, +)) else {
            throw CheckpointError.mismatch("icarl state does not fit (\(k) classes, dimension \(dimension))")
        }
        old = o.map { $0 != 0 }
        known = kn.map { $0 != 0 }
        var at = 0
        for y in 0..<k { let n = Int(counts[y]) * dimension; exemplars[y] = Array(flat[at..<(at + n)]); at += n }
        at = 0
        for y in 0..<k { let n = Int(widths[y]); means[y] = Array(mu[at..<(at + n)]); at += n }
        previous = try state.previousModel(template: template, plugin: "icarl")
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "capacity": .int(Int64(options.capacity)), "classifier": .string(options.classifier.rawValue),
            "exemplars": .int(Int64(exemplars.reduce(0) { $0 + $1.count / max(dimension, 1) })),
            "loss": .string("sum over seen classes of BCE(sigmoid(z_c), t_c); t_c = previous model's sigmoid for old classes, one-hot otherwise; batch mean"),
            "not_reproduced": .string("data augmentation (flips)"),
        ])
    }

    /// `{"type": "icarl", "capacity": 200, "classifier": "nme"}`.
    public struct Options: PluginOptions {
        public static let typeName = "icarl"
        public static let summary = "iCaRL (Rebuffi 2017): herding exemplars, sigmoid distillation, nearest-mean classifier"
        public static let storesSamples = true
        public static let composition = PluginComposition.soleRehearsal
        /// Test-time classifier: nearest mean of exemplars (the paper) or the network's logits.
        public enum Classifier: String, Codable, Sendable, CaseIterable { case nme, logits }
        public var capacity = 200
        public var classifier = Classifier.nme

        enum Keys: String, CodingKey, CaseIterable { case capacity, classifier }

        public init() {}
        public init(capacity: Int, classifier: Classifier = .nme) {
            self.capacity = capacity
            self.classifier = classifier
        }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            capacity = try c.decode(.capacity, default: 200)
            try c.require((1...10_000_000).contains(capacity), .capacity, "capacity must be in 1...10000000, got \(capacity)")
            classifier = try c.decodeChoice(.classifier, default: .nme)
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(capacity, forKey: .capacity)
            try c.encode(classifier, forKey: .classifier)
        }
        public func makePlugin() -> any StrategyPlugin { ICaRL(options: self) }
        /// "nme" predicts by the nearest mean of exemplars (the exemplars' features are not in the
        /// network); "logits" predicts with the network itself.
        public var predictionExport: PredictionExport {
            classifier == .logits ? .network
                : .refused("icarl predicts by the nearest mean of its exemplars' features (\"classifier\": \"nme\"); the exported network's "
                    + "argmax is a different classifier and the class means are not stored with the run. Export a run with \"classifier\": \"logits\"")
        }

        /// The buffer of `capacity` samples (with room for stored logits).
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(Double(capacity) * shape.sampleBytes(logits: shape.outputs), key: Keys.capacity.path)])
        }
    }
}
