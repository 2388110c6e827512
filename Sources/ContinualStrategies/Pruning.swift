import ContinualCore

/// Pruning to a target sparsity before or between experiences, kept through later training.
///
/// - `method` `magnitude`: unstructured, layer-wise smallest |w| of every dense weight matrix
///   (Han et al. 2015); `structured`: whole hidden units (incoming weights, bias and outgoing
///   weights) of smallest incoming-weight L2 norm, the same fraction of every hidden layer
///   (a unit-level form of Li et al. 2017's norm criterion). See `PruningSelection`.
/// - `schedule` `one_shot`: prune to `sparsity` once, before experience `start_experience`, and
///   let the following training fine-tune; `progressive`: prune, fine-tune, repeat — before each
///   of the `rounds` experiences from `start_experience`, to Zhu & Gupta's (2017) cubic schedule
///   s_r = s·(1 − (1 − r/R)³), r = 1…R, so the last round reaches `sparsity`.
/// - `start_experience` 0 prunes the initial weights; k > 0 prunes between experiences k−1 and k
///   (the weights experience k−1 trained).
///
/// Pruned parameters are set to exactly 0 and their trainable-mask entries to false (the mask
/// the plugins before this one set is kept: pruning ANDs into it, so list it after mask
/// methods), so no optimizer touches them (value, momentum and moments stay as they are); after
/// each experience the plugin checks they are still exactly 0 and fails the run otherwise.
///
/// Costs: the run's FLOPs, bytes, energy and peak memory count the layers at full size —
/// ContinualKit's dense kernels multiply the zeros. The report adds what a *dense* runtime
/// running the compacted model (structured: removed units dropped, smaller layers) would cost,
/// and, separately, what only a *sparse* runtime that skips zero weights would
/// (`dense_runtime_*`, `sparse_runtime_*`; unstructured pruning saves nothing in a dense runtime).
public struct Pruning: StrategyPlugin {
    public var name: String { Options.typeName }
    public let options: Options
    /// Per parameter: pruned (empty before the first pruning).
    public private(set) var pruned: [Bool] = []
    var sparsityAt: [Double] = []
    var nonzeroAt: [Double] = []
    var denseParametersAt: [Double] = []
    var denseFLOPsAt: [Double] = []
    var sparseFLOPsAt: [Double] = []
    var fullFLOPs = 0

    public init(options: Options) { self.options = options }

    /// Target sparsity before experience `index`, or nil when no pruning happens then.
    public func target(before index: Int) -> Double? {
        let r = index - options.startExperience + 1
        switch options.schedule {
        case .oneShot: return r == 1 ? options.sparsity : nil
        case .progressive:
            guard (1...options.rounds).contains(r) else { return nil }
            let left = 1 - Double(r) / Double(options.rounds)
            return options.sparsity * (1 - left * left * left)
        }
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        if pruned.count != model.parameterCount {
            guard pruned.isEmpty else {
                throw TrainingError.invalid("pruning: the model changed size after pruning (\(pruned.count) → \(model.parameterCount) parameters)")
            }
            pruned = [Bool](repeating: false, count: model.parameterCount)
        }
        if let s = target(before: context.index) {
            switch options.method {
            case .magnitude: PruningSelection.magnitude(model, sparsity: s, pruned: &pruned)
            case .structured: PruningSelection.structured(model, sparsity: s, pruned: &pruned)
            }
        }
        if pruned.contains(true) {
            var mask = model.trainable ?? [Bool](repeating: true, count: model.parameterCount)
            for i in pruned.indices where pruned[i] {
                model.parameters[i] = 0
                mask[i] = false
            }
            model.trainable = mask
        }
        record(model)
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        for i in pruned.indices where pruned[i] && model.parameters[i] != 0 {
            throw TrainingError.invalid("pruning: parameter \(i) was pruned but is \(model.parameters[i]) after experience \(context.index) (a plugin after \"pruning\" re-enabled it: list pruning last)")
        }
    }

    /// Sparsity of the dense weight matrices and the three cost views of the current model.
    mutating func record(_ model: MLP) {
        let weights = PruningSelection.denseWeights(model)
        let total = weights.reduce(0) { $0 + $1.count }
        let zero = weights.reduce(0) { s, r in s + r.filter { pruned[$0] }.count }
        sparsityAt.append(total == 0 ? 0 : Double(zero) / Double(total))
        nonzeroAt.append(Double(pruned.filter { !$0 }.count))
        let cost = PruningCost(model: model, pruned: pruned)
        denseParametersAt.append(Double(cost.denseRuntimeParameters))
        denseFLOPsAt.append(Double(cost.denseRuntimeFLOPsPerPrediction))
        sparseFLOPsAt.append(Double(cost.sparseRuntimeFLOPsPerPrediction))
        fullFLOPs = model.flopsPerPrediction
    }

    public func report() -> PluginReport {
        PluginReport(
            attributes: [
                "method": .string(options.method.rawValue), "schedule": .string(options.schedule.rawValue),
                "target_sparsity": .double(options.sparsity), "rounds": .int(Int64(options.rounds)),
                "start_experience": .int(Int64(options.startExperience)),
                "full_flops_per_prediction": .int(Int64(fullFLOPs)),
                "reported_costs": .string("the run's costs count full-size dense layers (the kernels multiply the zeros); dense_runtime_* is the compacted model (removed units dropped) in a dense runtime; sparse_runtime_* needs a runtime that skips zero weights"),
            ],
            arrays: [
                "sparsity": .init(values: sparsityAt, attributes: ["meaning": .string("fraction of dense-layer weights pruned while training each experience")]),
                "nonzero_parameters": .init(values: nonzeroAt, attributes: ["meaning": .string("parameters not pruned (what a sparse format stores)")]),
                "dense_runtime_parameters": .init(values: denseParametersAt),
                "dense_runtime_flops_per_prediction": .init(values: denseFLOPsAt),
                "sparse_runtime_flops_per_prediction": .init(values: sparseFLOPsAt),
            ])
    }

    public func checkpointState() -> PluginState {
        PluginState(doubles: ["sparsity": sparsityAt, "nonzero": nonzeroAt, "dense_parameters": denseParametersAt,
                              "dense_flops": denseFLOPsAt, "sparse_flops": sparseFLOPsAt],
                     ints: ["pruned": pruned.map { $0 ? 1 : 0 }, "full_flops": [Int64(fullFLOPs)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let p = state.ints["pruned"], let s = state.doubles["sparsity"] else {
            throw CheckpointError.mismatch("pruning state is incomplete")
        }
        pruned = p.map { $0 != 0 }
        sparsityAt = s
        nonzeroAt = state.doubles["nonzero"] ?? []
        denseParametersAt = state.doubles["dense_parameters"] ?? []
        denseFLOPsAt = state.doubles["dense_flops"] ?? []
        sparseFLOPsAt = state.doubles["sparse_flops"] ?? []
        fullFLOPs = Int(state.ints["full_flops"]?.first ?? 0)
    }

    /// The mask lives in the model's trainable mask; the plugin keeps one flag per parameter.
    public var resources: PluginResources { PluginResources(stateBytes: pruned.count) }
}

/// Costs of a pruned model in the two runtimes that could run it.
public struct PruningCost: Sendable, Equatable {
    /// Parameters of the compacted model: every layer with the removed hidden units dropped
    /// (structured pruning); unchanged by unstructured pruning.
    public var denseRuntimeParameters: Int
    /// FLOPs per prediction of the compacted model (`MLP.flopsPerPrediction` conventions).
    public var denseRuntimeFLOPsPerPrediction: Int
    /// FLOPs per prediction when only non-pruned weights are multiplied (2 per weight) and
    /// removed units cost nothing: what a sparse kernel would do.
    public var sparseRuntimeFLOPsPerPrediction: Int

    public init(model: MLP, pruned: [Bool]) {
        let removed = PruningSelection.removedUnits(model, pruned: pruned)
        var params = 0, dense = 0, sparse = 0
        for (l, layer) in model.layers.enumerated() {
            guard case .dense = layer.kind, layer.lowRank == nil else {
                params += layer.parameterCount + layer.lowRankParametersPerCopy * (layer.lowRank?.copies ?? 0)
                let macs = layer.multiplyAddsPerSample
                dense += 2 * macs + layer.outputs * (1 + layer.activation.flopsPerUnit)
                sparse += 2 * macs + layer.outputs * (1 + layer.activation.flopsPerUnit)
                continue
            }
            let inputs = layer.inputs - (l > 0 ? removed[l - 1]?.count ?? 0 : 0)
            let outputs = layer.outputs - (removed[l]?.count ?? 0)
            params += layer.copies * (inputs * outputs + outputs)
            dense += 2 * inputs * outputs + outputs * (1 + layer.activation.flopsPerUnit)
            let w = layer.offset, b = w + layer.inputs * layer.outputs
            let liveWeights = (w..<b).filter { !pruned[$0] }.count
            let liveUnits = outputs
            sparse += 2 * liveWeights + liveUnits * (1 + layer.activation.flopsPerUnit)
        }
        denseRuntimeParameters = params
        denseRuntimeFLOPsPerPrediction = dense
        sparseRuntimeFLOPsPerPrediction = sparse
    }
}

extension Pruning {
    /// `{"type": "pruning", "method": "magnitude", "sparsity": 0.8, "schedule": "one_shot",
    /// "rounds": 3, "start_experience": 1}`
    public struct Options: PluginOptions {
        public static let typeName = "pruning"
        public static let summary = "magnitude or structured (hidden-unit) pruning, one-shot or progressive, kept exactly zero"
        public enum Method: String, Codable, CaseIterable, Sendable { case magnitude, structured }
        public enum Schedule: String, Codable, CaseIterable, Sendable {
            case oneShot = "one_shot", progressive
        }
        public var method: Method = .magnitude
        public var sparsity: Double = 0.5
        public var schedule: Schedule = .oneShot
        /// Pruning rounds of the progressive schedule (1 for one-shot).
        public var rounds = 1
        public var startExperience = 1

        public init(method: Method = .magnitude, sparsity: Double = 0.5, schedule: Schedule = .oneShot, rounds: Int = 1,
                    startExperience: Int = 1) {
            self.method = method
            self.sparsity = sparsity
            self.schedule = schedule
            self.rounds = rounds
            self.startExperience = startExperience
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case method, sparsity, schedule, rounds, startExperience = "start_experience"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            method = try c.decodeChoice(.method, default: .magnitude)
            sparsity = try c.decode(.sparsity, default: 0.5)
            schedule = try c.decodeChoice(.schedule, default: .oneShot)
            rounds = try c.decode(.rounds, default: schedule == .oneShot ? 1 : 3)
            startExperience = try c.decode(.startExperience, default: 1)
            try c.require(sparsity > 0 && sparsity < 1, .sparsity, "must be in (0, 1), got \(sparsity)")
            try c.require(rounds >= 1 && rounds <= 1000, .rounds, "must be in 1…1000, got \(rounds)")
            try c.require(schedule == .progressive || rounds == 1, .rounds, "only the progressive schedule has rounds (one_shot prunes once)")
            try c.require(startExperience >= 0, .startExperience, "must be ≥ 0, got \(startExperience)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(method, forKey: .method)
            try c.encode(sparsity, forKey: .sparsity)
            try c.encode(schedule, forKey: .schedule)
            try c.encode(rounds, forKey: .rounds)
            try c.encode(startExperience, forKey: .startExperience)
        }

        public func makePlugin() -> any StrategyPlugin { Pruning(options: self) }
    }
}
