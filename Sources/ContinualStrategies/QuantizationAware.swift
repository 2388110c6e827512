import ContinualCore

/// Quantisation-aware fine-tuning with fake quantisation and the straight-through estimator
/// (Jacob et al. 2018; Bengio et al. 2013): every step's task-loss gradient is taken at the
/// int8-rounded weights w_q = s·round(w/s), and applied to the float weights w as if rounding had
/// derivative 1, so the model learns weights that keep working after post-training int8
/// quantisation (see `quantization` in the experiment JSON for the int8 evaluation).
///
/// From experience `start_experience` on; biases, adapters and LoRA stay float. Penalties (EWC,
/// SI) are evaluated at the float weights, after the float weights are restored.
public struct QuantizationAware: GradientPointTransform {
    public var name: String { Options.typeName }
    let options: Options
    private var active = false
    private var floatParameters: [Float] = []
    private var steps = 0
    /// Parameters of the model being trained (set before each experience).
    private var parameterCount = 0

    public init(options: Options) { self.options = options }

    /// The float weights kept while the gradient is taken at their fake-quantised values; per
    /// step ≈ 4 FLOPs per weight (scale, round, clamp, rescale) once active. Counted from the
    /// model's size, not from the scratch copy (which is empty again after a restore).
    public var resources: PluginResources {
        PluginResources(stateBytes: active ? 4 * parameterCount : 0, extraFLOPsPerStep: active ? 4 * parameterCount : 0)
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        active = context.index >= options.startExperience
        parameterCount = model.parameterCount
    }

    public mutating func willComputeGradient(model: inout MLP) {
        guard active else { return }
        floatParameters = model.parameters
        QuantizedMLP.fakeQuantize(&model, granularity: options.granularity)
        steps += 1
    }

    /// Straight-through estimator: the gradient at the fake-quantised weights is applied to the
    /// float weights unchanged.
    public mutating func didComputeGradient(model: inout MLP, gradient: UnsafeMutableBufferPointer<Float>) {
        guard active else { return }
        model.parameters = floatParameters
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "granularity": .string(options.granularity.rawValue),
            "start_experience": .int(Int64(options.startExperience)),
            "fake_quantised_steps": .int(Int64(steps)),
        ])
    }

    public func checkpointState() -> PluginState {
        PluginState(ints: ["steps": [Int64(steps)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let s = state.ints["steps"]?.first else { throw CheckpointError.mismatch("qat state is incomplete") }
        steps = Int(s)
    }

    /// `{"type": "qat", "granularity": "per_channel", "start_experience": 0}`.
    public struct Options: PluginOptions {
        public static let typeName = "qat"
        public static let summary = "quantisation-aware fine-tuning: gradients at int8-rounded weights (straight-through estimator)"
        public var granularity: QuantizedMLP.Granularity = .perChannel
        public var startExperience = 0

        public init(granularity: QuantizedMLP.Granularity = .perChannel, startExperience: Int = 0) {
            self.granularity = granularity
            self.startExperience = startExperience
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case granularity, startExperience = "start_experience"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            granularity = try c.decodeChoice(.granularity, default: .perChannel)
            startExperience = try c.decode(.startExperience, default: 0)
            try c.require(startExperience >= 0, .startExperience, "must be ≥ 0, got \(startExperience)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(granularity, forKey: .granularity)
            try c.encode(startExperience, forKey: .startExperience)
        }

        public func makePlugin() -> any StrategyPlugin { QuantizationAware(options: self) }
    }
}
