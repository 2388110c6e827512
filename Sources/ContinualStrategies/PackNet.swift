import ContinualCore

/// PackNet (Mallya & Lazebnik 2018): after each task, prune a fraction of the weights that task
/// trained by magnitude, retrain the rest briefly, then freeze them as the task's own; later
/// tasks train only the weights still free. Task t is evaluated with the weights of tasks ≤ t
/// (its cumulative mask), so earlier tasks are not forgotten at all, by construction.
///
/// - What is pruned: the weight matrices of the dense layers with one copy (the shared core,
///   and a single shared output layer). Per layer, among the weights still free at the start of
///   the task, the `prune_fraction` with the smallest |w| (ties: lower index first) are set to
///   0 and stay free for later tasks; the others are kept. Pruned weights restart from 0 in the
///   next task, as in the paper.
/// - Biases are not pruned: they train with the first task only and are frozen afterwards (the
///   paper keeps the first task's biases). Per-task heads (multi-head models) are not pruned:
///   each is its task's own and the loop trains it only on its task's rows.
/// - Retraining: the experience's planned steps are split (`TrainingPhases`): the first
///   1 − `retrain_fraction` train every free weight; at the boundary the plugin prunes and the
///   loop restarts the optimizer (the paper retrains with a new optimizer, for fewer epochs than
///   the first training); the last `retrain_fraction` train only the kept weights. Every method
///   thus gets the same step budget. If the boundary is never reached (early stopping, a FLOPs
///   budget, `retrain_fraction` 0) pruning happens after the experience, without retraining.
/// - Test: experience j is predicted by the network with every weight owned by a task > j (and,
///   for tasks before the current one, every free weight) set to 0 (`PredictionOverride`): it
///   needs the task label at test time, so class-incremental runs are refused.
/// - Freed capacity: the report holds, per experience, the fraction of prunable weights still
///   free after its pruning (`free_fraction`) and the weights each task owns (`weights_per_task`).
///
/// Export is refused: the stored network holds every task's weights, and no single exported
/// network reproduces the per-task predictions.
public struct PackNet: TrainingPhases, PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options

    /// Owner of every parameter: a task index (frozen, used by tasks ≥ it), `free` (trainable
    /// now, pruned and 0 when not), or `routed` (a per-task head copy, trained by its own task).
    private(set) var owner: [Int32] = []
    /// Prunable weights (weight matrices of one-copy dense layers), as ranges of the flat vector.
    private var prunable: [Range<Int>] = []
    /// Whether the current task keeps each parameter (false: pruned in this task).
    private var keep: [Bool] = []
    private var current = -1
    private var pruned = false
    /// Fraction of prunable weights free after each experience's pruning.
    private(set) var freeFraction: [Double] = []
    /// Prunable weights owned by each task.
    private(set) var weightsPerTask: [Int64] = []

    static let free: Int32 = -1
    static let routed: Int32 = -2

    public init(options: Options) { self.options = options }

    private var prunableCount: Int { prunable.reduce(0) { $0 + $1.count } }

    public var resources: PluginResources {
        // The owner of every parameter (a task index; one byte would do on a device with < 128
        // tasks, stored here as Int32) and the current task's keep mask; pruning sorts each
        // layer's free weights once per experience.
        let n = prunableCount
        return PluginResources(stateBytes: 4 * owner.count + keep.count + 8 * (freeFraction.count + weightsPerTask.count),
                               extraFLOPsPerExperience: n * max(1, Int.bitWidth - n.leadingZeroBitCount))
    }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        guard !model.spec.isExtended else {
            throw TrainingError.invalid("packnet prunes and freezes the weights of a plain network; the model has adapters or LoRA blocks")
        }
        owner = [Int32](repeating: Self.free, count: model.parameterCount)
        prunable = []
        for layer in model.layers where layer.kind == .dense {
            if layer.copies == 1 {
                let w = layer.weightOffset(route: 0)
                prunable.append(w..<(w + layer.inputs * layer.outputs))
            } else {
                for i in layer.offset..<(layer.offset + layer.parameterCount) { owner[i] = Self.routed }
            }
        }
        keep = [Bool](repeating: true, count: model.parameterCount)
        current = -1
        pruned = false
        freeFraction = []
        weightsPerTask = []
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        current = context.index
        pruned = false
        keep = [Bool](repeating: true, count: owner.count)
        model.trainable = owner.map { $0 == Self.free || $0 == Self.routed }
    }

    public func phaseStarts(plannedSteps: Int, context: ExperienceContext) -> [Int] {
        guard plannedSteps < Int.max, options.retrainFraction > 0 else { return [] }
        let retrain = Int((Double(plannedSteps) * options.retrainFraction).rounded())
        let start = plannedSteps - retrain
        return retrain >= 1 && start >= 1 ? [start] : []
    }

    public mutating func beginPhase(_ phase: Int, model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        prune(&model)
    }

    /// Prunes the smallest free weights of every prunable layer and leaves only the kept ones
    /// trainable.
    mutating func prune(_ model: inout MLP) {
        guard !pruned else { return }
        pruned = true
        for range in prunable {
            var candidates = range.filter { owner[$0] == Self.free }
            let k = Int((Double(candidates.count) * options.pruneFraction).rounded())
            guard k > 0 else { continue }
            let p = model.parameters
            candidates.sort { (abs(p[$0]), $0) < (abs(p[$1]), $1) }
            for i in candidates[0..<k] {
                keep[i] = false
                model.parameters[i] = 0
            }
        }
        model.trainable = owner.indices.map { owner[$0] == Self.routed || (owner[$0] == Self.free && keep[$0]) }
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        prune(&model)
        let t = Int32(context.index)
        var owned: Int64 = 0
        var mask = model.trainable      // edited here, assigned once: each assignment recomputes
        for i in owner.indices where owner[i] == Self.free && keep[i] {    // the model's frozen prefix
            owner[i] = t
            mask?[i] = false
        }
        model.trainable = mask
        var free = 0
        for range in prunable {
            for i in range {
                if owner[i] == t { owned += 1 }
                if owner[i] == Self.free { free += 1 }
            }
        }
        weightsPerTask.append(owned)
        let n = prunableCount
        freeFraction.append(n > 0 ? Double(free) / Double(n) : 0)
    }

    /// The network task `j` is evaluated with: weights of later tasks (and, for tasks before
    /// the current one, free weights) set to 0.
    public func network(task j: Int, of model: MLP) -> MLP {
        var masked = model
        masked.parameters.withUnsafeMutableBufferPointer { p in
            for i in owner.indices {
                let o = owner[i]
                if (o >= 0 && Int(o) > j) || (o == Self.free && j < current) { p[i] = 0 }
            }
        }
        return masked
    }

    public mutating func predictions(model: MLP, samples: Samples, experienceIndex j: Int, workspace ws: Workspace) -> Predictions? {
        guard current >= 0, owner.count == model.parameterCount else { return nil }
        let e = TestEvaluation(model: network(task: j, of: model), samples: samples, route: model.routeCount > 1 ? j : 0,
                               workspace: ws)
        return Predictions(classes: e.predictions, scores: e.scores)
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "prune_fraction": .double(options.pruneFraction), "retrain_fraction": .double(options.retrainFraction),
            "prunable_weights": .int(Int64(prunableCount)),
        ], arrays: [
            "free_fraction": PluginReport.Array(values: freeFraction, attributes: [
                "meaning": .string("fraction of the prunable weights still free (trainable by later tasks) after each experience's pruning")]),
            "weights_per_task": PluginReport.Array(values: weightsPerTask.map(Double.init), attributes: [
                "meaning": .string("prunable weights each task kept and froze")]),
        ])
    }

    public func checkpointState() -> PluginState {
        PluginState(doubles: ["free_fraction": freeFraction],
                    ints: ["owner": owner.map(Int64.init), "current": [Int64(current)], "weights_per_task": weightsPerTask])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let o = state.ints["owner"], o.count == owner.count else {
            throw CheckpointError.mismatch("packnet: the checkpoint's weight owners do not match this model")
        }
        owner = o.map { Int32(clamping: $0) }
        current = Int(state.ints["current"]?.first ?? -1)
        weightsPerTask = state.ints["weights_per_task"] ?? []
        freeFraction = state.doubles["free_fraction"] ?? []
        keep = [Bool](repeating: true, count: owner.count)
        pruned = false
    }

    /// `{"type": "packnet", "prune_fraction": 0.5, "retrain_fraction": 0.25}`
    public struct Options: PluginOptions {
        public static let typeName = "packnet"
        public static let summary = "PackNet (Mallya & Lazebnik 2018): prune each task's weights by magnitude, retrain, freeze; per-task masks"
        /// Fraction of the weights a task trained that pruning frees for later tasks.
        public var pruneFraction: Double = 0.5
        /// Fraction of each experience's planned steps spent retraining after pruning.
        public var retrainFraction: Double = 0.25

        public init() {}

        enum CodingKeys: String, CodingKey, CaseIterable {
            case pruneFraction = "prune_fraction", retrainFraction = "retrain_fraction"
        }

        public init(from decoder: any Decoder) throws {
            let k = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            pruneFraction = try k.decode(.pruneFraction, default: 0.5)
            retrainFraction = try k.decode(.retrainFraction, default: 0.25)
            try k.require(pruneFraction > 0 && pruneFraction < 1, .pruneFraction,
                          "must be in (0, 1): the fraction of a task's weights freed for later tasks, got \(pruneFraction)")
            try k.require(retrainFraction >= 0 && retrainFraction < 1, .retrainFraction,
                          "must be in [0, 1): the share of each experience's steps spent retraining after pruning, got \(retrainFraction)")
        }

        public func encode(to encoder: any Encoder) throws {
            var k = encoder.container(keyedBy: CodingKeys.self)
            try k.encode(pruneFraction, forKey: .pruneFraction)
            try k.encode(retrainFraction, forKey: .retrainFraction)
        }

        public var usesTaskIdentityAtTest: Bool { true }
        public var taskIdentityUse: String { "packnet evaluates each experience with the weights of the tasks up to its own, chosen by its identity" }
        public static var composition: PluginComposition {
            .alone(reason: "it decides which weights each task trains and which weights predict each task")
        }
        public var predictionExport: PredictionExport {
            .refused("packnet predicts task t with the weights of tasks ≤ t only (later tasks' weights set to 0); the stored network "
                + "holds every task's weights, so no single exported network reproduces the evaluated predictions")
        }
        public func makePlugin() -> any StrategyPlugin { PackNet(options: self) }
    }
}
