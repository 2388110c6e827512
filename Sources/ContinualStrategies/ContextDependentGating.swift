import ContinualCore

/// Context-dependent gating, XdG (Masse, Grant & Freedman, PNAS 2018, "Alleviating catastrophic
/// forgetting using context-dependent gating and synaptic stabilization"): every context (task)
/// gets a fixed random subset of each hidden layer's units; the others are multiplied by 0 in
/// the forward and therefore the backward pass, for training and for testing.
///
/// For task t and hidden layer l of width n_l, the gate is g^t_l,j = 1 for the first
/// n_l − round(`gated_fraction` · n_l) units of a uniform random permutation of the layer (drawn
/// per task and layer, as Masse et al.'s code does) and 0 for the rest; h_l = f(W_l h_{l−1} + b_l) ⊙ g^t_l.
/// The gates of every task are drawn once, in `prepare`, from the plugin's own seeded stream,
/// and never change. A gated unit's output is 0, so its incoming weights and bias get no
/// gradient while task t trains, and it passes nothing forward (`ActivationGate`; the gates act
/// after the activation, exact for every activation).
///
/// XdG needs the task identity at test time (the evaluated experience's gates, through
/// `PredictionOverride`), so it is a task-incremental method; the exported network folds the
/// task's gates into the next layer's weights (report array `gates`). Masse et al. and van de
/// Ven et al. (2022) combine it with a parameter regulariser: list it with `si`, `ewc` or
/// `rwalk` (`"strategy": [{"type": "xdg"}, {"type": "si"}]`); SI's path integral then sees the
/// gated steps. EWC's Fisher pass runs the ungated network (its `afterExperience` does not see
/// the gates), so with EWC a gated unit's weights count the importance they would have had
/// ungated — a difference from Masse et al., who compute the Fisher through the gates.
public struct ContextDependentGating: ActivationGate, PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options
    /// Every task's gates, [tasks × hidden units] (units layer after layer).
    public private(set) var masks: [Float] = []
    private var template: UnitGates?
    private var tasks = 0
    private var current = 0

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        guard !model.spec.isExtended else {
            throw TrainingError.invalid("xdg gates the dense hidden units of a plain network; the model has adapters or LoRA blocks")
        }
        guard model.layers.count >= 2 else {
            throw TrainingError.invalidSetting(path: ".model.hidden", message: "xdg needs at least one hidden layer to gate (model.hidden is empty)")
        }
        let hidden = Array(0..<(model.layers.count - 1))
        for l in hidden where Self.activeUnits(width: model.layers[l].outputs, gatedFraction: options.gatedFraction) < 1 {
            throw TrainingError.invalidOption(key: ".gated_fraction", message:
                "gated_fraction \(options.gatedFraction) leaves no active unit in hidden layer \(l) of \(model.layers[l].outputs) units")
        }
        let template = UnitGates(model: model, layers: hidden)
        self.template = template
        tasks = context.experienceCount
        var rng = context.randomSource("xdg.gates")
        masks = []
        masks.reserveCapacity(tasks * template.count)
        for _ in 0..<tasks {
            for (k, _) in hidden.enumerated() {
                let width = template.width(k)
                masks += Self.gate(width: width, active: Self.activeUnits(width: width, gatedFraction: options.gatedFraction),
                                   rng: &rng)
            }
        }
        current = 0
    }

    /// Units left active in a layer of `width` units.
    public static func activeUnits(width: Int, gatedFraction: Double) -> Int {
        width - Int((gatedFraction * Double(width)).rounded())
    }

    /// One layer's gate: 1 on the first `active` units of a uniform random permutation, else 0.
    static func gate(width: Int, active: Int, rng: inout RandomSource) -> [Float] {
        var order = Array(0..<width)
        for i in 0..<max(width - 1, 0) {
            order.swapAt(i, i + rng.uniformInt(below: width - i))
        }
        var g = [Float](repeating: 0, count: width)
        for j in order.prefix(active) { g[j] = 1 }
        return g
    }

    /// Task `j`'s gates (nil outside the run's tasks).
    public func mask(task j: Int) -> UnitGates? {
        guard var g = template, j >= 0, j < tasks else { return nil }
        g.values = Array(masks[(j * g.count)..<((j + 1) * g.count)])
        return g
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        current = context.index
    }

    public mutating func gates(route: Int, step: StepIndex) -> UnitGates? { mask(task: current) }

    /// Fixed gates: nothing to learn from their gradient.
    public mutating func didBackward(gateGradient: UnsafeBufferPointer<Float>, route: Int, step: StepIndex) {}

    public mutating func predictions(model: MLP, samples: Samples, experienceIndex j: Int, workspace ws: Workspace) -> Predictions? {
        guard let gates = mask(task: j) else { return nil }
        return model.gatedPredictions(samples: samples, route: model.routeCount > 1 ? j : 0, gates: gates, workspace: ws)
    }

    /// The gates of every task; per step one multiply per gated unit and row (forward and backward).
    public var resources: PluginResources {
        PluginResources(stateBytes: PluginResources.floatBytes(masks.count), extraFLOPsPerStep: 2 * (template?.count ?? 0))
    }

    /// The gates are a function of the seed and the options: only the current task is kept.
    public func checkpointState() -> PluginState {
        PluginState(floats: ["masks": masks], ints: ["current": [Int64(current)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let m = state.floats["masks"], m == masks, let c = state.ints["current"]?.first, c >= 0 else {
            throw CheckpointError.mismatch("xdg: the checkpoint's gates differ from this run's (another seed or gated_fraction?)")
        }
        current = Int(c)
    }

    public func report() -> PluginReport {
        let units = template?.count ?? 0
        return PluginReport(attributes: [
            "gated_fraction": .double(options.gatedFraction), "units": .int(Int64(units)),
            "active_units_per_task": .int(Int64(masks.prefix(units).reduce(0, +))),
            "protocol": .string("task-incremental: each experience is tested through its own gates (task label at test time)"),
        ], arrays: ["gates": PluginReport.Array(values: masks.map(Double.init), shape: [tasks, units], attributes: [
            "meaning": .string("fixed random gate of every hidden unit per task (rows: tasks, columns: hidden units layer after layer)"),
        ])])
    }
}

extension ContextDependentGating {
    /// `{"type": "xdg", "gated_fraction": 0.8}`.
    public struct Options: PluginOptions {
        public static let typeName = "xdg"
        public static let summary = "context-dependent gating (Masse 2018): fixed random hidden-unit gates per task"
        /// 0 gates nothing: every gate is 1, so training and predictions are naive's, bit for bit.
        public static let strengthKey: String? = "gated_fraction"
        /// Fraction of each hidden layer's units gated off per task, in [0, 1) (Masse et al.: 0.8).
        public var gatedFraction = 0.8

        enum Keys: String, CodingKey, CaseIterable { case gatedFraction = "gated_fraction" }

        public init(gatedFraction: Double = 0.8) { self.gatedFraction = gatedFraction }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            gatedFraction = try c.decode(.gatedFraction, default: 0.8)
            try c.require(gatedFraction >= 0 && gatedFraction < 1, .gatedFraction,
                          "gated_fraction must be in [0, 1), got \(gatedFraction)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(gatedFraction, forKey: .gatedFraction)
        }

        public var usesTaskIdentityAtTest: Bool { true }
        public var taskIdentityUse: String { "xdg gates each experience's hidden units by its identity" }
        /// The trained network with the evaluated task's gates folded into the next layers' weights.
        public var predictionExport: PredictionExport { .foldedGates(reportArray: "gates") }
        public func makePlugin() -> any StrategyPlugin { ContextDependentGating(options: self) }
    }
}
