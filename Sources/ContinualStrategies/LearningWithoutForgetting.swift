import ContinualCore

/// Learning without Forgetting (Li & Hoiem, ECCV 2016 / TPAMI 2017): keeps no data, only a copy of
/// the model as it was at the end of the previous experience, and adds a distillation term that
/// keeps the new model's outputs on the *current* data close to the old model's.
///
/// The term, per batch row x with old logits z° = f_old(x) and new logits z = f(x), temperature T:
/// - multi-class: λ · s · CE(softmax(z°/T), softmax(z/T)) reported as the KL divergence
///   KL(softmax(z°/T) ‖ softmax(z/T)) (same gradient: the old model's entropy is constant),
///   ∂/∂z_k = λ · s · (softmax(z/T)_k − softmax(z°/T)_k) / T;
/// - binary (one logit, sigmoid): the same with the two-class distributions σ(z/T), σ(z°/T).
///   s = T² when `temperature_scaling` is true (Hinton et al. 2015, keeps the gradient's size
///   independent of T), else 1 (Li & Hoiem and Avalanche: no factor). Default false.
///
/// Choices where implementations differ, documented here and recorded in the results:
/// - Which rows: every row of the batch (own rows and any rows other plugins appended), as
///   Avalanche does; Li & Hoiem train on the new task's data only, which is the same without replay.
/// - Which outputs: the shared head's (single-head: domain- and class-incremental streams). Li &
///   Hoiem's task-incremental variant distils each *old task head* on the new data; that needs a
///   forward and backward per old head, which the one-backward batch-loss hook does not express, so
///   multi-head models are refused in `prepare` rather than silently distilled on the wrong head.
/// - Warm-up: the paper first trains the new head alone; with a shared head there is no new head.
/// - The old model is the model after the previous experience (a copy taken in
///   `afterExperience`), so the first experience trains with no term at all.
public struct LearningWithoutForgetting: BatchLossTerm {
    public var name: String { Options.typeName }
    public let options: Options
    /// The model at the end of the previous experience (nil during the first).
    public private(set) var previous: MLP?
    /// The model's structure at `prepare` (restores rebuild `previous` on it).
    private var template: MLP?
    private var workspace: Workspace?
    private var gathered: [Float] = []
    private var batchSize = 1
    private var distilledSteps = 0

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        guard model.routeCount == 1 else {
            throw TrainingError.invalid("lwf distils the shared head's outputs; this model has \(model.routeCount) heads (multi_head). Li & Hoiem's per-old-head distillation is not implemented: use a single head")
        }
        previous = nil
        template = model
        batchSize = context.training.batchSize
        distilledSteps = 0
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        previous = model
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        // λ = 0 (or no previous model yet) leaves the gradient untouched: bit-identical to naive.
        guard options.lambda > 0, let old = previous else { return 0 }
        let n = input.rows.count
        guard n > 0 else { return 0 }
        let d = input.batch.dimension
        let L = input.logitCount
        if workspace == nil || workspace!.capacity < n { workspace = old.makeWorkspace(capacity: max(n, batchSize * 2)) }
        if gathered.count < n * d { gathered = [Float](repeating: 0, count: n * d) }
        for (k, row) in input.rows.enumerated() {
            let src = input.batch.row(row)
            gathered.replaceSubrange((k * d)..<((k + 1) * d), with: src)
        }
        let ws = workspace!
        gathered.withUnsafeBufferPointer { old.forward($0.baseAddress!, count: n, route: input.route, workspace: ws) }
        let oldLogits = ws.logits
        let T = options.temperature
        let factor = options.lambda * (options.temperatureScaling ? T * T : 1)
        var value = 0.0
        let rowWeight = Double(input.scale)
        for k in 0..<n {
            let z = input.logits + k * L
            let zo = oldLogits + k * L
            let g = input.logitGradient + k * L
            if L == 1 {
                let p = sigmoid(Double(z[0]) / T), q = sigmoid(Double(zo[0]) / T)
                value += rowWeight * (kl(q, p) + kl(1 - q, 1 - p))
                g[0] += Float(rowWeight * factor * (p - q) / T)
            } else {
                var mz = -Double.infinity, mo = -Double.infinity
                for c in 0..<L { mz = max(mz, Double(z[c]) / T); mo = max(mo, Double(zo[c]) / T) }
                var sz = 0.0, so = 0.0
                for c in 0..<L { sz += _exp(Double(z[c]) / T - mz); so += _exp(Double(zo[c]) / T - mo) }
                let lz = _log(sz), lo = _log(so)
                for c in 0..<L {
                    let logP = Double(z[c]) / T - mz - lz, logQ = Double(zo[c]) / T - mo - lo
                    let p = _exp(logP), q = _exp(logQ)
                    if q > 0 { value += rowWeight * q * (logQ - logP) }
                    g[c] += Float(rowWeight * factor * (p - q) / T)
                }
            }
        }
        distilledSteps += 1
        return factor * value
    }

    @inline(__always) private func sigmoid(_ x: Double) -> Double { x >= 0 ? 1 / (1 + _exp(-x)) : _exp(x) / (1 + _exp(x)) }
    @inline(__always) private func kl(_ q: Double, _ p: Double) -> Double { q > 0 ? q * (_log(q) - _log(max(p, .leastNormalMagnitude))) : 0 }

    /// The previous model's parameters; per step a forward pass of it over the batch plus ≈ 8 FLOPs
    /// per logit for the softened distributions and the gradient.
    public var resources: PluginResources {
        guard let old = previous else { return .none }
        return PluginResources(stateBytes: 4 * old.parameterCount,
                               extraFLOPsPerStep: options.lambda > 0 ? batchSize * (old.flopsPerPrediction + 8 * old.logitCount) : 0)
    }

    public func checkpointState() -> PluginState {
        var state = PluginState(ints: ["distilled_steps": [Int64(distilledSteps)]])
        if let old = previous { state.floats["previous_parameters"] = old.parameters }
        return state
    }

    public mutating func restore(from state: PluginState) throws {
        distilledSteps = Int(state.ints["distilled_steps"]?.first ?? 0)
        previous = try state.previousModel(template: template, plugin: "lwf")
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "lambda": .double(options.lambda), "temperature": .double(options.temperature),
            "temperature_scaling": .int(options.temperatureScaling ? 1 : 0),
            "distilled_rows": .string("all batch rows"), "distilled_outputs": .string("shared head"),
            "loss_convention": .string(options.temperatureScaling
                ? "lambda * T^2 * KL(softmax(z_old/T) || softmax(z/T)), batch mean"
                : "lambda * KL(softmax(z_old/T) || softmax(z/T)), batch mean"),
            "distilled_steps": .int(Int64(distilledSteps)),
        ])
    }
}

extension LearningWithoutForgetting {
    /// `{"type": "lwf", "lambda": 1, "temperature": 2, "temperature_scaling": false}`.
    public struct Options: PluginOptions {
        public static let typeName = "lwf"
        public static let summary = "learning without forgetting (Li & Hoiem 2017): distil the previous model's outputs"
        public static let strengthKey: String? = "lambda"

        /// Weight λ ≥ 0 of the distillation term (0 = naive; Li & Hoiem use 1).
        public var lambda: Double = 1
        /// Temperature T > 0 of the softened distributions (Li & Hoiem: 2).
        public var temperature: Double = 2
        /// Multiply the term by T² (Hinton et al. 2015); false follows Li & Hoiem and Avalanche.
        public var temperatureScaling: Bool = false

        public init(lambda: Double = 1, temperature: Double = 2, temperatureScaling: Bool = false) {
            self.lambda = lambda
            self.temperature = temperature
            self.temperatureScaling = temperatureScaling
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case lambda, temperature
            case temperatureScaling = "temperature_scaling"
        }

        public init(from decoder: any Decoder) throws {
            let k = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            lambda = try k.decode(.lambda, default: 1.0)
            try k.require(lambda >= 0 && lambda.isFinite, .lambda, "lambda must be a finite number ≥ 0, got \(lambda)")
            temperature = try k.decode(.temperature, default: 2.0)
            try k.require(temperature > 0 && temperature.isFinite && temperature <= 1e6, .temperature,
                          "temperature must be a finite number in (0, 1e6], got \(temperature)")
            temperatureScaling = try k.decode(.temperatureScaling, default: false)
        }

        public func encode(to encoder: any Encoder) throws {
            var k = encoder.container(keyedBy: CodingKeys.self)
            try k.encode(lambda, forKey: .lambda)
            try k.encode(temperature, forKey: .temperature)
            try k.encode(temperatureScaling, forKey: .temperatureScaling)
        }

        public func makePlugin() -> any StrategyPlugin { LearningWithoutForgetting(options: self) }
    }
}
