import ContinualCore

/// Separate networks per context: one independent network per task, each trained only on its
/// own task and used only for it — the task-incremental upper baseline of van de Ven,
/// Tuytelaars & Tolias (2022, "Three types of incremental learning", Nature Machine
/// Intelligence; "Separate Networks" in their tables).
///
/// Network t has the model's layer sizes (`model.hidden` is the size of *each* network): the
/// model itself is network 0, and every later network is a column of Progressive Neural Networks
/// without lateral connections (`ProgressiveNetwork` with `lateral: false`, whose hooks this
/// plugin forwards): drawn U(−1/√fan-in, 1/√fan-in) from its own seeded stream when its task
/// starts, trained by the run's optimizer as a plugin-owned block (state restarted per task),
/// frozen with every earlier network when its task ends. Nothing of network t changes after task
/// t, so its predictions are bit-identical after any later training. Test-time predictions of
/// task t go through network t: the task label is used at test (task-incremental).
///
/// Budget: T networks hold T × the model's parameters. van de Ven et al. shrink the networks so
/// that the total matches the other methods'; `parameter_budget` states that total, and the run
/// is refused (naming the option, each network's parameters and the largest uniform hidden width
/// that fits) when T networks of `model.hidden` exceed it. Choose `model.hidden` to fit.
public struct SeparateNetworks: ColumnNetwork, PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options
    private var columns: ProgressiveNetwork
    private var tasks = 0
    private var perNetwork = 0

    public init(options: Options = Options()) {
        self.options = options
        var pnn = ProgressiveNetwork.Options()
        pnn.lateral = false
        columns = ProgressiveNetwork(options: pnn)
    }

    public var parameterBlock: [Float] {
        get { columns.parameterBlock }
        set { columns.parameterBlock = newValue }
    }
    public var parameterBlockGradient: [Float] {
        get { columns.parameterBlockGradient }
        set { columns.parameterBlockGradient = newValue }
    }
    public var restartsBlockOptimizerPerExperience: Bool { true }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        tasks = context.experienceCount
        perNetwork = ProgressiveNetwork.parameterCount(widths: [model.spec.inputs] + model.layers.map(\.outputs), column: 0,
                                                       lateral: false)
        if let budget = options.parameterBudget, tasks * perNetwork > budget {
            throw TrainingError.invalidOption(key: ".parameter_budget", message:
                "\(tasks) networks of \(perNetwork) parameters (model.hidden \(model.spec.hidden)) need \(tasks * perNetwork) > "
                + "parameter_budget \(budget); the largest uniform hidden width that fits is "
                + "\(Self.largestWidth(inputs: model.spec.inputs, layers: model.spec.hidden.count, outputs: model.logitCount, budget: budget / max(tasks, 1)))")
        }
        try columns.prepare(model: &model, context: context)
    }

    /// The largest w with hidden layers all of width w whose network has ≤ `budget` parameters (0 if none).
    static func largestWidth(inputs: Int, layers: Int, outputs: Int, budget: Int) -> Int {
        func count(_ w: Int) -> Int { ProgressiveNetwork.parameterCount(widths: [inputs] + Array(repeating: w, count: layers) + [outputs], column: 0, lateral: false) }
        var w = 0
        while count(w + 1) <= budget { w += 1 }
        return w
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        try columns.beforeExperience(model: &model, context: context)
    }
    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        try columns.afterExperience(model: &model, context: context, workspace: workspace)
    }
    public mutating func columnForward(model: MLP, input: UnsafePointer<Float>, count: Int, route: Int,
                                       workspace: Workspace, step: StepIndex) -> Bool {
        columns.columnForward(model: model, input: input, count: count, route: route, workspace: workspace, step: step)
    }
    public mutating func columnBackward(model: MLP, logitGradient: UnsafePointer<Float>, count: Int, route: Int,
                                        workspace: Workspace, gradient: UnsafeMutablePointer<Float>) {
        columns.columnBackward(model: model, logitGradient: logitGradient, count: count, route: route, workspace: workspace,
                               gradient: gradient)
    }
    public mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int, workspace: Workspace) -> Predictions? {
        columns.predictions(model: model, samples: samples, experienceIndex: experienceIndex, workspace: workspace)
    }

    public var resources: PluginResources { columns.resources }
    public func checkpointState() -> PluginState { columns.checkpointState() }
    public mutating func restore(from state: PluginState) throws { try columns.restore(from: state) }

    public func report() -> PluginReport {
        var r = columns.report()
        r.attributes["parameters_per_network"] = .int(Int64(perNetwork))
        r.attributes["networks_planned"] = .int(Int64(tasks))
        r.attributes["parameter_budget"] = options.parameterBudget.map { .int(Int64($0)) } ?? .string("none")
        r.attributes["protocol"] = .string("task-incremental: experience t is predicted by network t (task label at test time)")
        return r
    }
}

extension SeparateNetworks {
    /// `{"type": "separate_networks", "parameter_budget": 500000}`.
    public struct Options: PluginOptions {
        public static let typeName = "separate_networks"
        public static let summary = "separate networks per context (van de Ven 2022's task-IL upper baseline): one independent network per task"
        /// Total parameters the T networks may hold; nil = no limit.
        public var parameterBudget: Int? = nil

        enum Keys: String, CodingKey, CaseIterable { case parameterBudget = "parameter_budget" }

        public init(parameterBudget: Int? = nil) { self.parameterBudget = parameterBudget }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            if c.contains(.parameterBudget), (try? c.decode(String.self, forKey: .parameterBudget)) == "none" {
                parameterBudget = nil
            } else if c.contains(.parameterBudget) {
                let n = try c.decode(Int.self, forKey: .parameterBudget)
                try c.require(n >= 1, .parameterBudget, "parameter_budget must be a positive integer or \"none\", got \(n)")
                parameterBudget = n
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            if let n = parameterBudget { try c.encode(n, forKey: .parameterBudget) } else { try c.encode("none", forKey: .parameterBudget) }
        }

        public var usesTaskIdentityAtTest: Bool { true }
        public var taskIdentityUse: String { "separate_networks predicts each experience with its own network, chosen by its identity" }
        public static var composition: PluginComposition {
            .alone(reason: "each task trains only its own network and every earlier network is frozen, so no other method has anything to act on")
        }
        public var predictionExport: PredictionExport {
            .refused("separate_networks predicts task t ≥ 1 with network t, which lives outside the exported network")
        }
        /// T − 1 further networks of the model's size.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(4 * max(0, shape.experiences - 1) * shape.parameters, key: Keys.parameterBudget.path)])
        }
        public func makePlugin() -> any StrategyPlugin { SeparateNetworks(options: self) }
    }
}
