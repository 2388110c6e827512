import ContinualCore

/// Riemannian Walk (Chaudhry, Dokania, Ajanthan & Torr, ECCV 2018, "Riemannian Walk for
/// Incremental Learning"): an EWC-style quadratic penalty whose per-parameter weight adds an
/// online Fisher (EWC++) and a path-integral score normalised by the loss-weighted distance.
///
/// Per optimizer step t, with g(t) the gradient of the data loss alone at θ(t)
/// (`StepObservation.taskGradient`, no penalty) and Δθ(t) = θ(t+1) − θ(t) the applied update:
///
///     EWC++ (Eq. 6):  F ← α g(t)² + (1 − α) F          (F = g(t)² at the run's first step)
///     loss change:    ΔL_i += −g_i(t) Δθ_i(t)            (first-order Taylor term of Eq. 7)
///
/// and every `score_interval` (Δt) steps, at the interval [t₁, t₂] that ends,
///
///     s_i += ΔL_i / (½ F_i (θ_i(t₂) − θ_i(t₁))² + ε),   ΔL ← 0              (Eq. 7)
///
/// the denominator being the distance moved in the Riemannian (Fisher) metric, i.e. the KL
/// divergence the step caused, so s is the loss decrease per unit of "distance walked". After
/// experience k the experience's score is averaged into the running one, s ← ½ (s + s_k)
/// (s ← s_1 after the first), the anchor becomes θ* = θ(end), and while training later
/// experiences the loss gains (Eq. 8)
///
///     λ Σ_i (F̂_i + ŝ_i) (θ_i − θ*_i)²,   F̂ = F / max F,   ŝ = max(s, 0) / max(s)
///
/// with gradient 2λ (F̂ + ŝ)(θ − θ*). The normalisation to [0, 1] is the paper's suggestion
/// (`normalize: false` keeps the raw F + max(s, 0)); negative scores (parameters the noise moved
/// uphill) are clipped at 0 as in Avalanche's `RWalkPlugin`.
///
/// Choices the paper leaves open, as in Avalanche unless said otherwise: F is the squared
/// mini-batch gradient (empirical Fisher) updated every step; Δt = 10 steps and ε = 2⁻²³
/// (`score_interval`, `epsilon`); intervals are counted within each experience and the last,
/// shorter one is closed at the experience's end (Avalanche counts over the whole run and carries
/// the open interval into the next experience); F is never reset between experiences.
public struct RWalk: ParameterPenalty, StepObserver {
    public var name: String { Options.typeName }
    public let options: Options

    /// Running EWC++ Fisher F (over every step so far).
    public private(set) var fisher: [Double] = []
    /// Running score s over finished experiences (½-averaged).
    public private(set) var score: [Double] = []
    /// Score of the experience in training (sum over its closed intervals).
    public private(set) var experienceScore: [Double] = []
    /// First-order loss change ΔL of the open interval.
    private var intervalLoss: [Double] = []
    /// θ at the start of the open interval.
    private var intervalStart: [Float] = []
    private var stepsInInterval = 0
    /// F̂ + ŝ used by the penalty, and the anchor θ*.
    public private(set) var penaltyWeights: [Float] = []
    public private(set) var anchor: [Float] = []
    private var steps = 0
    private var finished = 0

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        let n = model.parameterCount
        (fisher, score, experienceScore, intervalLoss) = ([], [], [], [])
        grow(to: n)
        (penaltyWeights, anchor, intervalStart) = ([], [], model.parameters)
        (stepsInInterval, steps, finished) = (0, 0, 0)
    }

    /// Opens the experience's first interval at the current parameters.
    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        grow(to: model.parameterCount)
        experienceScore = [Double](repeating: 0, count: model.parameterCount)
        intervalLoss = [Double](repeating: 0, count: model.parameterCount)
        intervalStart = model.parameters
        stepsInInterval = 0
    }

    /// Zero-extends the per-parameter vectors when the model grew (new parameters start unimportant).
    private mutating func grow(to n: Int) {
        func pad(_ v: inout [Double]) { if v.count < n { v += repeatElement(0, count: n - v.count) } }
        pad(&fisher)
        pad(&score)
        pad(&experienceScore)
        pad(&intervalLoss)
    }

    /// EWC++ update with g², the interval's loss change, and the interval's score when it ends.
    public mutating func afterStep(_ step: StepObservation) {
        let g = step.taskGradient
        let n = min(fisher.count, intervalLoss.count, g.count, step.parametersAfter.count)
        let alpha = options.alpha, first = steps == 0
        for i in 0..<n {
            let gi = Double(g[i])
            fisher[i] = first ? gi * gi : alpha * gi * gi + (1 - alpha) * fisher[i]
            intervalLoss[i] -= gi * (Double(step.parametersAfter[i]) - Double(step.parametersBefore[i]))
        }
        steps += 1
        stepsInInterval += 1
        if stepsInInterval == options.scoreInterval { closeInterval(at: step.parametersAfter) }
    }

    /// s_i += ΔL_i / (½ F_i (θ_i − θ_i(t₁))² + ε); opens the next interval at θ.
    private mutating func closeInterval(at theta: UnsafeBufferPointer<Float>) {
        let n = min(experienceScore.count, intervalLoss.count, intervalStart.count, theta.count, fisher.count)
        for i in 0..<n {
            let d = Double(theta[i]) - Double(intervalStart[i])
            experienceScore[i] += intervalLoss[i] / (0.5 * fisher[i] * d * d + options.epsilon)
            intervalLoss[i] = 0
        }
        intervalStart = Array(theta)
        stepsInInterval = 0
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        finishExperience(parameters: model.parameters)
    }

    /// Closes the open interval, averages the experience's score in, and rebuilds F̂ + ŝ and θ*
    /// (callable directly from tests).
    public mutating func finishExperience(parameters: [Float]) {
        grow(to: parameters.count)
        if stepsInInterval > 0 { parameters.withUnsafeBufferPointer { closeInterval(at: $0) } }
        for i in 0..<min(score.count, experienceScore.count) {
            score[i] = finished == 0 ? experienceScore[i] : 0.5 * (score[i] + experienceScore[i])
        }
        let maxF = options.normalize ? (fisher.max() ?? 0) : 1
        let maxS = options.normalize ? (score.max() ?? 0) : 1
        penaltyWeights = (0..<parameters.count).map { i in
            let f = maxF > 0 ? fisher[i] / maxF : 0
            let s = maxS > 0 ? max(score[i], 0) / maxS : 0
            return Float(f + s)
        }
        anchor = parameters
        experienceScore = [Double](repeating: 0, count: parameters.count)
        intervalLoss = [Double](repeating: 0, count: parameters.count)
        intervalStart = parameters
        stepsInInterval = 0
        finished += 1
    }

    /// Adds 2λ (F̂ + ŝ)(θ − θ*) into `gradient`; returns λ Σ (F̂ + ŝ)(θ − θ*)².
    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                                    gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        // λ = 0 leaves the gradient untouched, so the run is bit-identical to naive.
        guard options.lambda > 0, !anchor.isEmpty else { return 0 }
        let n = min(anchor.count, penaltyWeights.count, parameters.count)
        guard n > 0 else { return 0 }
        let sum = penaltyWeights.withUnsafeBufferPointer { w in
            anchor.withUnsafeBufferPointer { a in
                Elementwise.quadraticPenalty(parameters: parameters.baseAddress!, anchor: a.baseAddress!,
                                             weights: w.baseAddress!, gradient: gradient.baseAddress!,
                                             scale: Float(2 * options.lambda), count: n)
            }
        }
        return options.lambda * sum
    }

    /// F, s, s_k, ΔL (Double); θ(t₁), F̂ + ŝ, θ* (Float). Per step: EWC++ and ΔL (6 FLOPs per
    /// parameter), the penalty (6), the interval's score amortised over Δt (6 / Δt ≈ 1).
    public var resources: PluginResources {
        PluginResources(stateBytes: 8 * (fisher.count + score.count + experienceScore.count + intervalLoss.count)
                            + 4 * (intervalStart.count + penaltyWeights.count + anchor.count),
                        extraFLOPsPerStep: 7 * fisher.count + (options.lambda > 0 ? 6 * anchor.count : 0),
                        extraFLOPsPerExperience: 8 * fisher.count)
    }

    public func checkpointState() -> PluginState {
        PluginState(floats: ["interval_start": intervalStart, "penalty_weights": penaltyWeights, "anchor": anchor],
                    doubles: ["fisher": fisher, "score": score, "experience_score": experienceScore,
                              "interval_loss": intervalLoss],
                    ints: ["counters": [Int64(stepsInInterval), Int64(steps), Int64(finished)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let start = state.floats["interval_start"], let w = state.floats["penalty_weights"],
              let a = state.floats["anchor"], let f = state.doubles["fisher"], let s = state.doubles["score"],
              let e = state.doubles["experience_score"], let l = state.doubles["interval_loss"],
              let c = state.ints["counters"], c.count == 3, c.allSatisfy({ $0 >= 0 }) else {
            throw CheckpointError.mismatch("rwalk state lacks one of interval_start, penalty_weights, anchor, fisher, "
                                           + "score, experience_score, interval_loss, counters")
        }
        (intervalStart, penaltyWeights, anchor, fisher, score, experienceScore, intervalLoss) = (start, w, a, f, s, e, l)
        (stepsInInterval, steps, finished) = (Int(c[0]), Int(c[1]), Int(c[2]))
    }

    /// Options, the penalty convention, and (small models) F̂ + ŝ, F, s and the anchor.
    public func report() -> PluginReport {
        var r = PluginReport()
        r.attributes["lambda"] = .double(options.lambda)
        r.attributes["alpha"] = .double(options.alpha)
        r.attributes["score_interval"] = .int(Int64(options.scoreInterval))
        r.attributes["epsilon"] = .double(options.epsilon)
        r.attributes["normalize"] = .int(options.normalize ? 1 : 0)
        r.attributes["penalty_convention"] = .string(options.normalize
            ? "lambda * sum_i (F_i/max F + relu(s_i)/max s) (theta_i - theta*_i)^2"
            : "lambda * sum_i (F_i + relu(s_i)) (theta_i - theta*_i)^2")
        r.attributes["experiences_finished"] = .int(Int64(finished))
        r.attributes["negative_score_count"] = .int(Int64(score.lazy.filter { $0 < 0 }.count))
        if options.saveImportance ?? (fisher.count < EWC.Options.importanceParameterLimit), !anchor.isEmpty {
            let meanings = [("importance", penaltyWeights.map(Double.init), "penalty weight F^ + s^ after the last experience (flat vector)"),
                            ("fisher", fisher, "EWC++ running Fisher F (moving average of squared task gradients)"),
                            ("score", score, "running RWalk score s (averaged over experiences, before clipping)"),
                            ("anchor", anchor.map(Double.init), "anchor parameters theta* (end of the last experience)")]
            for (key, values, meaning) in meanings {
                r.arrays[key] = .init(values: values, attributes: ["meaning": .string(meaning)])
            }
        }
        return r
    }
}

extension RWalk {
    /// `{"type": "rwalk", "lambda": 0.1, "alpha": 0.9, "score_interval": 10}`.
    public struct Options: PluginOptions {
        public static let typeName = "rwalk"
        public static let strengthKey: String? = "lambda"
        public static let summary = "Riemannian walk (Chaudhry 2018): EWC++ Fisher + normalised path-integral score"

        /// Penalty strength λ ≥ 0 (0 = naive); Avalanche's default.
        public var lambda: Double = 0.1
        /// EWC++ moving-average weight α of the newest squared gradient, in (0, 1].
        public var alpha: Double = 0.9
        /// Steps per score interval Δt.
        public var scoreInterval: Int = 10
        /// ε in the score's denominator (float32's machine epsilon, as Avalanche).
        public var epsilon: Double = Double(Float.ulpOfOne)
        /// Divide F and the clipped s by their maxima (the paper's suggestion).
        public var normalize: Bool = true
        /// Write F̂ + ŝ, F, s and the anchor; nil = only for models with < 100 000 parameters.
        public var saveImportance: Bool? = nil

        public init(lambda: Double = 0.1, alpha: Double = 0.9, scoreInterval: Int = 10,
                    epsilon: Double = Double(Float.ulpOfOne), normalize: Bool = true, saveImportance: Bool? = nil) {
            (self.lambda, self.alpha, self.scoreInterval) = (lambda, alpha, scoreInterval)
            (self.epsilon, self.normalize, self.saveImportance) = (epsilon, normalize, saveImportance)
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case lambda, alpha, epsilon, normalize
            case scoreInterval = "score_interval"
            case saveImportance = "save_importance"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            lambda = try c.decode(.lambda, default: 0.1)
            try c.require(lambda >= 0 && lambda.isFinite, .lambda, "lambda must be a finite number ≥ 0, got \(lambda)")
            alpha = try c.decode(.alpha, default: 0.9)
            try c.require(alpha > 0 && alpha <= 1, .alpha, "alpha must be in (0, 1], got \(alpha)")
            scoreInterval = try c.decode(.scoreInterval, default: 10)
            try c.require((1...1_000_000).contains(scoreInterval), .scoreInterval,
                          "score_interval must be in 1...1000000 steps, got \(scoreInterval)")
            epsilon = try c.decode(.epsilon, default: Double(Float.ulpOfOne))
            try c.require(epsilon > 0 && epsilon.isFinite, .epsilon, "epsilon must be a finite number > 0, got \(epsilon)")
            normalize = try c.decode(.normalize, default: true)
            saveImportance = try c.decodeBoolOrAuto(.saveImportance)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(lambda, forKey: .lambda)
            try c.encode(alpha, forKey: .alpha)
            try c.encode(scoreInterval, forKey: .scoreInterval)
            try c.encode(epsilon, forKey: .epsilon)
            try c.encode(normalize, forKey: .normalize)
            if let s = saveImportance { try c.encode(s, forKey: .saveImportance) } else { try c.encode("auto", forKey: .saveImportance) }
        }

        public func makePlugin() -> any StrategyPlugin { RWalk(options: self) }
    }
}
