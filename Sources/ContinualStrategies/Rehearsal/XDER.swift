import ContinualCore

/// X-DER, eXtended Dark Experience Replay (Boschini, Bonicelli, Buzzega, Porrello & Calderara,
/// TPAMI 2022, "Class-Incremental Continual Learning into the eXtended DER-verse"), as in
/// Mammoth's `models/xder.py`: DER++'s replay terms on a class-balanced buffer whose stored
/// logits are rewritten when the model learns more.
///
/// - **Loss per step**: DER++'s, `mean CE(own) + α · MSE(z, z*) + β · CE(replayed labels)`, the
///   very terms of `derpp` (`DarkExperienceReplay`, two independent draws of `replay_per_batch`
///   stored rows), on X-DER's buffer.
/// - **Buffer** (Mammoth's `end_task`): filled at the end of each experience, never during it.
///   With K classes seen so far, each class keeps its first m = ⌊`capacity` / K⌋ entries; the
///   classes of the experience then get m − (entries kept) new ones each, and the slots left over
///   go one each to the experience's classes in a seeded random order; new entries are the
///   experience's training rows in a seeded random order, stored with the logits of the model
///   at the end of the experience.
/// - **Past update** (on insertion): for a new entry of class y, the block P of classes learned in
///   earlier experiences is rescaled if it dominates the target: with g = z_y, M = max_{c∈P} z_c,
///   if M > g then z_c ← z_c · γ·g / M for c ∈ P (Mammoth's `update_logits`; the block's maximum
///   becomes γ·g). Classes outside P (the target, its experience's classes, unseen ones) keep the
///   model's logits.
/// - **Future update** (`future_update`, at the end of each experience, after the buffer is cut to
///   its new per-class share and before the new entries): for every entry stored in an earlier
///   experience, its stored logits of the classes first learned in this experience (F) are
///   overwritten with the current model's logits on them, rescaled by the same rule against the
///   *stored* target logit g: if max_{c∈F} z_c > g, the block is multiplied by γ·g / max. Every
///   other stored logit stays bit-identical.
///
/// Choices the paper leaves open or this toolkit changes, and ours (recorded in `report()`):
/// Mammoth's multiplicative rule flips signs when g ≤ 0 (the block's maximum would not stay
/// below g), so there the block is shifted instead, z_c ← z_c − (2 − γ)(M − g), which puts its
/// maximum at g − (1 − γ)(M − g) < g; with g > 0 the rule is Mammoth's exactly. The future update
/// covers the classes learned by now (F), not Mammoth's untrained future heads. Not reproduced:
/// the SimCLR consistency term and the future-head pre-training (they need image augmentations
/// this tabular setting lacks), the future/past margin constraints, the per-step stochastic
/// refresh of replayed entries (the experience-end update alone), Mammoth's restriction of the
/// stream CE to the current classes and of the buffer CE to past classes (the loop's CE and
/// DER++'s full-softmax CE instead), and batch-norm alignment (no batch norm here).
/// Class-incremental: one multi-class head (binary and multi-head models are refused in `prepare`).
public struct XDER: BatchLossTerm {
    public var name: String { Options.typeName }
    public let options: Options
    /// The DER++ terms and the buffer (never offered own rows: X-DER fills it itself).
    var der: DarkExperienceReplay
    /// Per class: the experience that first brought it (−1: not yet seen).
    var learnedAt: [Int] = []
    /// Per buffer entry: the experience at whose end it was stored.
    var storedAt: [Int32] = []
    var rng = RandomSource(seed: 0)
    /// Per experience: entries whose logits the future update rewrote, new entries, new entries
    /// the past update rescaled, and rows (of either update) shifted because g ≤ 0.
    var history: [[Double]] = []
    var flopsPerPrediction = 0

    public init(options: Options = Options()) {
        self.options = options
        der = DarkExperienceReplay(plusPlus: true, alpha: options.alpha, beta: options.beta, capacity: options.capacity,
                                   replayPerBatch: options.replayPerBatch, streamName: "xder", offersOwnRows: false)
    }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        let k = try ExemplarSets.classCount(method: "xder", head: context.head, model: model)
        try der.prepare(model: &model, context: context)
        learnedAt = Array(repeating: -1, count: k)
        (storedAt, history) = ([], [])
        rng = context.randomSource("xder.fill")
        flopsPerPrediction = model.flopsPerPrediction
    }

    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        der.extendBatch(&batch, context: context)
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double { der.addBatchLoss(input) }

    /// Mammoth's `update_logits` for one row: `stored` takes `current`'s logits on `block`,
    /// rescaled so their maximum stays below the stored target logit `stored[label]` (see the type's
    /// doc comment). Returns 0 (unchanged scale), 1 (scaled) or 2 (shifted, g ≤ 0).
    @discardableResult
    static func implant(_ stored: UnsafeMutablePointer<Float>, current: UnsafePointer<Float>, label: Int,
                        block: [Int], gamma: Double) -> Int {
        guard !block.isEmpty else { return 0 }
        let g = stored[label]
        var m = -Float.infinity
        for c in block { m = max(m, current[c]) }
        guard m > g else {
            for c in block { stored[c] = current[c] }
            return 0
        }
        if g > 0 {
            let coeff = Float(gamma) * g / m
            for c in block { stored[c] = current[c] * coeff }
            return 1
        }
        let shift = Float(2 - gamma) * (m - g)
        for c in block { stored[c] = current[c] - shift }
        return 2
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace ws: Workspace) throws {
        let t = context.index, train = context.experience.train
        var present = Set<Int>()
        for y in train.labels where y >= 0 && Int(y) < learnedAt.count { present.insert(Int(y)) }
        let past = learnedAt.indices.filter { learnedAt[$0] >= 0 && learnedAt[$0] < t }
        for c in present where learnedAt[c] < 0 { learnedAt[c] = t }
        let fresh = learnedAt.indices.filter { learnedAt[$0] == t }
        var record = [0.0, 0, 0, 0]
        reduce()
        if options.futureUpdate { futureUpdate(model: model, classes: fresh, experience: t, workspace: ws, record: &record) }
        insert(from: train, classes: present.sorted(), past: past, model: model, experience: t, workspace: ws, record: &record)
        history.append(record)
    }

    /// The future update over every entry stored before experience `t`.
    mutating func futureUpdate(model: MLP, classes: [Int], experience t: Int, workspace ws: Workspace, record: inout [Double]) {
        let buffer = der.buffer, L = buffer.logitCount
        guard !classes.isEmpty, buffer.count > 0 else { return }
        let samples = Samples(dimension: buffer.dimension, features: buffer.features, labels: buffer.labels)
        let current = BiC.logits(model: model, samples: samples, workspace: ws)
        current.withUnsafeBufferPointer { z in
            der.buffer.logits.withUnsafeMutableBufferPointer { stored in
                for e in 0..<buffer.count where storedAt[e] < Int32(t) {
                    let kind = Self.implant(stored.baseAddress! + e * L, current: z.baseAddress! + e * L,
                                            label: Int(buffer.labels[e]), block: classes, gamma: options.gamma)
                    record[0] += 1
                    if kind == 2 { record[3] += 1 }
                }
            }
        }
    }

    /// Keeps each class's first ⌊capacity / classes seen⌋ entries, in buffer order.
    mutating func reduce() {
        let seen = learnedAt.lazy.filter { $0 >= 0 }.count
        let m = seen == 0 ? 0 : options.capacity / seen
        let old = der.buffer, L = old.logitCount, d = old.dimension
        var kept = LogitReservoir(dimension: d, logitCount: L, capacity: old.capacity)
        kept.offered = old.offered
        var counts = [Int](repeating: 0, count: learnedAt.count)
        var tags: [Int32] = []
        for e in 0..<old.count where counts[Int(old.labels[e])] < m {
            counts[Int(old.labels[e])] += 1
            kept.features += old.row(e)
            kept.labels.append(old.labels[e])
            kept.routes.append(old.routes[e])
            kept.logits += old.logits[(e * L)..<((e + 1) * L)]
            tags.append(storedAt[e])
        }
        (der.buffer, storedAt) = (kept, tags)
    }
}

extension XDER {
    /// Each class in `classes` gets m − (entries kept) new entries, the leftover slots one each in
    /// a seeded order; rows are taken in a seeded random order and stored with the model's logits
    /// after the past update against the classes learned before experience `t`.
    mutating func insert(from train: Samples, classes: [Int], past: [Int], model: MLP, experience t: Int,
                         workspace ws: Workspace, record: inout [Double]) {
        let seen = learnedAt.lazy.filter { $0 >= 0 }.count
        guard !classes.isEmpty, seen > 0, train.count > 0 else { return }
        let m = options.capacity / seen
        var counts = [Int](repeating: 0, count: learnedAt.count)
        for y in der.buffer.labels { counts[Int(y)] += 1 }
        var quota = [Int](repeating: 0, count: learnedAt.count)
        for c in classes { quota[c] = max(0, m - counts[c]) }
        var leftover = options.capacity - der.buffer.count - quota.reduce(0, +)
        var order = classes
        for i in order.indices.dropLast() { order.swapAt(i, i + rng.uniformInt(below: order.count - i)) }
        while leftover > 0 {
            for c in order where leftover > 0 { quota[c] += 1; leftover -= 1 }
        }
        var rows = Array(0..<train.count)
        for i in rows.indices.dropLast() { rows.swapAt(i, i + rng.uniformInt(below: rows.count - i)) }
        var chosen: [Int] = []
        for r in rows {
            let y = Int(train.labels[r])
            guard y >= 0, y < quota.count, quota[y] > 0 else { continue }
            quota[y] -= 1
            chosen.append(r)
        }
        guard !chosen.isEmpty else { return }
        let picked = train.subset(chosen)
        var z = BiC.logits(model: model, samples: picked, workspace: ws)
        let L = der.buffer.logitCount
        z.withUnsafeMutableBufferPointer { zp in
            for k in 0..<picked.count where options.pastUpdate {
                let row = zp.baseAddress! + k * L, y = Int(picked.labels[k])
                let kind = Self.implant(row, current: UnsafePointer(row), label: y, block: past.filter { $0 != y },
                                        gamma: options.gamma)
                if kind != 0 { record[2] += 1 }
                if kind == 2 { record[3] += 1 }
            }
        }
        der.buffer.features += picked.features
        der.buffer.labels += picked.labels
        der.buffer.routes += Array(repeating: 0, count: picked.count)
        der.buffer.logits += z
        der.buffer.offered += picked.count
        storedAt += Array(repeating: Int32(t), count: picked.count)
        record[1] += Double(picked.count)
    }

    /// The buffer and DER++'s per-step replay; per experience the forward passes over the buffer
    /// (future update) and the new entries; the class and entry bookkeeping.
    public var resources: PluginResources {
        let base = der.resources
        return PluginResources(storedSampleBytes: base.storedSampleBytes,
                               stateBytes: 8 * (learnedAt.count + storedAt.count + 4 + 4 * history.count),
                               extraRowsPerBatch: base.extraRowsPerBatch, extraFLOPsPerStep: base.extraFLOPsPerStep,
                               extraFLOPsPerExperience: (der.buffer.count + options.capacity) * flopsPerPrediction)
    }

    public func checkpointState() -> PluginState {
        var s = der.checkpointState()
        s.ints["learned_at"] = learnedAt.map(Int64.init)
        s.ints["stored_at"] = storedAt.map(Int64.init)
        s.ints["rng.fill"] = rng.state.map { Int64(bitPattern: $0) }
        s.doubles["history"] = history.flatMap { $0 }
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        try der.restore(from: state)
        guard let l = state.ints["learned_at"], l.count == learnedAt.count, let e = state.ints["stored_at"],
              e.count == der.buffer.count, e.allSatisfy({ $0 >= 0 && $0 <= Int64(Int32.max) }),
              l.allSatisfy({ $0 >= -1 && $0 <= Int64(Int32.max) }), let r = state.ints["rng.fill"], r.count == 4,
              let h = state.doubles["history"], h.count % 4 == 0,
              der.buffer.labels.allSatisfy({ Int($0) < learnedAt.count }) else {
            throw CheckpointError.mismatch("xder state does not fit (\(learnedAt.count) classes, capacity \(options.capacity))")
        }
        learnedAt = l.map { Int($0) }
        storedAt = e.map { Int32($0) }
        rng = RandomSource(state: r.map { UInt64(bitPattern: $0) })
        history = stride(from: 0, to: h.count, by: 4).map { Array(h[$0..<($0 + 4)]) }
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "alpha": .double(options.alpha), "beta": .double(options.beta), "gamma": .double(options.gamma),
            "capacity": .int(Int64(options.capacity)), "replay_per_batch": .int(Int64(options.replayPerBatch)),
            "future_update": .int(options.futureUpdate ? 1 : 0), "past_update": .int(options.pastUpdate ? 1 : 0),
            "buffer_samples": .int(Int64(der.buffer.count)),
            "objective": .string("mean CE(own) + alpha * MSE(logits, stored logits) + beta * mean CE(replayed labels)"),
            "buffer": .string("class-balanced, filled at the end of each experience with the model's logits then"),
            "logit_update": .string("block c: z_c * gamma * z_y / max_block z when max > z_y and z_y > 0; "
                + "z_c - (2 - gamma)(max - z_y) when z_y <= 0 (Mammoth's rule would flip signs)"),
            "not_reproduced": .string("SimCLR consistency and future-head pre-training (need augmentations), "
                + "past/future margin constraints, per-step stochastic buffer refresh, current-class stream CE "
                + "and past-class buffer CE, batch-norm alignment"),
        ], arrays: [
            "updates": .init(values: history.flatMap { $0 }, shape: [history.count, 4], attributes: [
                "meaning": .string("per experience: entries the future update rewrote, new entries, new entries the past "
                    + "update rescaled, rows shifted because their stored target logit was <= 0")]),
        ])
    }
}
