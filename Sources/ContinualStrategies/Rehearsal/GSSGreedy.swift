import ContinualCore

/// GSS-greedy, gradient-based sample selection (Aljundi, Lin, Goujaud & Bengio, NeurIPS 2019,
/// "Gradient based sample selection for online continual learning", Sec. 3.3, Algorithm 2):
/// experience replay whose buffer admits the samples whose gradients point away from those of
/// the samples it already holds, so the buffer keeps a diverse set of gradient directions.
///
/// Per step, with θ the current parameters and g(x, y) = ∇_θ ℓ(f_θ(x), y):
/// 1. `replay_per_batch` stored samples, drawn uniformly without replacement, are appended to the
///    batch (plain experience replay, as in the paper's experiments).
/// 2. G = {G_1 … G_n}: n = `memory_gradients` disjoint random subsets of `memory_subset` stored
///    samples each, G_i the mean gradient of subset i.
/// 3. Each own row gets the score c = max_i cos(g(x, y), G_i) + 1 ∈ [0, 2]. While the buffer has
///    room the row is stored with its score. Once full, an eligible row draws a slot i with
///    probability C_i / Σ_j C_j and replaces it with probability C_i / (C_i + c), taking its score;
///    `gate` says which rows are eligible: `"sample"` (Algorithm 2): rows with c < 1, whose
///    gradient has negative cosine with every G_i; `"batch"` (the authors' code and Avalanche's
///    `GSS_greedyPlugin`): every row, when the batch's mean gradient has negative cosine with
///    every G_i, else none.
///
/// Choices the paper leaves open, and ours (defaults: the authors' Disjoint MNIST script, n = 10
/// subsets of 10, batch gate; `"gate": "sample", "memory_subset": 1` is Algorithm 2 as printed):
/// - G is built once per batch, as in the authors' code, so rows admitted by a batch join it
///   from the next one; with fewer than n × `memory_subset` stored samples there are fewer
///   subsets (at least one, of at most the stored count).
/// - ℓ is the model's own training loss (softmax cross-entropy over every output; the sigmoid's
///   for binary heads) through the sample's route, and the gradient covers every parameter of the
///   flat vector (a head the sample does not use contributes zeros). A zero vector has cosine 0.
/// - The first rows ever stored, with nothing to compare against, get c = 1.1 (the authors'
///   code stores cosine 0.1 for the first batch). Scores are never recomputed (paper and code).
/// - The slot is drawn ∝ C_i, row by row (the paper); the authors' code min-max normalises the
///   scores and draws the batch's slots without replacement.
/// - Each training row is offered once, as it is first trained (the first epoch; later epochs
///   only replay), after the step's replay draw: the paper's online stream sees each sample once,
///   and `replay`'s `"update": "stream"` does the same.
public struct GSSGreedy: StepObserver {
    public var name: String { Options.typeName }
    public let options: Options
    var buffer = LogitReservoir(dimension: 0, logitCount: 1, capacity: 0)
    /// C_i of every stored sample: max cosine + 1 at its admission.
    public internal(set) var scores: [Float] = []
    var streams = ReservoirStreams()
    /// The model at the current parameters (θ), followed through `afterStep`.
    var current: MLP?
    var workspace: Workspace?
    /// The scores of the last batch's own rows (for tests and reports).
    public private(set) var lastScores: [Double] = []
    var counts = Counts()
    var batchSize = 1
    /// Rows of the current experience not yet offered (its first epoch).
    var streamRemaining = 0

    /// What happened to the rows offered so far.
    struct Counts: Equatable {
        var appended = 0, replaced = 0, gated = 0, declined = 0
        /// Training rows of the latest experience (each offered once): the cost model's basis.
        var experienceRows = 0
        var values: [Int64] { [appended, replaced, gated, declined, experienceRows].map(Int64.init) }
    }

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        buffer = LogitReservoir(dimension: context.dimension, logitCount: model.logitCount, capacity: options.capacity)
        scores = []
        streams = ReservoirStreams(context, plugin: "gss")
        current = model
        workspace = model.makeWorkspace(capacity: 1)
        (lastScores, counts) = ([], Counts())
        batchSize = context.training.batchSize
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        // A model that grew (another plugin's columns or adapters) needs a workspace of its layers.
        if workspace == nil || model.parameterCount != current?.parameterCount { workspace = model.makeWorkspace(capacity: 1) }
        current = model
    }

    public mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        streamRemaining = samples.count
        counts.experienceRows = samples.count
    }

    /// Keeps θ: the parameters the next step starts from.
    public mutating func afterStep(_ step: StepObservation) {
        guard current != nil, step.parametersAfter.count == current!.parameterCount else { return }
        current!.parameters.withUnsafeMutableBufferPointer { _ = $0.update(from: step.parametersAfter) }
    }

    /// Appends the replayed rows, then offers the own rows of the first epoch to the admission.
    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        let own = batch.ownCount
        if buffer.count > 0 {
            for slot in buffer.draw(min(options.replayPerBatch, buffer.count), rng: &streams.batch) {
                batch.append(features: buffer.row(slot), label: buffer.labels[slot], route: buffer.routes[slot])
            }
        }
        lastScores = []
        let offered = min(own, streamRemaining)
        streamRemaining -= offered
        guard offered > 0, let model = current, let ws = workspace else { return }
        // A row without a label has no loss to take a gradient of: it is not offered.
        let rows = (0..<offered).filter { batch.labels[$0] >= 0 }
        let memory = memoryGradients(model, ws)
        var mean = [Float](repeating: 0, count: memory.isEmpty ? 0 : model.parameterCount)
        for i in rows {
            guard !memory.isEmpty else { lastScores.append(Self.score([], against: [])); continue }
            let g = Self.gradient(model, features: batch.row(i), label: batch.labels[i], route: batch.routes[i], ws)
            lastScores.append(Self.score(g, against: memory))
            for j in mean.indices { mean[j] += g[j] / Float(rows.count) }
        }
        let batchOpposed = !memory.isEmpty && Self.score(mean, against: memory) < 1
        for (k, i) in rows.enumerated() {
            let c = lastScores[k]
            offer(features: batch.row(i), label: batch.labels[i], route: batch.routes[i], score: c,
                  eligible: options.gate == .sample ? c < 1 : batchOpposed)
        }
    }

    /// G: the mean gradients of up to `memory_gradients` disjoint random subsets of the buffer.
    mutating func memoryGradients(_ model: MLP, _ ws: Workspace) -> [[Float]] {
        guard buffer.count > 0 else { return [] }
        let size = min(options.memorySubset, buffer.count)
        let n = max(1, min(options.memoryGradients, buffer.count / size))
        let slots = buffer.draw(n * size, rng: &streams.buffer)
        return (0..<n).map { i in
            var g = [Float](repeating: 0, count: model.parameterCount)
            for slot in slots[(i * size)..<((i + 1) * size)] {
                Self.addGradient(model, features: buffer.row(slot), label: buffer.labels[slot], route: buffer.routes[slot],
                                 scale: 1 / Float(size), ws, into: &g)
            }
            return g
        }
    }

    /// Algorithm 2's admission of one row with score `c`, `eligible` for replacement by the gate.
    mutating func offer(features: ArraySlice<Float>, label: Int32, route: Int32, score c: Double, eligible: Bool) {
        buffer.offered += 1
        switch Self.admission(score: c, eligible: eligible, scores: scores, capacity: options.capacity, rng: &streams.buffer) {
        case .append:
            buffer.features.append(contentsOf: features)
            buffer.labels.append(label)
            buffer.routes.append(route)
            scores.append(Float(c))
            counts.appended += 1
        case .replace(let slot):
            let d = buffer.dimension
            buffer.features.replaceSubrange((slot * d)..<((slot + 1) * d), with: features)
            buffer.labels[slot] = label
            buffer.routes[slot] = route
            scores[slot] = Float(c)
            counts.replaced += 1
        case .gated: counts.gated += 1
        case .declined: counts.declined += 1
        }
    }

    /// The outcome of offering a row with score `c` to a buffer whose samples score `scores`.
    enum Admission: Equatable {
        case append, replace(Int)
        /// Full buffer, and the gate found the row (or its batch) not opposed to every G_i.
        case gated
        /// Full buffer, an eligible row, but the coin kept the drawn slot.
        case declined
    }

    /// Draws from `rng` only for an eligible row and a full buffer: the slot ∝ C_i, then the coin.
    static func admission(score c: Double, eligible: Bool, scores: [Float], capacity: Int, rng: inout RandomSource) -> Admission {
        guard scores.count >= capacity else { return .append }
        guard eligible else { return .gated }
        let total = scores.reduce(0.0) { $0 + Double($1) }
        var slot = scores.count - 1
        if total > 0 {
            var u = rng.uniform() * total
            for (i, s) in scores.enumerated() {
                u -= Double(s)
                if u < 0 { slot = i; break }
            }
        } else {
            slot = rng.uniformInt(below: scores.count)      // every stored score is 0: uniform
        }
        let ci = Double(scores[slot])
        let replace = ci + c > 0 ? rng.uniform() < ci / (ci + c) : rng.uniform() < 0.5
        return replace ? .replace(slot) : .declined
    }

    /// c = max_i cos(g, G_i) + 1; 1.1 with no G_i (the authors' first-batch value).
    static func score(_ g: [Float], against memory: [[Float]]) -> Double {
        guard !memory.isEmpty else { return 1.1 }
        return memory.map { cosine(g, $0) }.max()! + 1
    }

    /// Cosine similarity in float64; 0 when either vector is zero.
    static func cosine(_ a: [Float], _ b: [Float]) -> Double {
        var (ab, aa, bb) = (0.0, 0.0, 0.0)
        for i in a.indices {
            let (x, y) = (Double(a[i]), Double(b[i]))
            ab += x * y
            aa += x * x
            bb += y * y
        }
        return aa > 0 && bb > 0 ? ab / (aa.squareRoot() * bb.squareRoot()) : 0
    }

    /// ∇_θ of one sample's training loss at `model`'s parameters (every parameter).
    static func gradient(_ model: MLP, features: ArraySlice<Float>, label: Int32, route: Int32, _ ws: Workspace) -> [Float] {
        var g = [Float](repeating: 0, count: model.parameterCount)
        addGradient(model, features: features, label: label, route: route, scale: 1, ws, into: &g)
        return g
    }

    /// Adds `scale` × ∇_θ of one sample's training loss into `g`.
    static func addGradient(_ model: MLP, features: ArraySlice<Float>, label: Int32, route: Int32, scale: Float,
                            _ ws: Workspace, into g: inout [Float]) {
        let x = Array(features), y = [label]
        g.withUnsafeMutableBufferPointer { gp in
            x.withUnsafeBufferPointer { xp in
                y.withUnsafeBufferPointer { yp in
                    _ = model.lossAndGradient(features: xp.baseAddress!, labels: yp.baseAddress!, count: 1,
                                              route: Int(route), scale: scale, workspace: ws, gradient: gp.baseAddress!)
                }
            }
        }
    }
}
