import ContinualCore

/// Hard Attention to the Task (Serra et al. 2018): a learned, almost binary attention mask per
/// task on every hidden unit, and gradients of weights used by past tasks' masks scaled down.
///
/// - Gates: hidden layer l's outputs are multiplied by a^t_l = σ(s·e^t_l), with one embedding
///   e^t_l per task (drawn N(0, 1) for every task in `prepare`, as Serra's code does). The gates
///   act after the activation (`ActivationGate`), so the gradient is exact for ReLU, tanh and
///   sigmoid. The embeddings of the task being trained are a `ParameterBlockOwner` block: the
///   run's optimizer and learning-rate schedule update them; the block's optimizer state
///   restarts with every task (Serra restarts the optimizer per task).
/// - Slope annealing: within every epoch, s = 1/s_max + (s_max − 1/s_max)·(b − 1)/(B − 1) at
///   batch b of B (paper eq. 3); s_max at test time.
/// - Attention regulariser (eq. 6): c · Σ a^t(1 − a^{<t}) / Σ (1 − a^{<t}), added to the
///   penalty curve and to the embeddings' gradient only.
/// - Gradient compensation (eq. 4): the gradient of W_l[j→i] is multiplied by
///   1 − min(a^{<t}_{l,i}, a^{<t}_{l−1,j}) (the network input counts as always attended), of a
///   hidden bias by 1 − a^{<t}_{l,i}. This runs as a masking-stage `GradientAdjuster`, after
///   every penalty, so a penalty listed beside HAT (EWC) cannot move weights past tasks use —
///   Serra compensates the gradient of the whole loss the same way. The output layer: per-task
///   heads (multi-head models) are not compensated, as in the paper; a shared output layer's
///   weights from a unit are compensated by 1 − a^{<t} of that unit, its biases not (choice:
///   a shared head must still learn new classes).
/// - Embedding compensation (eq. 5): the embeddings' gradient is multiplied by
///   s_max·[cosh(s·e) + 1] / (s·[cosh(e) + 1]) (s·e clamped to ±50), and the embeddings are
///   clamped to ±`embedding_clamp` after each step (6 in Serra's code).
/// - After a task: a^{≤t} = max(a^{<t}, σ(s_max·e^t)).
///
/// Prediction uses the evaluated experience's mask at s_max (task identity at test), through
/// `PredictionOverride`; exported models fold the mask into the next layer's weights.
public struct HAT: ActivationGate, ParameterBlockOwner, ParameterPenalty, GradientAdjuster, PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options

    /// The current task's embeddings (all gated units, layer after layer).
    public var parameterBlock: [Float] = []
    public var parameterBlockGradient: [Float] = []
    /// Every task's embeddings, [T × units]; the current task's row is `parameterBlock` while it trains.
    private(set) var embeddings: [Float] = []
    /// a^{<t}: element-wise max of the masks of the tasks trained so far (zeros before the first).
    private(set) var cumulative: [Float] = []
    private var template: UnitGates?
    private var current = -1
    private var tasks = 0
    /// Slope and gates of the step being computed (set by `gates`, used by the later hooks).
    private var slope: Float = 1
    private var stepGates: [Float] = []
    private var batchSize = 1

    public init(options: Options) { self.options = options }

    public var gradientStage: GradientStage { .masking }

    public var resources: PluginResources {
        let units = cumulative.count
        // Embeddings of every task, the live block of the current task's and the cumulative
        // mask; per step: gates, their gradient,
        // the regulariser and the compensation of the embeddings (≈ 30 FLOPs per unit) plus
        // one multiply per compensated parameter.
        return PluginResources(stateBytes: PluginResources.floatBytes(embeddings.count + 2 * units),
                               extraFLOPsPerStep: 30 * units + 4 * batchSize * units + compensatedParameters,
                               ownedParameters: units)
    }
    private var compensatedParameters = 0

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        guard !model.spec.isExtended else {
            throw TrainingError.invalid("hat gates the dense hidden units of a plain network; the model has adapters or LoRA blocks "
                + "(list hat before no method that extends the model, or use it alone)")
        }
        guard model.layers.count >= 2 else {
            throw TrainingError.invalidSetting(path: ".model.hidden", message: "hat needs at least one hidden layer to gate (model.hidden is empty)")
        }
        let gates = UnitGates(model: model, layers: Array(0..<(model.layers.count - 1)))
        template = gates
        tasks = context.experienceCount
        batchSize = context.training.batchSize
        var rng = context.randomSource("hat.embeddings")
        embeddings = (0..<(tasks * gates.count)).map { _ in Float(rng.normal()) }
        cumulative = [Float](repeating: 0, count: gates.count)
        compensatedParameters = model.layers.dropLast().reduce(0) { $0 + ($1.inputs + 1) * $1.outputs }
            + (model.layers.last.map { $0.copies == 1 ? $0.inputs * $0.outputs : 0 } ?? 0)
        current = -1
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        current = context.index
        let u = cumulative.count
        parameterBlock = Array(embeddings[(current * u)..<((current + 1) * u)])
        parameterBlockGradient = [Float](repeating: 0, count: u)
    }

    public var restartsBlockOptimizerPerExperience: Bool { true }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        let u = cumulative.count
        embeddings.replaceSubrange((current * u)..<((current + 1) * u), with: parameterBlock)
        let mask = gateValues(parameterBlock, slope: options.sMax)
        for i in 0..<u { cumulative[i] = max(cumulative[i], mask[i]) }
    }

    /// σ(s·e) for every unit.
    func gateValues(_ e: [Float], slope s: Float) -> [Float] { e.map { Activation.sigmoid(s * $0) } }

    /// The slope at batch b (0-based) of an epoch of B batches (paper eq. 3).
    public static func slope(sMax: Float, batch b: Int, of B: Int) -> Float {
        guard B > 1 else { return sMax }
        return 1 / sMax + (sMax - 1 / sMax) * Float(b) / Float(B - 1)
    }

    public mutating func gates(route: Int, step: StepIndex) -> UnitGates? {
        guard var g = template else { return nil }
        slope = Self.slope(sMax: options.sMax, batch: step.stepInEpoch, of: step.stepsPerEpoch)
        stepGates = gateValues(parameterBlock, slope: slope)
        g.values = stepGates
        return g
    }

    /// ∂L/∂e = ∂L/∂a · s·a(1 − a).
    public mutating func didBackward(gateGradient: UnsafeBufferPointer<Float>, route: Int, step: StepIndex) {
        for i in 0..<stepGates.count {
            let a = stepGates[i]
            parameterBlockGradient[i] += gateGradient[i] * slope * a * (1 - a)
        }
    }

    /// The attention regulariser: adds its gradient to the embeddings' (not to the weights').
    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>, gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        guard options.c > 0, !stepGates.isEmpty else { return 0 }
        var numerator = 0.0, denominator = 0.0
        for i in 0..<stepGates.count {
            let free = Double(1 - cumulative[i])
            numerator += Double(stepGates[i]) * free
            denominator += free
        }
        guard denominator > 0 else { return 0 }   // every unit taken: nothing left to regularise
        let c = Float(options.c)
        for i in 0..<stepGates.count {
            let a = stepGates[i]
            parameterBlockGradient[i] += c * (1 - cumulative[i]) / Float(denominator) * slope * a * (1 - a)
        }
        return options.c * numerator / denominator
    }

    /// Gradient compensation of the weights (eq. 4) and of the embeddings (eq. 5).
    public mutating func adjustGradient(_ gradient: UnsafeMutableBufferPointer<Float>, context: GradientContext) {
        let s = slope, sMax = options.sMax
        for i in 0..<parameterBlockGradient.count {
            let e = parameterBlock[i]
            let num = Self.cosh(Double(min(max(s * e, -50), 50))) + 1
            let den = Self.cosh(Double(e)) + 1
            parameterBlockGradient[i] *= Float(Double(sMax / s) * num / den)
        }
        guard current > 0, let gates = template else { return }
        let model = context.model
        cumulative.withUnsafeBufferPointer { a in
            for (l, layer) in model.layers.enumerated() where layer.kind == .dense {
                let isOutput = l == model.layers.count - 1
                if isOutput && layer.copies > 1 { continue }   // per-task heads: not compensated
                let inOffset = l > 0 ? gates.offset(ofLayer: l - 1) : nil
                let outOffset = isOutput ? nil : gates.offset(ofLayer: l)
                for copy in 0..<layer.copies {
                    let r = copy * layer.routeStride
                    let w = layer.weightOffset(route: r)
                    for j in 0..<layer.inputs {
                        let aIn: Float = inOffset.map { a[$0 + j] } ?? 1
                        let row = w + j * layer.outputs
                        for i in 0..<layer.outputs {
                            let aOut: Float = outOffset.map { a[$0 + i] } ?? 1
                            gradient[row + i] *= 1 - min(aIn, aOut)
                        }
                    }
                    if let o = outOffset {
                        let b = layer.biasOffset(route: r)
                        for i in 0..<layer.outputs { gradient[b + i] *= 1 - a[o + i] }
                    }
                }
            }
        }
    }

    static func cosh(_ x: Double) -> Double { (_exp(x) + _exp(-x)) / 2 }

    public mutating func didUpdateParameterBlock() {
        let t = options.embeddingClamp
        for i in parameterBlock.indices { parameterBlock[i] = min(max(parameterBlock[i], -t), t) }
    }

    /// The mask task `j` is evaluated with: σ(s_max·e^j) (the current task's live embeddings
    /// while it trains).
    public func mask(task j: Int) -> UnitGates? {
        guard var g = template, j >= 0, j < tasks else { return nil }
        let u = cumulative.count
        let e = j == current && !parameterBlock.isEmpty ? parameterBlock : Array(embeddings[(j * u)..<((j + 1) * u)])
        g.values = gateValues(e, slope: options.sMax)
        return g
    }

    public mutating func predictions(model: MLP, samples: Samples, experienceIndex j: Int, workspace ws: Workspace) -> Predictions? {
        guard let gates = mask(task: j) else { return nil }
        return model.gatedPredictions(samples: samples, route: model.routeCount > 1 ? j : 0, gates: gates, workspace: ws)
    }

    public func report() -> PluginReport {
        let used = cumulative.lazy.filter { $0 > 0.5 }.count
        return PluginReport(attributes: [
            "s_max": .double(Double(options.sMax)), "c": .double(options.c),
            "embedding_clamp": .double(Double(options.embeddingClamp)),
            "units": .int(Int64(cumulative.count)), "units_used": .int(Int64(used)),
        ], arrays: ["cumulative_mask": PluginReport.Array(values: cumulative.map(Double.init)),
                    "final_masks": PluginReport.Array(values: finalMasks.map(Double.init), shape: [tasks, cumulative.count],
                                                      attributes: ["meaning": .string("σ(s_max·e) of every task's embedding (rows: tasks, columns: hidden units layer after layer); the mask task t is evaluated with")])])
    }

    /// Every task's evaluation mask, [tasks × units].
    var finalMasks: [Float] { (0..<tasks).flatMap { mask(task: $0)?.values ?? [] } }

    public func checkpointState() -> PluginState {
        PluginState(floats: ["embeddings": embeddings, "cumulative": cumulative, "block": parameterBlock],
                    ints: ["current": [Int64(current)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let e = state.floats["embeddings"], e.count == embeddings.count,
              let c = state.floats["cumulative"], c.count == cumulative.count else {
            throw CheckpointError.mismatch("hat: the checkpoint's embeddings or masks do not match this model")
        }
        embeddings = e
        cumulative = c
        parameterBlock = state.floats["block"] ?? []
        parameterBlockGradient = [Float](repeating: 0, count: parameterBlock.count)
        current = Int(state.ints["current"]?.first ?? -1)
    }

    /// `{"type": "hat", "s_max": 400, "c": 0.75, "embedding_clamp": 6}`
    public struct Options: PluginOptions {
        public static let typeName = "hat"
        public static let summary = "hard attention to the task (Serra et al. 2018): learned unit masks per task, compensated gradients"
        /// Largest gate slope (training anneals towards it; test uses it).
        public var sMax: Float = 400
        /// Strength of the attention regulariser.
        public var c: Double = 0.75
        /// Embeddings are clamped to ±this after every step.
        public var embeddingClamp: Float = 6

        public init() {}

        enum CodingKeys: String, CodingKey, CaseIterable {
            case sMax = "s_max", c, embeddingClamp = "embedding_clamp"
        }

        public init(from decoder: any Decoder) throws {
            let k = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            sMax = try k.decode(.sMax, default: 400)
            c = try k.decode(.c, default: 0.75)
            embeddingClamp = try k.decode(.embeddingClamp, default: 6)
            try k.require(sMax >= 1 && sMax <= 10_000, .sMax, "must be in 1...10000, got \(sMax)")
            try k.require(c >= 0 && c.isFinite, .c, "must be ≥ 0, got \(c)")
            try k.require(embeddingClamp > 0 && embeddingClamp.isFinite, .embeddingClamp, "must be > 0, got \(embeddingClamp)")
        }

        public func encode(to encoder: any Encoder) throws {
            var k = encoder.container(keyedBy: CodingKeys.self)
            try k.encode(sMax, forKey: .sMax)
            try k.encode(c, forKey: .c)
            try k.encode(embeddingClamp, forKey: .embeddingClamp)
        }

        /// The mask is chosen by the evaluated experience's identity.
        public var usesTaskIdentityAtTest: Bool { true }
        public var taskIdentityUse: String { "hat picks each experience's attention mask by its identity" }
        /// The evaluated network is the trained one with the task's mask (report array
        /// "final_masks") folded into the next layers' weights.
        public var predictionExport: PredictionExport { .foldedGates(reportArray: "final_masks") }
        public func makePlugin() -> any StrategyPlugin { HAT(options: self) }
    }
}
