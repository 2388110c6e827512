import ContinualCore

/// CLS-ER, complementary-learning-system experience replay (Arani, Sarfraz & Zonooz, ICLR 2022,
/// "Learning Fast, Learning Slow"): beside the working model θ_W two semantic memories are kept
/// as exponential moving averages of it, a *plastic* one updated often and a *stable* one updated
/// rarely; replayed samples pull θ_W's logits towards whichever memory is more confident in the
/// sample's true label, and the stable memory makes the predictions.
///
/// Per step, with B the incoming rows and M `replay_per_batch` rows drawn uniformly from a
/// reservoir (Algorithm R, `capacity`, offered every incoming row after the step's draw):
///
///     L = mean_{B ∪ M} CE(f(x; θ_W), y) + λ · mean_{M} mean_c (f_c(x; θ_W) − Z_c(x))²,
///     Z(x) = f(x; θ_S) if p_S(y | x) > p_P(y | x) else f(x; θ_P)
///
/// (ties go to the plastic memory, as `torch.where(p_S > p_P, stable, plastic)` in the authors'
/// code). After the optimizer step the global step count t is incremented and, each with its own
/// coin (plastic first), θ_P is updated with probability r_P and θ_S with probability r_S:
///
///     θ ← a·θ + (1 − a)·θ_W,   a = min(1 − 1/(t + 1), α)
///
/// (the warm-up `min` is the authors'). Both memories start as copies of the initial model.
/// Predictions (`inference`): the stable memory (the paper's choice), or the plastic one, or the
/// working model. Arithmetic: the EMA is float32 (a and 1 − a rounded to float once per update),
/// the consistency term float64 per row then added to the float32 logit gradient.
///
/// How it sits on the hooks: the replayed rows are appended with their labels, so the loop's
/// cross-entropy is already the mean over B ∪ M (the authors' `self.loss(outputs, labels)` over
/// the concatenated batch); this term adds only the consistency gradient 2λ(z − Z)/(|M|·C) on the
/// replayed rows, running both memories on them through the pass's route (`BatchLossTerm`), and
/// the EMA updates read the parameters after the step (`StepObserver`).
public struct CLSER: BatchLossTerm, StepObserver, PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options
    var buffer = LogitReservoir(dimension: 0, logitCount: 1, capacity: 0)
    var streams = ReservoirStreams()
    var emaRNG = RandomSource(seed: 0)
    /// The plastic and stable memories (same shape and routes as the model).
    var plastic: MLP?
    var stable: MLP?
    private var workspace: Workspace?
    /// Optimizer steps so far (the authors' `global_step`).
    var globalStep = 0
    var plasticUpdates = 0
    var stableUpdates = 0
    private var replayed = 0
    /// Replayed rows whose target came from the stable memory, and all replayed rows (for the report).
    var stableTargets = 0
    var targets = 0

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        buffer = LogitReservoir(dimension: context.dimension, logitCount: model.logitCount, capacity: options.capacity)
        streams = ReservoirStreams(context, plugin: "cls_er")
        emaRNG = context.randomSource("cls_er.ema")
        plastic = model
        stable = model
        workspace = model.makeWorkspace(capacity: max(options.replayPerBatch, 1))
    }

    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        replayed = 0
        guard buffer.count > 0 else { return }
        for slot in buffer.draw(options.replayPerBatch, rng: &streams.batch) {
            batch.append(features: buffer.row(slot), label: buffer.labels[slot], route: buffer.routes[slot])
            replayed += 1
        }
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        let L = input.logitCount, own = input.batch.ownCount
        var mine: [Int] = []   // positions in this pass of its replayed rows
        for (k, row) in input.rows.enumerated() {
            if row < own {
                buffer.offer(features: input.batch.row(row), label: input.batch.labels[row], route: input.batch.routes[row],
                             logits: nil, rng: &streams.buffer)
            } else if row < own + replayed, input.batch.labels[row] >= 0 {
                mine.append(k)
            }
        }
        guard options.regWeight > 0, !mine.isEmpty, let plastic, let stable, let ws = workspace else { return 0 }
        let x = mine.flatMap { input.features($0) }
        let zP = Self.logits(plastic, x, rows: mine.count, route: input.route, ws)
        let zS = Self.logits(stable, x, rows: mine.count, route: input.route, ws)
        let w = options.regWeight / Double(replayed * L)
        var value = 0.0
        for (i, k) in mine.enumerated() {
            let label = Int(input.batch.labels[input.rows[input.rows.startIndex + k]])
            let fromStable = Self.trueLabelProbability(zS, row: i, L: L, label: label)
                > Self.trueLabelProbability(zP, row: i, L: L, label: label)
            if fromStable { stableTargets += 1 }
            targets += 1
            let target = fromStable ? zS : zP
            let z = input.logits + k * L, g = input.logitGradient + k * L
            for c in 0..<L {
                let d = Double(z[c]) - Double(target[i * L + c])
                value += w * d * d
                g[c] += Float(2 * w * d)
            }
        }
        return value
    }

    /// `rows × L` logits of `net` on `x` through `route`.
    static func logits(_ net: MLP, _ x: [Float], rows: Int, route: Int, _ ws: Workspace) -> [Float] {
        x.withUnsafeBufferPointer { net.forward($0.baseAddress!, count: rows, route: route, workspace: ws) }
        return Array(UnsafeBufferPointer(start: ws.logits, count: rows * net.logitCount))
    }

    /// p(label | x) from one row's logits: softmax, or the sigmoid of a binary head's one logit.
    static func trueLabelProbability(_ z: [Float], row: Int, L: Int, label: Int) -> Double {
        if L == 1 {
            let s = 1 / (1 + _exp(-Double(z[row])))
            return label == 1 ? s : 1 - s
        }
        let r = z[(row * L)..<((row + 1) * L)].map(Double.init)
        let top = r.max()!
        let total = r.reduce(0) { $0 + _exp($1 - top) }
        return _exp(r[label] - top) / total
    }

    public mutating func afterStep(_ step: StepObservation) {
        globalStep += 1
        let cap = 1 - 1 / Double(globalStep + 1)
        if emaRNG.uniform() < options.plasticUpdateFrequency {
            Self.average(&plastic, toward: step.parametersAfter, alpha: min(cap, options.plasticAlpha))
            plasticUpdates += 1
        }
        if emaRNG.uniform() < options.stableUpdateFrequency {
            Self.average(&stable, toward: step.parametersAfter, alpha: min(cap, options.stableAlpha))
            stableUpdates += 1
        }
    }

    /// θ ← a·θ + (1 − a)·θ_W in float32.
    static func average(_ net: inout MLP?, toward working: UnsafeBufferPointer<Float>, alpha: Double) {
        guard var m = net else { return }
        let a = Float(alpha), b = Float(1 - alpha)
        m.parameters.withUnsafeMutableBufferPointer { p in
            for i in p.indices { p[i] = a * p[i] + b * working[i] }
        }
        net = m
    }

    public mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int, workspace: Workspace) -> Predictions? {
        let net: MLP
        switch options.inference {
        case .working: return nil
        case .plastic: net = plastic ?? model
        case .stable: net = stable ?? model
        }
        let t = TestEvaluation(model: net, samples: samples, route: net.routeCount > 1 ? experienceIndex : 0, workspace: workspace)
        return Predictions(classes: t.predictions, scores: t.scores)
    }

    /// Stored samples and the two memories; per step the replayed rows and the memories' forward passes on them.
    public var resources: PluginResources {
        let rows = min(buffer.count, options.replayPerBatch)
        let parameters = plastic?.parameterCount ?? 0
        return PluginResources(storedSampleBytes: buffer.bytes, stateBytes: PluginResources.floatBytes(2 * parameters),
                               extraRowsPerBatch: rows,
                               extraFLOPsPerStep: 2 * rows * 2 * parameters + 3 * parameters)
    }
}
