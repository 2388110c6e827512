import ContinualCore

/// ER-AML, experience replay with an asymmetric metric-learning loss (Caccia, Aljundi, Asadi,
/// Tuytelaars, Pineau & Belilovsky, ICLR 2022, "New insights on reducing abrupt representation
/// change in online continual learning", Sec. 4, Eq. 4): incoming data never pushes on the old
/// classes' logits; it only pulls its penultimate features towards stored samples of its class
/// and away from stored samples of other classes, while replayed samples train the classifier.
///
/// From the second experience on, each step minimises
///
///     L_AML(incoming) + mean_{replayed rows} CE(active classes)
///
/// where, for each incoming row i with label y_i, a positive p_i (a stored sample of class y_i)
/// and a negative n_i (a stored sample of another class) are drawn uniformly from the buffer, h
/// is the L2-normalised penultimate activation h = u / (‖u‖ + 10⁻⁵), and with the contrast set
/// C = {h(p_1)…h(p_m), h(n_1)…h(n_m)} and s_ik = h(x_i)·c_k / τ,
///
///     L_AML = −(τ/τ_b) (1/m) Σ_i [ (1/|P_i|) Σ_{k∈P_i} s_ik − log Σ_{k∈C} exp(s_ik) ],
///
/// P_i the contrast samples of class y_i (the supervised-contrastive form of the authors' code
/// and Avalanche's `AMLCriterion`; gradients flow through anchors, positives and negatives).
/// Incoming rows whose class has no stored sample, or with no stored sample of another class,
/// get no loss (the authors' `invalid_idx`). During the first experience the incoming rows take
/// the plain CE (the authors' "regular training at the start"), averaged apart from the replayed
/// rows. Replayed rows: `replay_per_batch` drawn uniformly from a reservoir of `capacity` that
/// every incoming row is offered to (Algorithm R) after the step's draws.
///
/// How it sits on the hooks: the loop gives every row (1/n)(p − y) on its logits; this term
/// removes that share from incoming rows (and puts in (1/m)(p − y) during the first experience),
/// rescales replayed rows to 1/k, and adds L_AML's gradient directly into the pass's parameter
/// gradient (`BatchLossInput.parameterGradient`) from its own forward and backward passes through
/// the hidden layers. Refused: models without a hidden layer, adapters/LoRA, mixed precision.
public struct ERAML: BatchLossTerm {
    public var name: String { Options.typeName }
    public let options: Options
    var buffer = LogitReservoir(dimension: 0, logitCount: 1, capacity: 0)
    private var bufferRNG = RandomSource(seed: 0)
    private var batchRNG = RandomSource(seed: 0)
    private var pairRNG = RandomSource(seed: 0)
    /// The hidden layers as a network whose "logits" are the last hidden pre-activations.
    private var features: MLP?
    private var activation = Activation.relu
    private var workspace: Workspace?
    private var replayed = 0
    private var experience = 0
    private var amlRows = 0

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        features = try model.penultimateNetwork(for: "er_aml's metric loss", training: context.training)
        activation = model.spec.activation
        workspace = features!.makeWorkspace(capacity: 3 * context.training.batchSize)
        buffer = LogitReservoir(dimension: context.dimension, logitCount: model.logitCount, capacity: options.capacity)
        bufferRNG = context.randomSource("er_aml.buffer")
        batchRNG = context.randomSource("er_aml.batch")
        pairRNG = context.randomSource("er_aml.pairs")
    }

    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        experience = context.index
        replayed = 0
        guard buffer.count > 0 else { return }
        for slot in buffer.draw(options.replayPerBatch, rng: &batchRNG) {
            batch.append(features: buffer.row(slot), label: buffer.labels[slot], route: buffer.routes[slot])
            replayed += 1
        }
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        let L = input.logitCount, own = input.batch.ownCount, scale = Double(input.scale)
        let metric = experience > 0 && input.parameterGradient != nil
        var value = 0.0
        var anchors: [Int] = []
        for (k, row) in input.rows.enumerated() {
            let z = input.logits + k * L, g = input.logitGradient + k * L
            let label = Int(input.batch.labels[row])
            guard label >= 0, label < max(L, 2), row < own + replayed else { continue }
            let loop = RowLoss.loopCrossEntropy(z, L: L, label: label, active: input.activeClasses)
            let loopGrad = RowLoss.ceGradient(loop.p, label: label)
            let w = row >= own ? 1 / Double(replayed) - scale : (metric ? -scale : 1 / Double(max(own, 1)) - scale)
            for c in 0..<L { g[c] += Float(w * loopGrad[c]) }
            value += w * loop.loss
            if row < own { anchors.append(row) }
        }
        if metric, let gradient = input.parameterGradient { value += metricLoss(anchors, input, gradient) }
        for row in anchors {
            buffer.offer(features: input.batch.row(row), label: input.batch.labels[row], route: input.batch.routes[row],
                         logits: nil, rng: &bufferRNG)
        }
        return value
    }

    /// Draws each anchor's positive and negative, then adds L_AML's gradient into `gradient`.
    private mutating func metricLoss(_ rows: [Int], _ input: BatchLossInput, _ gradient: UnsafeMutablePointer<Float>) -> Double {
        var x: [Float] = [], y: [Int32] = [], pos: [Int] = [], neg: [Int] = []
        // Stored slots by class, in slot order: a positive is the k-th slot of the row's class, a
        // negative the k-th of the others (slots of the other classes, in slot order).
        var byClass: [Int32: [Int]] = [:]
        for (slot, label) in buffer.labels.enumerated() { byClass[label, default: []].append(slot) }
        for row in rows {
            let label = input.batch.labels[row]
            let same = byClass[label] ?? []
            let others = buffer.count - same.count
            guard !same.isEmpty, others > 0 else { continue }
            x += input.batch.row(row)
            y.append(label)
            pos.append(same[pairRNG.uniformInt(below: same.count)])
            var k = pairRNG.uniformInt(below: others)
            var slot = 0
            while true {
                if buffer.labels[slot] != label {
                    if k == 0 { break }
                    k -= 1
                }
                slot += 1
            }
            neg.append(slot)
        }
        amlRows += y.count
        guard !y.isEmpty, var net = features, let ws = workspace else { return 0 }
        for slot in pos + neg { x += buffer.row(slot) }
        let labels = y + (pos + neg).map { buffer.labels[$0] }
        net.parameters.withUnsafeMutableBufferPointer { p in
            input.model.parameters.withUnsafeBufferPointer { p.baseAddress!.update(from: $0.baseAddress!, count: p.count) }
        }
        features = net
        return Self.addMetricGradient(net: net, activation: activation, x: x, labels: labels, anchors: y.count,
                                      temperature: options.temperature, baseTemperature: options.baseTemperature,
                                      workspace: ws, gradient: gradient)
    }

    /// L_AML for `anchors` rows of `x` followed by their positives and negatives; adds its
    /// gradient (w.r.t. the hidden layers' parameters, a prefix of the model's) into `gradient`.
    static func addMetricGradient(net: MLP, activation: Activation, x: [Float], labels: [Int32], anchors m: Int,
                                  temperature tau: Double, baseTemperature: Double, workspace ws: Workspace,
                                  gradient: UnsafeMutablePointer<Float>) -> Double {
        let rows = 3 * m, w = net.logitCount
        x.withUnsafeBufferPointer { net.forward($0.baseAddress!, count: rows, route: 0, workspace: ws) }
        var u = Array(UnsafeBufferPointer(start: ws.logits, count: rows * w))
        u.withUnsafeMutableBufferPointer { activation.apply($0.baseAddress!, count: rows * w) }
        let norms = (0..<rows).map { r in (0..<w).reduce(0.0) { $0 + Double(u[r * w + $1]) * Double(u[r * w + $1]) }.squareRoot() }
        let h = (0..<(rows * w)).map { Double(u[$0]) / (norms[$0 / w] + 1e-5) }
        var dh = [Double](repeating: 0, count: rows * w)
        let loss = h.withUnsafeBufferPointer { hp in
            dh.withUnsafeMutableBufferPointer { dp in
                supervisedContrastive(h: hp.baseAddress!, labels: labels, anchors: m, width: w, temperature: tau,
                                      baseTemperature: baseTemperature, gradient: dp.baseAddress!)
            }
        }
        // h = u / (n + ε): ∂/∂u = dh / (n + ε) − u (u·dh) / (n (n + ε)²); then through the activation.
        var dz = [Float](repeating: 0, count: rows * w)
        for r in 0..<rows {
            let n = norms[r], d = n + 1e-5
            let dot = (0..<w).reduce(0.0) { $0 + Double(u[r * w + $1]) * dh[r * w + $1] }
            for j in 0..<w {
                dz[r * w + j] = Float(dh[r * w + j] / d - (n > 0 ? Double(u[r * w + j]) * dot / (n * d * d) : 0))
            }
        }
        u.withUnsafeBufferPointer { uu in dz.withUnsafeMutableBufferPointer { activation.backward(outputs: uu.baseAddress!, gradient: $0.baseAddress!, count: rows * w) } }
        dz.withUnsafeMutableBufferPointer { net.backward(logitGradient: $0.baseAddress!, count: rows, route: 0, workspace: ws, gradient: gradient) }
        return loss
    }

    /// −(τ/τ_b)(1/m) Σ_i [mean_{k∈P_i} s_ik − log Σ_k exp(s_ik)] over anchors h[0..<m] and contrast
    /// h[m..<3m] (rows of `width`), s_ik = h_i·c_k / τ; adds ∂/∂h into `gradient` (same layout).
    static func supervisedContrastive(h: UnsafePointer<Double>, labels: [Int32], anchors m: Int, width w: Int,
                                      temperature tau: Double, baseTemperature: Double,
                                      gradient dh: UnsafeMutablePointer<Double>) -> Double {
        let factor = tau / baseTemperature / Double(m)
        var s = [Double](repeating: 0, count: 2 * m)
        var loss = 0.0
        for i in 0..<m {
            let a = h + i * w
            var top = -Double.infinity, positives = 0, positiveSum = 0.0
            for k in 0..<(2 * m) {
                let c = h + (m + k) * w
                var dot = 0.0
                for j in 0..<w { dot += a[j] * c[j] }
                s[k] = dot / tau
                top = max(top, s[k])
                if labels[m + k] == labels[i] {
                    positives += 1
                    positiveSum += s[k]
                }
            }
            var total = 0.0
            for k in 0..<(2 * m) { total += _exp(s[k] - top) }
            let lse = top + _log(total)
            loss -= factor * (positiveSum / Double(positives) - lse)
            for k in 0..<(2 * m) {
                // ∂ℓ/∂s_ik = −(τ/τ_b)/m · (1[k ∈ P_i]/|P_i| − softmax_k(s_i)), then s_ik = h_i·c_k/τ.
                let d = -factor * ((labels[m + k] == labels[i] ? 1 / Double(positives) : 0) - _exp(s[k] - lse)) / tau
                let c = h + (m + k) * w, da = dh + i * w, dc = dh + (m + k) * w
                for j in 0..<w {
                    da[j] += d * c[j]
                    dc[j] += d * a[j]
                }
            }
        }
        return loss
    }

    /// Stored samples; per step the replayed rows and the metric loss's 3 passes per incoming row.
    public var resources: PluginResources {
        let rows = min(buffer.count, options.replayPerBatch)
        let pass = features?.flopsPerTrainingSample ?? 0
        return PluginResources(storedSampleBytes: buffer.bytes, stateBytes: 4 * (features?.parameterCount ?? 0),
                               extraRowsPerBatch: rows, extraFLOPsPerStep: buffer.count > 0 ? 3 * 16 * pass : 0)
    }

    public func checkpointState() -> PluginState {
        var s = buffer.state()
        s.ints["rng"] = (bufferRNG.state + batchRNG.state + pairRNG.state).map { Int64(bitPattern: $0) }
        s.ints["aml_rows"] = [Int64(amlRows)]
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        try buffer.restore(state)
        guard let r = state.ints["rng"], r.count == 12, let a = state.ints["aml_rows"]?.first else {
            throw CheckpointError.mismatch("er_aml state lacks its random streams")
        }
        let u = r.map { UInt64(bitPattern: $0) }
        bufferRNG = RandomSource(state: Array(u[0..<4]))
        batchRNG = RandomSource(state: Array(u[4..<8]))
        pairRNG = RandomSource(state: Array(u[8..<12]))
        amlRows = Int(a)
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "capacity": .int(Int64(options.capacity)), "replay_per_batch": .int(Int64(options.replayPerBatch)),
            "temperature": .double(options.temperature), "base_temperature": .double(options.baseTemperature),
            "buffer_samples": .int(Int64(buffer.count)), "offered": .int(Int64(buffer.offered)),
            "metric_anchor_rows": .int(Int64(amlRows)),
            "objective": .string("experience 0: mean CE(own) + mean CE(replayed); later: SupCon(own penultimate features vs one stored positive and negative each) + mean CE(replayed, active classes)"),
        ])
    }
}

extension ERAML {
    /// `{"type": "er_aml", "capacity": 200, "replay_per_batch": 10, "temperature": 0.1}`.
    public struct Options: PluginOptions {
        public static let typeName = "er_aml"
        public static let summary = "ER-AML (Caccia 2022): metric-learning loss on incoming features, CE on replay"
        public static let storesSamples = true
        public static let composition = PluginComposition.soleRehearsal
        public var capacity = 200
        /// Replayed rows per step (the authors' buffer batch size, 10).
        public var replayPerBatch = 10
        /// τ of the similarities and τ_b of the loss's τ/τ_b factor (Avalanche's `AMLCriterion`: 0.1, 0.07).
        public var temperature = 0.1
        public var baseTemperature = 0.07

        enum Keys: String, CodingKey, CaseIterable {
            case capacity, temperature
            case replayPerBatch = "replay_per_batch"
            case baseTemperature = "base_temperature"
        }

        public init(capacity: Int = 200, replayPerBatch: Int = 10, temperature: Double = 0.1, baseTemperature: Double = 0.07) {
            (self.capacity, self.replayPerBatch, self.temperature, self.baseTemperature) = (capacity, replayPerBatch, temperature, baseTemperature)
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            capacity = try c.decode(.capacity, default: 200)
            try c.require((1...10_000_000).contains(capacity), .capacity, "capacity must be in 1...10000000, got \(capacity)")
            replayPerBatch = try c.decode(.replayPerBatch, default: 10)
            try c.require((1...100_000).contains(replayPerBatch), .replayPerBatch,
                          "replay_per_batch must be in 1...100000, got \(replayPerBatch)")
            temperature = try c.decode(.temperature, default: 0.1)
            try c.require(temperature > 0 && temperature.isFinite, .temperature, "temperature must be a finite number > 0, got \(temperature)")
            baseTemperature = try c.decode(.baseTemperature, default: 0.07)
            try c.require(baseTemperature > 0 && baseTemperature.isFinite, .baseTemperature,
                          "base_temperature must be a finite number > 0, got \(baseTemperature)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(capacity, forKey: .capacity)
            try c.encode(replayPerBatch, forKey: .replayPerBatch)
            try c.encode(temperature, forKey: .temperature)
            try c.encode(baseTemperature, forKey: .baseTemperature)
        }

        public func makePlugin() -> any StrategyPlugin { ERAML(options: self) }

        /// The buffer of `capacity` samples and `replay_per_batch` rows per batch.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(Double(capacity) * shape.sampleBytes(), key: Keys.capacity.path)],
                             extraRowsPerBatch: Double(replayPerBatch))
        }
    }
}
