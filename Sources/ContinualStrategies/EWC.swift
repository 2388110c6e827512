import ContinualCore

/// Elastic Weight Consolidation (Kirkpatrick et al. 2017) and online EWC (Schwarz et al. 2018).
///
/// After each experience the plugin estimates the diagonal Fisher information F at the current
/// parameters θ* from *per-sample* gradients of the log-likelihood on that experience's own
/// training set (never the replay-augmented set, never a batch-averaged gradient squared, except
/// with the `batched` estimator that exists for comparison with Avalanche). While later
/// experiences train it adds, with the default `half: true`,
///
///     separate:  (λ/2) Σ_k Σ_i F_k,i (θ_i − θ*_k,i)²       one (F_k, θ*_k) per past experience
///     online:    (λ/2) Σ_i F_i (θ_i − θ*_i)²,  F ← γ F + F_new, θ* ← latest parameters
///
/// to the loss, and its gradient λ F (θ − θ*) to the gradient (without the ½: λ Σ F (θ − θ*)²
/// and 2λ F (θ − θ*)). λ is therefore not portable between implementations without knowing the
/// convention: the report records it as `penalty_convention`.
///
/// Fisher estimators (for the log-likelihood log p(y|x, θ), with g_y = ∂(−log p(y|x))/∂θ):
/// - `exact`: F = mean_x Σ_y p(y|x) g_y²  — the expectation over all labels under the model's
///   own predictive distribution (y ∈ {0, 1} for the binary head), one backward pass per label.
/// - `sample`: F = mean_x g_ŷ², ŷ drawn from p(·|x) with the plugin's own `RandomSource`.
/// - `empirical`: F = mean_x g_y², y the true label.
/// - `batched`: F = mean_b (mean_{x∈b} g_y)² over mini-batches b of `fisher_batch_size` samples
///   with true labels (what Avalanche computes). Near a minimum the batch mean gradient is mostly
///   noise, so this is ≈ F_empirical / B: biased low by roughly 1/B.
///
/// Samples are passed through the route of the experience being consolidated (its own head on
/// multi-head models). Parameters added after an experience was consolidated (a model that grows
/// at its end) are not penalised by that experience's term.
public struct EWC: ParameterPenalty {
    public var name: String { Options.typeName }
    public let options: Options

    /// Consolidated terms: one per past experience (`separate`), at most one (`online`).
    public private(set) var terms: [Term] = []
    /// The Fisher estimate of the last consolidated experience alone (before merging with γ).
    public private(set) var lastFisher: [Double] = []
    private var rng = RandomSource(seed: 0)
    private var parameterCount = 0
    private var consolidated = 0
    /// FLOPs of the last Fisher pass (forward + backward per sample and label considered).
    private var fisherFLOPs = 0

    /// One quadratic penalty term: importance F and anchor θ* (same length as the parameters).
    public struct Term: Sendable, Equatable {
        public var fisher: [Float]
        public var anchor: [Float]
        public init(fisher: [Float], anchor: [Float]) {
            precondition(fisher.count == anchor.count, "Fisher and anchor lengths differ")
            self.fisher = fisher
            self.anchor = anchor
        }
    }

    public init(options: Options = Options()) {
        self.options = options
    }

    /// Checkpoint state: every term's Fisher and anchor, the last estimate, the Fisher stream's
    /// generator state and the counters (options come from the config).
    public func checkpointState() -> PluginState {
        var state = PluginState(doubles: ["last_fisher": lastFisher],
                                ints: ["rng": rng.state.map { Int64(bitPattern: $0) },
                                       "counters": [Int64(parameterCount), Int64(consolidated), Int64(terms.count)]])
        for (k, term) in terms.enumerated() {
            state.floats["fisher_\(k)"] = term.fisher
            state.floats["anchor_\(k)"] = term.anchor
        }
        return state
    }

    public mutating func restore(from state: PluginState) throws {
        guard let counters = state.ints["counters"], counters.count == 3, let rngState = state.ints["rng"], rngState.count == 4,
              let last = state.doubles["last_fisher"] else {
            throw CheckpointError.mismatch("EWC state lacks counters, rng or last_fisher")
        }
        guard counters[2] >= 0, counters[2] <= Int64(state.floats.count) else {
            throw CheckpointError.mismatch("EWC state has \(counters[2]) terms")
        }
        var restored: [Term] = []
        for k in 0..<Int(counters[2]) {
            guard let f = state.floats["fisher_\(k)"], let a = state.floats["anchor_\(k)"], f.count == a.count else {
                throw CheckpointError.mismatch("EWC term \(k) missing or inconsistent")
            }
            restored.append(Term(fisher: f, anchor: a))
        }
        terms = restored
        lastFisher = last
        rng = RandomSource(state: rngState.map { UInt64(bitPattern: $0) })
        parameterCount = Int(counters[0])
        consolidated = Int(counters[1])
    }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        rng = context.randomSource("fisher")
        parameterCount = model.parameterCount
        terms = []
        lastFisher = []
        consolidated = 0
    }

    /// Estimates F on the experience's own training set and adds (or merges) its penalty term.
    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        parameterCount = model.parameterCount
        var samples = context.experience.train
        if let n = options.fisherSamples, n < samples.count {
            samples = samples.subset(EWC.randomSubset(count: n, of: samples.count, rng: &rng))
        }
        let fisher = EWC.fisherDiagonal(model: model, samples: samples, route: Int(context.route),
                                        estimator: options.fisher, batchSize: options.fisherBatchSize,
                                        rng: &rng, workspace: workspace)
        consolidate(fisher: fisher, anchor: model.parameters)
        let passes: Int
        switch options.fisher {
        case .exact: passes = max(model.spec.head.classCount, 1)
        case .sample, .empirical, .batched: passes = 1
        }
        fisherFLOPs = samples.count * passes * model.flopsPerTrainingSample
    }

    /// Fisher and anchor per term; per step ≈ 6 FLOPs per penalised parameter and term
    /// (difference, weight, gradient multiply-add, value multiply-add); per experience the Fisher
    /// pass (forward + backward per sample and label considered).
    public var resources: PluginResources {
        let stored = terms.reduce(0) { $0 + $1.fisher.count + $1.anchor.count }
        return PluginResources(stateBytes: 4 * stored + 8 * lastFisher.count,
                               extraFLOPsPerStep: 6 * terms.reduce(0) { $0 + $1.fisher.count },
                               extraFLOPsPerExperience: fisherFLOPs)
    }

    /// Adds one experience's estimate `fisher` at `anchor` according to `mode` (exposed for tests).
    public mutating func consolidate(fisher: [Double], anchor: [Float]) {
        precondition(fisher.count == anchor.count, "Fisher and anchor lengths differ")
        lastFisher = fisher
        consolidated += 1
        let f = fisher.map { Float($0) }
        switch options.mode {
        case .separate:
            terms.append(Term(fisher: f, anchor: anchor))
        case .online:
            if var old = terms.first {
                let gamma = Float(options.gamma)
                var merged = f
                for i in 0..<min(merged.count, old.fisher.count) { merged[i] = gamma * old.fisher[i] + f[i] }
                old.fisher = merged
                old.anchor = anchor
                terms = [old]
            } else {
                terms = [Term(fisher: f, anchor: anchor)]
            }
        }
    }

    /// Adds λ F (θ − θ*) (2λ without the ½) per term into `gradient`; returns the penalty value.
    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                                    gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        // λ = 0 leaves the gradient untouched, so the run is bit-identical to naive.
        guard options.lambda > 0, !terms.isEmpty else { return 0 }
        let valueScale = options.half ? options.lambda / 2 : options.lambda
        let gradScale = Float(options.half ? options.lambda : 2 * options.lambda)
        var total = 0.0
        for term in terms {
            let n = min(term.fisher.count, parameters.count)
            term.fisher.withUnsafeBufferPointer { f in
                term.anchor.withUnsafeBufferPointer { a in
                    // Per i: d = θ − θ*; gradient += gradScale·F·d; sum += F·d·d (in order, float64).
                    guard n > 0 else { return }
                    total += Elementwise.quadraticPenalty(parameters: parameters.baseAddress!, anchor: a.baseAddress!,
                                                          weights: f.baseAddress!, gradient: gradient.baseAddress!,
                                                          scale: gradScale, count: n)
                }
            }
        }
        return valueScale * total
    }

    /// Options, the penalty convention, and (if enabled) the last Fisher vector and anchor.
    public func report() -> PluginReport {
        var r = PluginReport()
        r.attributes["lambda"] = .double(options.lambda)
        r.attributes["fisher"] = .string(options.fisher.rawValue)
        r.attributes["fisher_samples"] = options.fisherSamples.map { .int(Int64($0)) } ?? .string("all")
        r.attributes["fisher_batch_size"] = .int(Int64(options.fisherBatchSize))
        r.attributes["half"] = .int(options.half ? 1 : 0)
        r.attributes["mode"] = .string(options.mode.rawValue)
        r.attributes["gamma"] = .double(options.gamma)
        r.attributes["penalty_convention"] = .string(penaltyConvention)
        r.attributes["experiences_consolidated"] = .int(Int64(consolidated))
        // Memory the penalty keeps on the device (Fisher + anchor per term, float32): docs/on-device.md.
        if options.savesImportance(parameterCount: parameterCount), let last = terms.last {
            r.arrays["fisher"] = .init(values: lastFisher, attributes: [
                "meaning": .string("diagonal Fisher estimate (\(options.fisher.rawValue)) of the last consolidated experience, one value per parameter of the flat vector"),
            ])
            r.arrays["importance"] = .init(values: last.fisher.map(Double.init), attributes: [
                "meaning": .string(options.mode == .online
                    ? "running Fisher F = gamma*F + F_new used in the penalty after the last experience"
                    : "Fisher F_k of the last experience's penalty term"),
            ])
            r.arrays["anchor"] = .init(values: last.anchor.map(Double.init), attributes: [
                "meaning": .string("anchor parameters theta* of the last penalty term (flat vector)"),
            ])
        }
        return r
    }

    /// The penalty formula in words, as written to the results.
    public var penaltyConvention: String {
        let factor = options.half ? "(lambda/2)" : "lambda"
        switch options.mode {
        case .separate: return "\(factor) * sum_k sum_i F_k,i (theta_i - theta*_k,i)^2"
        case .online: return "\(factor) * sum_i F_i (theta_i - theta*_i)^2, F <- gamma F + F_new"
        }
    }

    // MARK: Fisher estimation

    /// The diagonal Fisher estimate of `model` on `samples` through `route`, in float64.
    ///
    /// Per-sample estimators run one sample at a time (forward once, backward once per label
    /// considered) and average the squared per-sample gradients; `batched` averages the squared
    /// mean gradients of consecutive mini-batches of `batchSize` (the last may be smaller).
    /// `labelRows`: the exact estimator takes every label of a sample back at once where the model
    /// allows (`exactFisherByLabelRows`, the same bits); false runs it one label at a time.
    public static func fisherDiagonal(model: MLP, samples: Samples, route: Int, estimator: Options.Estimator,
                                      batchSize: Int = 32, labelRows: Bool = true, rng: inout RandomSource,
                                      workspace ws: Workspace) -> [Double] {
        let p = model.parameterCount
        var fisher = [Double](repeating: 0, count: p)
        let n = samples.count
        guard n > 0 else { return fisher }
        if estimator == .exact && labelRows && model.supportsLabelSquares {
            fisher = exactFisherByLabelRows(model: model, samples: samples, route: route, workspace: ws)
            for i in 0..<p { fisher[i] /= Double(n) }
            return fisher
        }
        let head = model.spec.head
        let k = head.logitCount
        var g = [Float](repeating: 0, count: p)
        var dz = [Float](repeating: 0, count: max(k, 1) * max(batchSize, 1))
        var logits = [Float](repeating: 0, count: k)
        samples.features.withUnsafeBufferPointer { xs in
            samples.labels.withUnsafeBufferPointer { ys in
                g.withUnsafeMutableBufferPointer { g in
                    dz.withUnsafeMutableBufferPointer { dz in
                        if estimator == .batched {
                            let b = max(batchSize, 1)
                            var batches = 0
                            var start = 0
                            while start < n {
                                let m = min(b, n - start)
                                g.update(repeating: 0)
                                model.lossAndGradient(features: xs.baseAddress! + start * samples.dimension,
                                                      labels: ys.baseAddress! + start, count: m, route: route,
                                                      scale: 1 / Float(m), workspace: ws, gradient: g.baseAddress!)
                                // fisher[i] += g[i]² (weight 1: the same bits), eight lanes at a time.
                                fisher.withUnsafeMutableBufferPointer {
                                    Elementwise.accumulateSquares($0.baseAddress!, g.baseAddress!, weight: 1, count: p)
                                }
                                batches += 1
                                start += m
                            }
                            for i in 0..<p { fisher[i] /= Double(batches) }
                            return
                        }
                        for s in 0..<n {
                            model.forward(xs.baseAddress! + s * samples.dimension, count: 1, route: route, workspace: ws)
                            for j in 0..<k { logits[j] = ws.logits[j] }
                            let probs = logits.withUnsafeBufferPointer { Loss.probabilities(head: head, logits: $0.baseAddress!) }
                            var labelWeights: [(Int, Double)]
                            switch estimator {
                            case .exact: labelWeights = probs.enumerated().map { ($0.offset, $0.element) }
                            case .empirical: labelWeights = [(Int(ys[s]), 1)]
                            case .sample: labelWeights = [(sampleLabel(probs, rng: &rng), 1)]
                            case .batched: labelWeights = []
                            }
                            for (y, weight) in labelWeights where weight > 0 {
                                logitGradient(head: head, logits: logits, probabilities: probs, label: y,
                                              into: dz.baseAddress!)
                                g.update(repeating: 0)
                                model.backward(logitGradient: dz.baseAddress!, count: 1, route: route, workspace: ws,
                                               gradient: g.baseAddress!)
                                // fisher[i] += weight·g[i]·g[i], eight lanes at a time.
                                fisher.withUnsafeMutableBufferPointer {
                                    Elementwise.accumulateSquares($0.baseAddress!, g.baseAddress!, weight: weight, count: p)
                                }
                            }
                        }
                        for i in 0..<p { fisher[i] /= Double(n) }
                    }
                }
            }
        }
        return fisher
    }

    /// ∂(−log p(y|x))/∂z for one sample: σ(z) − y (binary), softmax(z) − onehot(y) (multiclass);
    /// the same values `Loss` produces with scale 1.
    static func logitGradient(head: OutputHead, logits: [Float], probabilities: [Double], label: Int,
                              into dz: UnsafeMutablePointer<Float>) {
        switch head {
        case .binary:
            dz[0] = Activation.sigmoid(logits[0]) - (label == 0 ? 0 : 1)
        case .multiclass(let k):
            for j in 0..<k { dz[j] = Float(probabilities[j]) - (j == label ? 1 : 0) }
        }
    }

    /// A label drawn from `probabilities` by inversion.
    static func sampleLabel(_ probabilities: [Double], rng: inout RandomSource) -> Int {
        let u = rng.uniform()
        var cumulative = 0.0
        for (j, p) in probabilities.enumerated() {
            cumulative += p
            if u < cumulative { return j }
        }
        return probabilities.count - 1
    }

    /// `count` distinct indices of `0..<total` in increasing order (partial Fisher–Yates).
    static func randomSubset(count: Int, of total: Int, rng: inout RandomSource) -> [Int] {
        var indices = Array(0..<total)
        for i in 0..<count {
            let j = i + rng.uniformInt(below: total - i)
            indices.swapAt(i, j)
        }
        return indices[0..<count].sorted()
    }
}
