import ContinualCore

/// Early exit (BranchyNet, Teerapittayanon et al. 2016): a small exit head — one dense layer
/// from the first hidden layer's outputs to the logits — trained jointly with the network, and a
/// cascade at prediction time that lets the exit answer when it is confident enough.
///
/// Choices (BranchyNet leaves them open; the alternative a user may want is an option):
/// - **Branch point**: after the first hidden layer (the cheapest point that still has a learned
///   representation); the exit head is linear (h × L weights and L biases), initialised like
///   PyTorch's `nn.Linear` (both U(−1/√h, 1/√h)) from the plugin's own random stream.
/// - **Training**: the loss is L_final + `weight` · L_exit on every batch row (BranchyNet's
///   weighted sum of the exits' losses; default weight 1), the exit loss being the model's own
///   (binary or softmax cross-entropy). `joint` true (default) back-propagates L_exit into the
///   first hidden layer; false trains the exit head alone on the frozen-for-it backbone
///   (the full path then trains exactly as without the plugin). The exit head's parameters are
///   a `ParameterBlockOwner` block: the run's optimizer and schedule update them.
/// - **Decision**: `EarlyExitCascade` (confidence `max_probability` or `entropy`, exit iff
///   τ ≤ 1 and confidence ≥ τ). The run's predictions (accuracy matrix, AUROC) are the cascade's
///   at `threshold`; `threshold` > 1 evaluates the full model.
/// - **Sweep**: after every experience the plugin evaluates the cascade on every experience's
///   test set at each τ of `thresholds` and records accuracy and exit rate ([trained × tested ×
///   τ]); the report adds the final model's pooled exit rate, FLOPs and bytes per prediction at
///   each τ (the experiment layer turns them into joules and seconds with the device profile).
///
/// Mechanics: the exit loss's gradient for the exit head goes into the block gradient in
/// `addBatchLoss`; its gradient for the first layer's weights and biases is added to the step's
/// gradient in `addPenalty` (value 0: the loss was already counted as a batch-loss term). So SI's
/// `taskGradient` does not include the exit loss, and gradient adjusters (clipping, projection)
/// see it. The hidden activations are recomputed with the model's own forward pass on the
/// plugin's workspace (bit-identical to the loop's). Refused: models whose first layer is not a
/// plain single-copy dense layer (multi-head, adapters or LoRA on it), models without a hidden
/// layer, `training.active_outputs` "seen", and gating plugins beside it are not supported.
///
/// Training cost (`resources.extraFLOPsPerStep`, per row × the batch size): the exit forward
/// (2hL + L), its weight and bias gradients (2hL + L) and, when joint, ∂h (2hL) added into the
/// first layer's backward (h): what a fused implementation adds to one training step.
public struct EarlyExit: BatchLossTerm, ParameterPenalty, ParameterBlockOwner, PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options
    /// Exit head: W [h × L] row-major, then b [L].
    public var parameterBlock: [Float] = []
    public var parameterBlockGradient: [Float] = []
    public private(set) var cascade: EarlyExitCascade?
    var hidden = 0
    var inputs = 0
    var logitCount = 0
    var batchSize = 0
    /// Index of the first layer's weights in the flat parameter vector (its biases follow).
    var firstOffset = 0
    /// First layer's gradient of this step's exit loss, [inputs × h] then [h].
    var backboneGradient: [Float] = []
    var backbonePending = false
    /// Sweep records, flattened [trained i][tested j][τ].
    var accuracyRecord: [Double] = []
    var exitRecord: [Double] = []
    /// Test-set sizes of the last recorded row (to pool the final exit rate).
    var testSizes: [Double] = []
    var rowsRecorded = 0
    var testedPerRow = 0
    private var workspace: Workspace?
    private var gathered: [Float] = []
    private var exitLogits: [Float] = []
    private var hiddenGradient: [Float] = []

    public init(options: Options) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        guard model.layers.count >= 2 else {
            throw TrainingError.invalid("early_exit: the model has no hidden layer for the exit head to branch from (model.hidden is empty)")
        }
        let first = model.layers[0]
        guard case .dense = first.kind, first.copies == 1, first.lowRank == nil, model.routeCount == 1 else {
            throw TrainingError.invalid("early_exit: needs a single-route model whose first layer is a plain dense layer (no multi_head, adapters or LoRA on it)")
        }
        guard context.training.activeOutputs == .all else {
            throw TrainingError.invalid("early_exit: training.active_outputs \"seen\" is not supported (the exit head predicts over every class)")
        }
        hidden = first.outputs
        firstOffset = first.weightOffset(route: 0)
        inputs = first.inputs
        logitCount = model.logitCount
        batchSize = context.training.batchSize
        cascade = EarlyExitCascade(model: model, rule: options.confidence)
        var rng = context.randomSource("exit_head")
        let bound = 1 / Double(hidden).squareRoot()
        parameterBlock = (0..<(hidden * logitCount + logitCount)).map { _ in Float(rng.uniform(-bound, bound)) }
        parameterBlockGradient = [Float](repeating: 0, count: parameterBlock.count)
        backboneGradient = [Float](repeating: 0, count: inputs * hidden + hidden)
    }

    private mutating func ensureWorkspace(_ model: MLP, rows: Int) -> Workspace {
        if workspace == nil { workspace = model.makeWorkspace(capacity: max(rows, 64)) }
        return workspace!
    }

    /// Exit logits (`rows × L`, into `exitLogits`) from the hidden activations `h` ([rows × hidden]).
    private mutating func exitForward(_ h: UnsafePointer<Float>, rows: Int) {
        let k = logitCount, hd = hidden
        if exitLogits.count < rows * k { exitLogits = [Float](repeating: 0, count: rows * k) }
        parameterBlock.withUnsafeBufferPointer { p in
            exitLogits.withUnsafeMutableBufferPointer { z in
                let w = p.baseAddress!, b = w + hd * k
                for r in 0..<rows {
                    for c in 0..<k { z[r * k + c] = b[c] }
                    for u in 0..<hd {
                        let a = h[r * hd + u]
                        for c in 0..<k { z[r * k + c] += a * w[u * k + c] }
                    }
                }
            }
        }
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        let n = input.rows.count
        guard n > 0 else { return 0 }
        let d = inputs, hd = hidden, k = logitCount
        if gathered.count < n * d { gathered = [Float](repeating: 0, count: n * d) }
        var labels = [Int32](repeating: 0, count: n)
        for (r, row) in input.rows.enumerated() {
            let x = input.batch.row(row)
            for (c, v) in x.enumerated() { gathered[r * d + c] = v }
            labels[r] = input.batch.labels[row]
        }
        let ws = ensureWorkspace(input.model, rows: n)
        gathered.withUnsafeBufferPointer { input.model.forward($0.baseAddress!, count: n, route: input.route, workspace: ws) }
        let h = UnsafePointer(ws.hiddenActivations(0))
        exitForward(h, rows: n)
        let scale = input.scale * Float(options.weight)
        let loss = exitLogits.withUnsafeMutableBufferPointer { z in
            labels.withUnsafeBufferPointer { Loss.lossAndLogitGradient(head: input.model.spec.head, logits: z.baseAddress!,
                                                                       labels: $0.baseAddress!, count: n, scale: scale) }
        }
        // Exit head gradients: dW = hᵀ·dz, db = Σ dz.
        exitLogits.withUnsafeBufferPointer { dz in
            parameterBlockGradient.withUnsafeMutableBufferPointer { g in
                for r in 0..<n {
                    for u in 0..<hd {
                        let a = h[r * hd + u]
                        for c in 0..<k { g[u * k + c] += a * dz[r * k + c] }
                    }
                    for c in 0..<k { g[hd * k + c] += dz[r * k + c] }
                }
            }
        }
        if options.joint {
            if hiddenGradient.count < n * hd { hiddenGradient = [Float](repeating: 0, count: n * hd) }
            let first = input.model.layers[0]
            exitLogits.withUnsafeBufferPointer { dz in
                parameterBlock.withUnsafeBufferPointer { w in
                    hiddenGradient.withUnsafeMutableBufferPointer { dh in
                        for r in 0..<n {
                            for u in 0..<hd {
                                var s: Float = 0
                                for c in 0..<k { s += dz[r * k + c] * w[u * k + c] }
                                dh[r * hd + u] = s
                            }
                        }
                        first.activation.backward(outputs: h, gradient: dh.baseAddress!, count: n * hd)
                        gathered.withUnsafeBufferPointer { x in
                            backboneGradient.withUnsafeMutableBufferPointer { g in
                                for r in 0..<n {
                                    for i in 0..<d {
                                        let xi = x[r * d + i]
                                        for u in 0..<hd { g[i * hd + u] += xi * dh[r * hd + u] }
                                    }
                                    for u in 0..<hd { g[d * hd + u] += dh[r * hd + u] }
                                }
                            }
                        }
                    }
                }
            }
            backbonePending = true
        }
        return Double(input.scale) * options.weight * loss
    }

    /// Adds the exit loss's first-layer gradient of this step (computed in `addBatchLoss`).
    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>, gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        guard backbonePending else { return 0 }
        // A single-copy dense first layer (checked in `prepare`): weights, then biases.
        for i in backboneGradient.indices {
            gradient[firstOffset + i] += backboneGradient[i]
            backboneGradient[i] = 0
        }
        backbonePending = false
        return 0
    }

    /// Both heads' logits of `samples` (row-major, `logitCount` per row).
    mutating func bothHeads(model: MLP, samples: Samples) -> (exitLogits: [Float], fullLogits: [Float]) {
        let n = samples.count, k = logitCount
        var ex = [Float](repeating: 0, count: n * k), full = ex
        let chunk = 256
        let ws = ensureWorkspace(model, rows: chunk)
        samples.features.withUnsafeBufferPointer { xs in
            var start = 0
            while start < n {
                let m = min(chunk, n - start)
                model.forward(xs.baseAddress! + start * samples.dimension, count: m, route: 0, workspace: ws)
                for i in 0..<(m * k) { full[start * k + i] = ws.logits[i] }
                exitForward(UnsafePointer(ws.hiddenActivations(0)), rows: m)
                for i in 0..<(m * k) { ex[start * k + i] = exitLogits[i] }
                start += m
            }
        }
        return (ex, full)
    }

    public mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int, workspace: Workspace) -> Predictions? {
        guard let cascade, samples.count > 0 else { return nil }
        let (ex, full) = bothHeads(model: model, samples: samples)
        let d = cascade.decide(exitLogits: ex, fullLogits: full, count: samples.count, threshold: options.threshold)
        return Predictions(classes: d.classes, scores: d.scores)
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        guard let cascade else { return }
        let taus = options.thresholds
        testSizes = []
        for e in context.experiences {
            let n = e.test.count
            testSizes.append(Double(n))
            guard n > 0 else {
                accuracyRecord += [Double](repeating: .nan, count: taus.count)
                exitRecord += [Double](repeating: .nan, count: taus.count)
                continue
            }
            let (ex, full) = bothHeads(model: model, samples: e.test)
            for tau in taus {
                let dec = cascade.decide(exitLogits: ex, fullLogits: full, count: n, threshold: tau)
                var correct = 0, exited = 0
                for i in 0..<n {
                    if dec.classes[i] == e.test.labels[i] { correct += 1 }
                    if dec.exited[i] { exited += 1 }
                }
                accuracyRecord.append(Double(correct) / Double(n))
                exitRecord.append(Double(exited) / Double(n))
            }
        }
        testedPerRow = context.experiences.count
        rowsRecorded += 1
    }

    /// The final model's exit rate at each τ, pooled over every test sample.
    public var finalExitRates: [Double] {
        let t = options.thresholds.count
        guard rowsRecorded > 0 else { return [] }
        let base = (rowsRecorded - 1) * testedPerRow * t
        let total = testSizes.reduce(0, +)
        return (0..<t).map { q in
            var s = 0.0
            for j in 0..<testedPerRow where testSizes[j] > 0 { s += exitRecord[base + j * t + q] * testSizes[j] }
            return total > 0 ? s / total : .nan
        }
    }

    public func report() -> PluginReport {
        let taus = options.thresholds, t = taus.count
        var attributes: [String: PluginReport.Value] = [
            "confidence": .string(options.confidence.rawValue), "weight": .double(options.weight),
            "threshold": .double(options.threshold), "joint": .int(options.joint ? 1 : 0),
            "branch": .string("exit head (one dense layer to the logits) after the first hidden layer"),
            "exit_head_parameters": .int(Int64(parameterBlock.count)),
            "sweep_record_bytes": .int(Int64(sweepRecordBytes)),
            "reported_costs": .string("per prediction, mean over the final model's test samples: first layer + exit head + (1 - exit rate) x the rest; tau > 1 runs the full model only; the confidence computation is not counted"),
        ]
        var arrays: [String: PluginReport.Array] = [
            "thresholds": .init(values: taus),
            "accuracy": .init(values: accuracyRecord, shape: [rowsRecorded, testedPerRow, t],
                              attributes: ["meaning": .string("cascade accuracy on test set j after training experience i, at each threshold")]),
            "exit_rate": .init(values: exitRecord, shape: [rowsRecorded, testedPerRow, t],
                               attributes: ["meaning": .string("fraction of test set j answered by the exit head after training experience i")]),
        ]
        if let cascade {
            attributes["full_flops_per_prediction"] = .int(Int64(cascade.fullFLOPs))
            attributes["exit_path_flops_per_prediction"] = .int(Int64(cascade.firstLayerFLOPs + cascade.exitHeadFLOPs))
            attributes["full_bytes_per_prediction"] = .int(Int64(cascade.fullBytes))
            let rates = finalExitRates
            if rates.count == t {
                arrays["final_exit_rate"] = .init(values: rates)
                arrays["flops_per_prediction"] = .init(values: zip(taus, rates).map { cascade.flopsPerPrediction(threshold: $0, exitRate: $1) })
                arrays["bytes_per_prediction"] = .init(values: zip(taus, rates).map { cascade.bytesPerPrediction(threshold: $0, exitRate: $1) })
            }
        }
        return PluginReport(attributes: attributes, arrays: arrays)
    }

    public func checkpointState() -> PluginState {
        PluginState(floats: ["block": parameterBlock],
                    doubles: ["accuracy": accuracyRecord, "exit": exitRecord, "test_sizes": testSizes],
                    ints: ["rows": [Int64(rowsRecorded), Int64(testedPerRow)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let b = state.floats["block"], b.count == parameterBlock.count, let rows = state.ints["rows"], rows.count == 2 else {
            throw CheckpointError.mismatch("early_exit: the checkpoint's exit head does not match this model")
        }
        parameterBlock = b
        accuracyRecord = state.doubles["accuracy"] ?? []
        exitRecord = state.doubles["exit"] ?? []
        testSizes = state.doubles["test_sizes"] ?? []
        rowsRecorded = Int(rows[0])
        testedPerRow = Int(rows[1])
    }

    /// Exit-head FLOPs one training row adds (see the type's comment).
    var trainingFLOPsPerRow: Int {
        let hk = hidden * logitCount
        return 2 * hk + logitCount + 2 * hk + logitCount + (options.joint ? 2 * hk + hidden : 0)
    }

    /// Bytes of the τ-sweep records (8 per value): kept by the study's measurement, not by a
    /// deployed cascade; counted in `resources` (hence in peak memory) like any plugin state.
    var sweepRecordBytes: Int { 8 * (accuracyRecord.count + exitRecord.count + testSizes.count) }

    public var resources: PluginResources {
        PluginResources(stateBytes: PluginResources.floatBytes(parameterBlock.count) + sweepRecordBytes,
                        extraFLOPsPerStep: batchSize * trainingFLOPsPerRow,
                        ownedParameters: parameterBlock.count)
    }
}

extension EarlyExit {
    /// `{"type": "early_exit", "weight": 1, "confidence": "max_probability", "threshold": 0.9,
    /// "thresholds": [0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1, 1.1], "joint": true}`
    public struct Options: PluginOptions {
        public static let typeName = "early_exit"
        public static let summary = "BranchyNet exit head after the first hidden layer; the exit answers when its confidence reaches a threshold"
        public static let defaultThresholds: [Double] = [0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1, 1.1]
        /// Weight of the exit loss in L_final + weight · L_exit.
        public var weight: Double = 1
        public var confidence: EarlyExitCascade.Confidence = .maxProbability
        /// τ of the run's own predictions (> 1: the full model).
        public var threshold: Double = 0.9
        /// τ values of the recorded sweep.
        public var thresholds: [Double] = Options.defaultThresholds
        /// Whether the exit loss trains the first hidden layer too (BranchyNet) or the exit head only.
        public var joint = true

        public init(weight: Double = 1, confidence: EarlyExitCascade.Confidence = .maxProbability, threshold: Double = 0.9,
                    thresholds: [Double] = Options.defaultThresholds, joint: Bool = true) {
            self.weight = weight
            self.confidence = confidence
            self.threshold = threshold
            self.thresholds = thresholds
            self.joint = joint
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case weight, confidence, threshold, thresholds, joint }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            weight = try c.decode(.weight, default: 1)
            confidence = try c.decodeChoice(.confidence, default: .maxProbability)
            threshold = try c.decode(.threshold, default: 0.9)
            thresholds = try c.decode(.thresholds, default: Options.defaultThresholds)
            joint = try c.decode(.joint, default: true)
            try c.require(weight.isFinite && weight > 0 && weight <= 1000, .weight, "must be in (0, 1000], got \(weight) (the exit head trains only through its weighted loss)")
            try c.require(threshold.isFinite && threshold >= 0, .threshold, "must be ≥ 0 (0: the exit head answers every sample; > 1: the full model), got \(threshold)")
            try c.require(!thresholds.isEmpty && thresholds.count <= 1000, .thresholds, "must list 1…1000 values, got \(thresholds.count)")
            if let bad = thresholds.firstIndex(where: { !$0.isFinite || $0 < 0 }) {
                try c.require(false, .thresholds, "[\(bad)] must be ≥ 0, got \(thresholds[bad])")
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(weight, forKey: .weight)
            try c.encode(confidence, forKey: .confidence)
            try c.encode(threshold, forKey: .threshold)
            try c.encode(thresholds, forKey: .thresholds)
            try c.encode(joint, forKey: .joint)
        }

        public func makePlugin() -> any StrategyPlugin { EarlyExit(options: self) }

        public var predictionExport: PredictionExport {
            .refused("early_exit decides each prediction between two heads (the exit head after the first hidden layer, or the full network) by the exit's confidence; an exported network holds the full path only and would not reproduce the cascade (its exit head is in the run's checkpoint state, not in the model)")
        }
    }
}
