import ContinualCore

/// Memory Aware Synapses (Aljundi et al., ECCV 2018): parameter importance from how much the
/// network's *outputs* move when a parameter moves, which needs no labels — on the phone most
/// data has none.
///
/// Importance after an experience, over its samples x (N of them):
///   Ω_i = (1/N) Σ_x | ∂‖F(x)‖²₂ / ∂θ_i |,   F(x) the logits (the output of the learned function),
/// computed sample by sample as in the paper (`estimator: "sample"`); `"batched"` takes the
/// gradient of the batch-mean squared norm and then its absolute value, as Avalanche does (cheaper,
/// and smaller where samples disagree in sign). Penalty while training later experiences:
///   λ Σ_i Ω_i (θ_i − θ*_i)²   (gradient 2λ Ω (θ − θ*)), θ* the parameters after the last experience.
///
/// Choices where implementations differ, each an option (defaults = the paper, eq. 2–4, and the
/// authors' code `MAS_utils/MAS_based_Training.py: compute_importance_l2`, which sums z² over the
/// logits and the batch with `MSELoss(size_average=False)` and keeps a running mean over samples):
/// - per-sample or batched gradients (`estimator`): the paper takes |∂‖F(x)‖²/∂θ| per sample;
///   Avalanche's `MASPlugin` and Hsu et al.'s `agents/regularization.py` take the absolute value of
///   a mini-batch gradient (signs cancel across samples: smaller Ω);
/// - `norm`: `"squared"` ‖F‖² (paper, authors, Hsu) or `"l2"` ‖F‖ (Avalanche and FACIL,
///   `torch.norm(out, dim=1).mean()`);
/// - `logits`: `"all"` outputs (paper, Avalanche) or the `"seen"` classes of a single multi-class
///   head (Hsu et al., `valid_out_dim` in class-incremental runs);
/// - `logit_reduction`: `"sum"` over the logits (paper, authors) or `"mean"` (Hsu et al.:
///   `pred.pow_(2).mean()`, i.e. ‖F‖² divided by the number of logits kept);
/// - accumulation over experiences: `"sum"` (the paper and the authors' code, and Hsu et al.:
///   importances add up) or `"decay"` (Avalanche: Ω ← α Ω_old + (1 − α) Ω_new, `alpha`);
/// - which inputs: the experience's training inputs with their labels ignored (`data: "train"`,
///   default) or its held-out test inputs (`"test"`: unlabelled data the model never trained on).
/// Samples pass through the experience's own route (its head on multi-head models). The penalty
/// is the paper's λ Σ Ω (θ − θ*)² (Hsu et al. the same; Avalanche halves it).
///
/// With Hsu et al.'s choices (batched over 128 samples, mean over the seen logits) Ω is smaller
/// than the paper's by at least the number of logits kept and by the sign cancellation of the
/// batch, so "MAS, λ = 1" is a much weaker regulariser there than here: docs/hsu-table.md.
public struct MemoryAwareSynapses: ParameterPenalty {
    public var name: String { Options.typeName }
    public let options: Options
    /// Accumulated importance Ω (one per parameter; empty before the first experience ends).
    public private(set) var importance: [Float] = []
    /// θ* — the parameters at the end of the last experience.
    public private(set) var anchor: [Float] = []
    private var rng = RandomSource(seed: 0)
    private var experiences = 0
    private var importanceFLOPs = 0

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        rng = context.randomSource("mas")
        importance = []
        anchor = []
        experiences = 0
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        var samples = options.data == .train ? context.experience.train : context.experience.test
        if let n = options.samples, n < samples.count {
            samples = samples.subset(EWC.randomSubset(count: n, of: samples.count, rng: &rng))
        }
        var kept: [Bool]? = nil
        if options.logits == .seen, model.routeCount == 1, case .multiclass(let k) = model.spec.head {
            var seen = [Bool](repeating: false, count: k)
            for e in context.seen { for y in e.train.labels where y >= 0 && Int(y) < k { seen[Int(y)] = true } }
            kept = seen
        }
        let fresh = MemoryAwareSynapses.importance(model: model, samples: samples, route: Int(context.route),
                                                   estimator: options.estimator, batchSize: options.batchSize,
                                                   workspace: workspace, norm: options.norm, logits: kept,
                                                   meanOverLogits: options.logitReduction == .mean)
        if importance.count < fresh.count { importance += [Float](repeating: 0, count: fresh.count - importance.count) }
        for i in fresh.indices {
            switch options.accumulate {
            case .sum: importance[i] += Float(fresh[i])
            case .decay: importance[i] = experiences == 0 ? Float(fresh[i]) : Float(options.alpha) * importance[i]
                + Float(1 - options.alpha) * Float(fresh[i])
            }
        }
        anchor = model.parameters
        experiences += 1
        importanceFLOPs = samples.count * model.flopsPerTrainingSample
    }

    /// Ω of one experience: the mean absolute gradient of ‖F(x)‖² (see the type's doc comment),
    /// or of ‖F(x)‖ (`norm: .l2`), over the logits `logits` marks (nil = all), divided by their
    /// number when `meanOverLogits`. Computed in float64 from float32 per-sample gradients.
    public static func importance(model: MLP, samples: Samples, route: Int, estimator: Options.Estimator,
                                  batchSize: Int, workspace ws: Workspace, norm: Options.Norm = .squared,
                                  logits kept: [Bool]? = nil, meanOverLogits: Bool = false) -> [Double] {
        let P = model.parameterCount, L = model.logitCount, d = samples.dimension
        var total = [Double](repeating: 0, count: P)
        guard !samples.isEmpty else { return total }
        var g = [Float](repeating: 0, count: P)
        let rows = estimator == .sample ? 1 : max(1, batchSize)
        ws.reserve(rows: rows)
        samples.features.withUnsafeBufferPointer { xs in
            var start = 0
            while start < samples.count {
                let m = min(rows, samples.count - start)
                model.forward(xs.baseAddress! + start * d, count: m, route: route, workspace: ws)
                // ∂(mean over the m rows of ‖z_S‖²)/∂z = 2z / m on the kept logits S (0 elsewhere);
                // ‖z_S‖: z / (m ‖z_S‖); with `meanOverLogits` also divided by |S|.
                let z = ws.logits
                let count = kept.map { $0.prefix(L).filter { $0 }.count } ?? L
                let perLogit: Float = meanOverLogits ? 1 / Float(max(count, 1)) : 1
                for r in 0..<m {
                    let row = z + r * L
                    var squares: Float = 0
                    for c in 0..<L where kept?[c] ?? true { squares += row[c] * row[c] }
                    let length = squares.squareRoot()
                    for c in 0..<L {
                        guard kept?[c] ?? true else { row[c] = 0; continue }
                        switch norm {
                        case .squared: row[c] = 2 * row[c] * perLogit / Float(m)
                        case .l2: row[c] = length > 0 ? row[c] / length * perLogit / Float(m) : 0
                        }
                    }
                }
                g.withUnsafeMutableBufferPointer { gp in
                    gp.update(repeating: 0)
                    model.backward(logitGradient: z, count: m, route: route, workspace: ws, gradient: gp.baseAddress!)
                }
                for i in 0..<P { total[i] += Double(abs(g[i])) * Double(m) }
                start += m
            }
        }
        let n = Double(samples.count)
        return total.map { $0 / n }
    }

    /// Adds 2λ Ω (θ − θ*) into `gradient`; returns λ Σ Ω (θ − θ*)².
    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                                    gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        guard options.lambda > 0, !anchor.isEmpty else { return 0 }
        return addWeightedPull(towards: anchor, weights: importance, strength: options.lambda, parameters: parameters, gradient: gradient)
    }

    /// Ω and θ* (float32 each); ≈ 6 FLOPs per parameter per step; per experience one forward and
    /// backward per importance sample.
    public var resources: PluginResources {
        PluginResources(stateBytes: 4 * (importance.count + anchor.count),
                        extraFLOPsPerStep: options.lambda > 0 ? 6 * anchor.count : 0,
                        extraFLOPsPerExperience: importanceFLOPs)
    }

    public func checkpointState() -> PluginState {
        PluginState(floats: ["importance": importance, "anchor": anchor],
                    ints: ["rng": rng.state.map { Int64(bitPattern: $0) },
                           "counters": [Int64(experiences), Int64(importanceFLOPs)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let i = state.floats["importance"], let a = state.floats["anchor"], let r = state.ints["rng"], r.count == 4,
              let c = state.ints["counters"], c.count == 2 else {
            throw CheckpointError.mismatch("mas state lacks importance, anchor, rng or counters")
        }
        importance = i
        anchor = a
        rng = RandomSource(state: r.map { UInt64(bitPattern: $0) })
        experiences = Int(c[0])
        importanceFLOPs = Int(c[1])
    }

    public func report() -> PluginReport {
        var r = PluginReport(attributes: [
            "lambda": .double(options.lambda), "estimator": .string(options.estimator.rawValue),
            "accumulate": .string(options.accumulate.rawValue), "alpha": .double(options.alpha),
            "data": .string(options.data.rawValue), "experiences_consolidated": .int(Int64(experiences)),
            "norm": .string(options.norm.rawValue), "logits": .string(options.logits.rawValue),
            "logit_reduction": .string(options.logitReduction.rawValue),
            "penalty_convention": .string("lambda * sum_i Omega_i (theta_i - theta*_i)^2, Omega = mean |d||F(x)||^2/dtheta|"),
        ])
        if importance.count < EWC.Options.importanceParameterLimit {
            r.arrays["importance"] = .init(values: importance.map(Double.init))
        }
        return r
    }
}

extension MemoryAwareSynapses {
    /// `{"type": "mas", "lambda": 1, "estimator": "sample", "accumulate": "sum", "alpha": 0.5,
    /// "data": "train", "samples": "all", "batch_size": 32}`.
    public struct Options: PluginOptions {
        public static let typeName = "mas"
        public static let summary = "memory aware synapses (Aljundi 2018): label-free importance from the output norm"
        public static let strengthKey: String? = "lambda"

        public enum Estimator: String, CaseIterable, Sendable, Codable { case sample, batched }
        public enum Accumulate: String, CaseIterable, Sendable, Codable { case sum, decay }
        public enum DataSource: String, CaseIterable, Sendable, Codable { case train, test }
        public enum Norm: String, CaseIterable, Sendable, Codable { case squared, l2 }
        public enum Logits: String, CaseIterable, Sendable, Codable { case all, seen }
        public enum LogitReduction: String, CaseIterable, Sendable, Codable { case sum, mean }

        /// Penalty strength λ ≥ 0 (0 = naive).
        public var lambda: Double = 1
        public var estimator: Estimator = .sample
        public var accumulate: Accumulate = .sum
        /// Weight of the old importance with `accumulate: "decay"` (Avalanche's default 0.5).
        public var alpha: Double = 0.5
        public var data: DataSource = .train
        /// Importance samples per experience (nil = all).
        public var samples: Int? = nil
        /// Rows per gradient with `estimator: "batched"`.
        public var batchSize: Int = 32
        /// ‖F‖² (paper) or ‖F‖ (Avalanche).
        public var norm: Norm = .squared
        /// Every logit (paper) or only the seen classes' (Hsu et al., single multi-class head).
        public var logits: Logits = .all
        /// Sum over the logits (paper) or mean (Hsu et al.).
        public var logitReduction: LogitReduction = .sum

        public init(lambda: Double = 1, estimator: Estimator = .sample, accumulate: Accumulate = .sum, alpha: Double = 0.5,
                    data: DataSource = .train, samples: Int? = nil, batchSize: Int = 32) {
            self.lambda = lambda
            self.estimator = estimator
            self.accumulate = accumulate
            self.alpha = alpha
            self.data = data
            self.samples = samples
            self.batchSize = batchSize
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case lambda, estimator, accumulate, alpha, data, samples
            case batchSize = "batch_size"
            case norm, logits, logitReduction = "logit_reduction"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            lambda = try c.decode(.lambda, default: 1.0)
            try c.require(lambda >= 0 && lambda.isFinite, .lambda, "lambda must be a finite number ≥ 0, got \(lambda)")
            estimator = try c.decodeChoice(.estimator, default: .sample)
            accumulate = try c.decodeChoice(.accumulate, default: .sum)
            alpha = try c.decode(.alpha, default: 0.5)
            try c.require((0...1).contains(alpha), .alpha, "alpha must be in 0...1, got \(alpha)")
            data = try c.decodeChoice(.data, default: .train)
            samples = try c.decodeCountOrAll(.samples)
            batchSize = try c.decode(.batchSize, default: 32)
            try c.require(batchSize >= 1 && batchSize <= 1_000_000, .batchSize, "batch_size must be in 1...1000000, got \(batchSize)")
            norm = try c.decodeChoice(.norm, default: .squared)
            logits = try c.decodeChoice(.logits, default: .all)
            logitReduction = try c.decodeChoice(.logitReduction, default: .sum)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(lambda, forKey: .lambda)
            try c.encode(estimator.rawValue, forKey: .estimator)
            try c.encode(accumulate.rawValue, forKey: .accumulate)
            try c.encode(alpha, forKey: .alpha)
            try c.encode(data.rawValue, forKey: .data)
            if let samples { try c.encode(samples, forKey: .samples) } else { try c.encode("all", forKey: .samples) }
            try c.encode(batchSize, forKey: .batchSize)
            // Written only when not the paper's, so existing MAS run ids do not change.
            if norm != .squared { try c.encode(norm.rawValue, forKey: .norm) }
            if logits != .all { try c.encode(logits.rawValue, forKey: .logits) }
            if logitReduction != .sum { try c.encode(logitReduction.rawValue, forKey: .logitReduction) }
        }

        public func makePlugin() -> any StrategyPlugin { MemoryAwareSynapses(options: self) }
    }
}
