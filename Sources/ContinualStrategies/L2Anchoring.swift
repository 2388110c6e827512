import ContinualCore

/// L2 regularisation towards the parameters at the end of the previous experience:
/// penalty (λ/2)·‖θ − θ*‖² (the "L2" baseline of Kirkpatrick et al. 2017 and Hsu et al. 2018:
/// EWC with the identity in place of the Fisher). Type name `l2`, strength key `lambda`.
///
/// The anchor is replaced after every experience (as Hsu et al.'s L2 does); the first experience
/// trains without a penalty. Parameters added after an anchor was taken (a model that grows) are
/// not penalised.
public struct L2Anchoring: ParameterPenalty {
    public var name: String { Options.typeName }
    public let options: Options
    private var anchor: [Float] = []

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws { anchor = [] }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        anchor = model.parameters
    }

    /// Adds λ(θ − θ*) into `gradient`; returns (λ/2) Σ (θ − θ*)².
    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                                    gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        guard options.lambda > 0, !anchor.isEmpty else { return 0 }
        return addL2Pull(towards: anchor, strength: options.lambda, parameters: parameters, gradient: gradient)
    }

    /// The anchor (one float per parameter); ≈ 5 FLOPs per parameter and step.
    public var resources: PluginResources {
        PluginResources(stateBytes: 4 * anchor.count, extraFLOPsPerStep: options.lambda > 0 ? 5 * anchor.count : 0)
    }

    public func checkpointState() -> PluginState { PluginState(floats: ["anchor": anchor]) }
    public mutating func restore(from state: PluginState) throws {
        guard let a = state.floats["anchor"] else { throw CheckpointError.mismatch("l2 state lacks its anchor") }
        anchor = a
    }

    public func report() -> PluginReport {
        PluginReport(attributes: ["lambda": .double(options.lambda),
                                  "penalty_convention": .string("(lambda/2) * sum_i (theta_i - theta*_i)^2")])
    }

    /// `{"type": "l2", "lambda": 1}`.
    public struct Options: PluginOptions {
        public static let typeName = "l2"
        public static let summary = "L2 pull towards the previous experience's parameters (EWC with identity importance)"
        public static let strengthKey: String? = "lambda"
        public var lambda: Double = 1

        public init(lambda: Double = 1) { self.lambda = lambda }

        enum CodingKeys: String, CodingKey, CaseIterable { case lambda }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            lambda = try c.decode(.lambda, default: 1.0)
            try c.require(lambda >= 0 && lambda.isFinite, .lambda, "lambda must be a finite number ≥ 0, got \(lambda)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(lambda, forKey: .lambda)
        }

        public func makePlugin() -> any StrategyPlugin { L2Anchoring(options: self) }
    }
}
