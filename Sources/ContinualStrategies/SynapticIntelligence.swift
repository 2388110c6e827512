import ContinualCore

/// Synaptic Intelligence (Zenke, Poole & Ganguli 2017): importance from each parameter's
/// contribution to the decrease of the task loss along the training trajectory.
///
/// During experience k, after every optimizer step, ω_i += −g_i · Δθ_i, where Δθ is the update
/// actually applied and g is the gradient of the *task loss alone* at the parameters before the
/// step (`StepObservation.taskGradient`, no penalty terms), as the paper defines the path
/// integral. At the end of the experience
///
///     Ω_i += ω_i / ((θ_i(end) − θ_i(start))² + ξ),   ω ← 0,   θ̃ ← θ(end)
///
/// and while training later experiences the penalty is c Σ_i Ω_i (θ_i − θ̃_i)² (gradient
/// 2c Ω (θ − θ̃)). Ω is not clipped (it can be slightly negative for parameters that noise moved
/// uphill; the report counts them).
///
/// `gradient: "total"` reproduces Avalanche's plugin instead: g is the gradient of the total loss
/// (task + all penalties) and the cumulative Ω is clipped from above at 0.001 (Avalanche calls
/// `clamp(max=0.001)` after every experience). Avalanche writes its penalty as (λ/2) Σ Ω (θ − θ̃)²,
/// so its `si_lambda` corresponds to 2c here.
public struct SynapticIntelligence: ParameterPenalty, StepObserver {
    public var name: String { Options.typeName }
    public let options: Options

    /// Running path integral ω of the current experience.
    public private(set) var omega: [Double] = []
    /// Accumulated (unclipped) importance Ω over finished experiences.
    public private(set) var importance: [Double] = []
    /// Importance used by the penalty (Ω, or min(Ω, 0.001) with `gradient: "total"`).
    public private(set) var penaltyWeights: [Float] = []
    /// Anchor θ̃: the parameters at the end of the last finished experience.
    public private(set) var anchor: [Float] = []
    private var start: [Float] = []
    private var finished = 0

    /// Upper clip of Ω in Avalanche's variant.
    public static let avalancheClip = 0.001

    public init(options: Options = Options()) {
        self.options = options
    }

    /// Checkpoint state: ω, Ω, the penalty weights, anchor and path start, and the counter.
    public func checkpointState() -> PluginState {
        PluginState(floats: ["penalty_weights": penaltyWeights, "anchor": anchor, "start": start],
                    doubles: ["omega": omega, "importance": importance], ints: ["finished": [Int64(finished)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let w = state.floats["penalty_weights"], let a = state.floats["anchor"], let s = state.floats["start"],
              let o = state.doubles["omega"], let i = state.doubles["importance"], let f = state.ints["finished"]?.first else {
            throw CheckpointError.mismatch("SI state lacks one of penalty_weights, anchor, start, omega, importance, finished")
        }
        (penaltyWeights, anchor, start, omega, importance, finished) = (w, a, s, o, i, Int(f))
    }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        importance = [Double](repeating: 0, count: model.parameterCount)
        penaltyWeights = []
        anchor = []
        finished = 0
    }

    /// Starts a new path integral at the current parameters.
    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        start = model.parameters
        omega = [Double](repeating: 0, count: model.parameterCount)
        if importance.count < model.parameterCount {
            importance.append(contentsOf: repeatElement(0, count: model.parameterCount - importance.count))
        }
    }

    /// ω, Ω (Double), penalty weights, anchor and start (Float); per step the path integral
    /// (3 FLOPs per parameter) and the penalty (6); per experience Ω's update (5 per parameter).
    public var resources: PluginResources {
        PluginResources(stateBytes: 8 * (omega.count + importance.count) + 4 * (penaltyWeights.count + anchor.count + start.count),
                        extraFLOPsPerStep: 3 * omega.count + (options.c > 0 ? 6 * anchor.count : 0),
                        extraFLOPsPerExperience: 5 * omega.count)
    }

    /// ω += −g · (θ_after − θ_before), g the task (or, optionally, total) gradient.
    public mutating func afterStep(_ step: StepObservation) {
        let g = options.gradient == .task ? step.taskGradient : step.totalGradient
        let n = min(omega.count, g.count)
        omega.withUnsafeMutableBufferPointer { w in
            for i in 0..<n {
                let delta = Double(step.parametersAfter[i]) - Double(step.parametersBefore[i])
                w[i] -= Double(g[i]) * delta
            }
        }
    }

    /// Ω += ω / (Δ² + ξ), anchor ← θ(end).
    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        finishExperience(parameters: model.parameters)
    }

    /// The end-of-experience update, callable directly from tests.
    public mutating func finishExperience(parameters: [Float]) {
        let n = min(omega.count, parameters.count, start.count)
        for i in 0..<n {
            let delta = Double(parameters[i]) - Double(start[i])
            importance[i] += omega[i] / (delta * delta + options.xi)
        }
        penaltyWeights = importance.map { omegaValue in
            options.gradient == .total ? Float(min(omegaValue, SynapticIntelligence.avalancheClip)) : Float(omegaValue)
        }
        anchor = parameters
        omega = [Double](repeating: 0, count: omega.count)
        finished += 1
    }

    /// Adds 2c Ω (θ − θ̃) into `gradient`; returns c Σ Ω (θ − θ̃)².
    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                                    gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        // c = 0 leaves the gradient untouched, so the run is bit-identical to naive.
        guard options.c > 0, !anchor.isEmpty else { return 0 }
        return addWeightedPull(towards: anchor, weights: penaltyWeights, strength: options.c, parameters: parameters, gradient: gradient)
    }

    /// Options, the convention, and (if enabled) Ω and the anchor.
    public func report() -> PluginReport {
        var r = PluginReport()
        r.attributes["c"] = .double(options.c)
        r.attributes["xi"] = .double(options.xi)
        r.attributes["gradient"] = .string(options.gradient.rawValue)
        r.attributes["penalty_convention"] = .string(options.gradient == .total
            ? "c * sum_i min(Omega_i, 0.001) (theta_i - theta~_i)^2 (Avalanche: si_lambda = 2c)"
            : "c * sum_i Omega_i (theta_i - theta~_i)^2")
        r.attributes["experiences_finished"] = .int(Int64(finished))
        r.attributes["negative_omega_count"] = .int(Int64(importance.lazy.filter { $0 < 0 }.count))
        if options.savesImportance(parameterCount: importance.count), !anchor.isEmpty {
            r.arrays["importance"] = .init(values: penaltyWeights.map(Double.init), attributes: [
                "meaning": .string("SI importance Omega used by the penalty after the last experience (flat vector)"),
            ])
            r.arrays["anchor"] = .init(values: anchor.map(Double.init), attributes: [
                "meaning": .string("anchor parameters theta~ (end of the last experience, flat vector)"),
            ])
        }
        return r
    }
}

extension SynapticIntelligence {
    /// `{"type": "si", "c": 1, "xi": 0.1, "gradient": "task"}`.
    public struct Options: PluginOptions {
        public static let typeName = "si"
        public static let strengthKey: String? = "c"
        public static let summary = "synaptic intelligence (Zenke 2017): path-integral importance"

        /// Which gradient enters ω: the task loss's (the paper) or the total loss's (Avalanche).
        public enum GradientSource: String, CaseIterable, Sendable, Codable { case task, total }

        /// Penalty strength c ≥ 0 (0 = naive).
        public var c: Double = Options.defaultC
        /// Damping ξ > 0 in Ω += ω / (Δ² + ξ).
        public var xi: Double = Options.defaultXi
        public var gradient: GradientSource = .task
        /// Write Ω and the anchor; nil = only for models with < 100 000 parameters.
        public var saveImportance: Bool? = nil

        /// c used when the JSON gives none (chosen on the habit drift scenario, see docs/strategies.md).
        public static let defaultC = 1.0
        public static let defaultXi = 0.1

        public init(c: Double = Options.defaultC, xi: Double = Options.defaultXi, gradient: GradientSource = .task,
                    saveImportance: Bool? = nil) {
            self.c = c
            self.xi = xi
            self.gradient = gradient
            self.saveImportance = saveImportance
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case c, xi, gradient
            case saveImportance = "save_importance"
        }

        public init(from decoder: any Decoder) throws {
            let k = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            c = try k.decode(.c, default: Options.defaultC)
            try k.require(c >= 0 && c.isFinite, .c, "c must be a finite number ≥ 0, got \(c)")
            xi = try k.decode(.xi, default: Options.defaultXi)
            try k.require(xi > 0 && xi.isFinite, .xi, "xi must be a finite number > 0, got \(xi)")
            gradient = try k.decodeChoice(.gradient, default: .task)
            saveImportance = try k.decodeBoolOrAuto(.saveImportance)
        }

        public func encode(to encoder: any Encoder) throws {
            var k = encoder.container(keyedBy: CodingKeys.self)
            try k.encode(c, forKey: .c)
            try k.encode(xi, forKey: .xi)
            try k.encode(gradient.rawValue, forKey: .gradient)
            if let s = saveImportance { try k.encode(s, forKey: .saveImportance) } else { try k.encode("auto", forKey: .saveImportance) }
        }

        /// Whether the report carries importance vectors for a model of `parameterCount` parameters.
        public func savesImportance(parameterCount: Int) -> Bool {
            saveImportance ?? (parameterCount < EWC.Options.importanceParameterLimit)
        }

        public func makePlugin() -> any StrategyPlugin { SynapticIntelligence(options: self) }
    }
}
