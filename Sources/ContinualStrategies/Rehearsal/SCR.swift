import ContinualCore

/// SCR, Supervised Contrastive Replay (Mai, Li, Kim & Sanner, CVPR Workshops 2021, "Supervised
/// Contrastive Replay: Revisiting the Nearest Class Mean Classifier in Online Class-Incremental
/// Continual Learning"): a reservoir memory, a supervised contrastive loss on the incoming and
/// replayed rows instead of cross-entropy, and prediction by the nearest class mean (NCM) of the
/// memory's features instead of the network's head.
///
/// - **Memory**: a reservoir (Algorithm R) of `capacity` rows; every labelled training row is
///   offered once, in its experience's first epoch, after the step's draw (the authors' order:
///   retrieve, train, then update the memory).
/// - **Step**: B = the incoming rows ∪ `replay_per_batch` rows drawn uniformly from the memory
///   (distinct); each row of B in two views (the row itself and `SupConLoss.augment`'s noisy,
///   feature-dropped copy, from the plugin's seeded stream). The features h are the last hidden
///   layer's activations (the encoder), the projection head g (`projection`: the authors' MLP
///   Linear(w, w) → ReLU → Linear(w, 128) by default) maps them to p = g(h), and the loss is
///   `SupConLoss.loss` on z = p / ‖p‖ at temperature τ over all 2|B| views, every view an anchor,
///   its positives the other views of its class (its own other view included, itself excluded).
///   The loop's cross-entropy is removed from every row (`RowLoss`), so the network's head gets
///   no gradient beyond float rounding and is never used; the hidden layers get SupCon's gradient
///   (added to the pass's parameter gradient) and the projection head is this plugin's
///   `ParameterBlockOwner` block, stepped by the run's optimizer.
/// - **Prediction**: at every evaluation (and prequential scoring), for each class with memory
///   rows, μ_c = normalise(mean over its memory rows of normalise(h(x))) with the model being
///   evaluated; a sample takes the class c minimising ‖normalise(h(x)) − μ_c‖² (ties: the lower
///   class). Classes with no memory row are never predicted (the authors' code gives them a
///   random mean); with an empty memory the network's own argmax answers (the loop's default).
///
/// Choices (recorded in `report()`): an empty memory (the first step) trains on the incoming
/// rows' two views alone (the paper's Algorithm 1 and Avalanche; the authors' code skips the
/// step); τ = 0.1 (the authors' paper configurations and Avalanche; their README says 0.07).
/// Not reproduced: the image augmentations (crop, flip, colour jitter, grayscale: no meaning for
/// vectors; noise and feature dropout instead), the review trick of the authors' configurations
/// (an epoch on the memory at each task's end: plugins do not train in `afterExperience`).
/// Class-incremental: one multi-class head and a hidden layer (refused in `prepare` otherwise).
public struct SCR: BatchLossTerm, ParameterBlockOwner, PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options
    var memory = LogitReservoir(dimension: 0, logitCount: 1, capacity: 0)
    var streams = ReservoirStreams()
    var augmentRNG = RandomSource(seed: 0)
    /// The projection head's parameters (empty for `projection` "none").
    public var parameterBlock: [Float] = []
    public var parameterBlockGradient: [Float] = []
    /// The projection head's shape (parameters taken from `parameterBlock` at each step).
    var projector: MLP?
    /// The hidden layers as a network of their own (parameters copied from the model each step).
    var encoder: MLP?
    var activation = Activation.relu
    var encoderWorkspace: Workspace?
    var projectorWorkspace: Workspace?
    /// Classes met in training so far.
    var known: [Bool] = []
    /// Rows of the current experience not yet offered (its first epoch).
    var streamRemaining = 0
    /// This experience's steps that found the memory empty, and views contrasted over the run.
    var emptyMemorySteps = 0
    var contrastedViews = 0
    /// Per experience: memory rows, classes with memory rows, seen classes without any, steps
    /// trained with an empty memory.
    var history: [[Double]] = []
    var batchSize = 1

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        let k = try ExemplarSets.classCount(method: "scr", head: context.head, model: model)
        let net = try model.penultimateNetwork(for: "scr's contrastive loss", training: context.training)
        encoder = net
        activation = model.spec.activation
        encoderWorkspace = net.makeWorkspace(capacity: 2 * (context.training.batchSize + options.replayPerBatch))
        memory = LogitReservoir(dimension: context.dimension, logitCount: model.logitCount, capacity: options.capacity)
        streams = ReservoirStreams(context, plugin: "scr")
        augmentRNG = context.randomSource("scr.augment")
        known = Array(repeating: false, count: k)
        (history, emptyMemorySteps, contrastedViews) = ([], 0, 0)
        batchSize = context.training.batchSize
        let width = net.logitCount
        if options.projection == .none {
            (projector, projectorWorkspace, parameterBlock) = (nil, nil, [])
        } else {
            var rng = context.randomSource("scr.projection")
            let spec = MLPSpec(inputs: width, hidden: options.projection == .mlp ? [width] : [], activation: .relu,
                               head: .multiclass(classes: options.projectionDim))
            let head = MLP(spec: spec, rng: &rng)
            (projector, parameterBlock) = (head, head.parameters)
            projectorWorkspace = head.makeWorkspace(capacity: 2 * (context.training.batchSize + options.replayPerBatch))
        }
        parameterBlockGradient = [Float](repeating: 0, count: parameterBlock.count)
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        for y in context.experience.train.labels where y >= 0 && Int(y) < known.count { known[Int(y)] = true }
        emptyMemorySteps = 0
    }

    public mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        streamRemaining = samples.count
    }

    /// Appends the memory draw, then offers the first epoch's own labelled rows to the reservoir.
    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        if memory.count == 0 {
            emptyMemorySteps += 1
        } else if options.replayPerBatch > 0 {
            for slot in memory.draw(min(options.replayPerBatch, memory.count), rng: &streams.batch) {
                batch.append(features: memory.row(slot), label: memory.labels[slot], route: memory.routes[slot])
            }
        }
        let offered = min(batch.ownCount, streamRemaining)
        streamRemaining -= offered
        for i in 0..<offered where batch.labels[i] >= 0 {
            memory.offer(features: batch.row(i), label: batch.labels[i], route: batch.routes[i], logits: nil, rng: &streams.buffer)
        }
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        let L = input.logitCount, scale = Double(input.scale)
        var value = 0.0
        var rows: [Int] = []
        for (k, row) in input.rows.enumerated() {
            let label = Int(input.batch.labels[row])
            guard label >= 0, label < L else { continue }
            let loop = RowLoss.loopCrossEntropy(input.logits + k * L, L: L, label: label, active: input.activeClasses)
            let grad = RowLoss.ceGradient(loop.p, label: label)
            let g = input.logitGradient + k * L
            for c in 0..<L { g[c] -= Float(scale * grad[c]) }
            value -= scale * loop.loss
            rows.append(row)
        }
        guard !rows.isEmpty, var net = encoder, let gradient = input.parameterGradient, let ews = encoderWorkspace else { return value }
        var x: [Float] = []
        x.reserveCapacity(2 * rows.count * input.batch.dimension)
        for row in rows { x += input.batch.row(row) }
        var second = x
        SupConLoss.augment(&second, dimension: input.batch.dimension, noiseStd: options.noiseStd, drop: options.featureDrop,
                           shift: options.shift, scale: options.scale, rng: &augmentRNG)
        x += second
        let labels = rows.map { input.batch.labels[$0] }
        net.parameters.withUnsafeMutableBufferPointer { p in
            input.model.parameters.withUnsafeBufferPointer { p.baseAddress!.update(from: $0.baseAddress!, count: p.count) }
        }
        encoder = net
        if projector != nil { projector!.parameters = parameterBlock }
        contrastedViews += 2 * rows.count
        return value + parameterBlockGradient.withUnsafeMutableBufferPointer { pg in
            Self.addContrastiveGradient(encoder: net, activation: activation, projector: projector, x: x, labels: labels + labels,
                                        temperature: options.temperature, encoderWorkspace: ews,
                                        projectorWorkspace: projectorWorkspace, gradient: gradient,
                                        projectionGradient: pg.baseAddress)
        }
    }

    /// SupCon over the rows of `x` (row-major, `labels.count` rows) through the encoder, its
    /// activation, the projection head (if any) and the normalisation; adds ∂L/∂θ of the hidden
    /// layers into `gradient` and of the head into `projectionGradient`. Returns L.
    static func addContrastiveGradient(encoder net: MLP, activation: Activation, projector: MLP?, x: [Float], labels: [Int32],
                                       temperature: Double, encoderWorkspace ews: Workspace, projectorWorkspace pws: Workspace?,
                                       gradient: UnsafeMutablePointer<Float>,
                                       projectionGradient: UnsafeMutablePointer<Float>?) -> Double {
        let rows = labels.count, w = net.logitCount
        x.withUnsafeBufferPointer { net.forward($0.baseAddress!, count: rows, route: 0, workspace: ews) }
        var h = Array(UnsafeBufferPointer(start: ews.logits, count: rows * w))
        h.withUnsafeMutableBufferPointer { activation.apply($0.baseAddress!, count: rows * w) }
        var p = h, d = w
        if let head = projector, let pws {
            h.withUnsafeBufferPointer { head.forward($0.baseAddress!, count: rows, route: 0, workspace: pws) }
            d = head.logitCount
            p = Array(UnsafeBufferPointer(start: pws.logits, count: rows * d))
        }
        let (z, norms) = p.withUnsafeBufferPointer { SupConLoss.normalise($0.baseAddress!, rows: rows, width: d) }
        var dz = [Double](repeating: 0, count: rows * d)
        let loss = z.withUnsafeBufferPointer { zp in
            dz.withUnsafeMutableBufferPointer { SupConLoss.loss(zp.baseAddress!, labels: labels, width: d, temperature: temperature,
                                                                gradient: $0.baseAddress!) }
        }
        var dp = SupConLoss.normaliseBackward(z: z, norms: norms, dz: dz, width: d)
        var dh = dp
        if let head = projector, let pws, let projectionGradient {
            dh = [Float](repeating: 0, count: rows * w)
            dp.withUnsafeMutableBufferPointer { g in
                dh.withUnsafeMutableBufferPointer {
                    head.backward(logitGradient: g.baseAddress!, count: rows, route: 0, workspace: pws,
                                  gradient: projectionGradient, inputGradient: $0.baseAddress!)
                }
            }
        }
        h.withUnsafeBufferPointer { hp in
            dh.withUnsafeMutableBufferPointer { activation.backward(outputs: hp.baseAddress!, gradient: $0.baseAddress!, count: rows * w) }
        }
        dh.withUnsafeMutableBufferPointer { net.backward(logitGradient: $0.baseAddress!, count: rows, route: 0, workspace: ews, gradient: gradient) }
        return loss
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        let present = Set(memory.labels)
        let missing = known.indices.filter { known[$0] && !present.contains(Int32($0)) }.count
        history.append([Double(memory.count), Double(present.count), Double(missing), Double(emptyMemorySteps)])
    }
}

extension SCR {
    /// NCM over the memory (see the type's doc comment); nil while the memory is empty.
    public mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int, workspace: Workspace) -> Predictions? {
        guard memory.count > 0, samples.count > 0 else { return nil }
        let means = classMeans(model: model, workspace: workspace)
        let (f, w) = ICaRL.features(model: model, samples: samples, route: 0, workspace: workspace)
        return Predictions(classes: Self.nearest(f, width: w, means: means))
    }

    /// Per class, normalise(mean of the memory rows' normalised features) with `model`; empty
    /// for classes without a memory row.
    func classMeans(model: MLP, workspace: Workspace) -> [[Double]] {
        let stored = Samples(dimension: memory.dimension, features: memory.features, labels: memory.labels)
        let (f, w) = ICaRL.features(model: model, samples: stored, route: 0, workspace: workspace)
        return Self.classMeans(f, width: w, labels: memory.labels, classCount: known.count)
    }

    static func classMeans(_ f: [Float], width w: Int, labels: [Int32], classCount k: Int) -> [[Double]] {
        var sums = [[Double]](repeating: [], count: k), counts = [Int](repeating: 0, count: k)
        for (r, y) in labels.enumerated() where y >= 0 && Int(y) < k {
            let c = Int(y)
            if sums[c].isEmpty { sums[c] = [Double](repeating: 0, count: w) }
            for j in 0..<w { sums[c][j] += Double(f[r * w + j]) }
            counts[c] += 1
        }
        return sums.indices.map { c in counts[c] == 0 ? [] : ICaRL.normalised(sums[c].map { $0 / Double(counts[c]) }) }
    }

    /// For each row of `f` (normalised features), the class whose non-empty mean is nearest in
    /// squared Euclidean distance (ties: the lower class).
    static func nearest(_ f: [Float], width w: Int, means: [[Double]]) -> [Int32] {
        let rows = w == 0 ? 0 : f.count / w
        return (0..<rows).map { r in
            var best = Int32(-1), bestDistance = Double.infinity
            for (c, mu) in means.enumerated() where !mu.isEmpty {
                var d = 0.0
                for j in 0..<w { let t = Double(f[r * w + j]) - mu[j]; d += t * t }
                if best < 0 || d < bestDistance { (best, bestDistance) = (Int32(c), d) }
            }
            return max(best, 0)
        }
    }

    /// The memory; per step the memory draw (two views of every row through the encoder and the
    /// projection head, forward and backward); per evaluation the memory's features.
    public var resources: PluginResources {
        let rows = 2 * (batchSize + min(memory.count, options.replayPerBatch))
        let pass = (encoder?.flopsPerTrainingSample ?? 0) + (projector?.flopsPerTrainingSample ?? 0)
        let d = projector?.logitCount ?? encoder?.logitCount ?? 0
        return PluginResources(storedSampleBytes: memory.bytes,
                               stateBytes: 4 * ((encoder?.parameterCount ?? 0) + 2 * parameterBlock.count) + 8 * (known.count + 4 * history.count),
                               extraRowsPerBatch: min(memory.count, options.replayPerBatch),
                               extraFLOPsPerStep: rows * pass + 4 * rows * rows * d,
                               extraFLOPsPerExperience: memory.count * (encoder?.flopsPerPrediction ?? 0),
                               ownedParameters: parameterBlock.count)
    }

    public func checkpointState() -> PluginState {
        var s = memory.state(with: streams)
        s.ints["rng.augment"] = augmentRNG.state.map { Int64(bitPattern: $0) }
        s.ints["known"] = known.map { $0 ? 1 : 0 }
        s.ints["contrasted_views"] = [Int64(contrastedViews)]
        s.floats["projection"] = parameterBlock
        s.doubles["history"] = history.flatMap { $0 }
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        streams = try memory.restore(state, plugin: "scr")
        guard let a = state.ints["rng.augment"], a.count == 4, let k = state.ints["known"], k.count == known.count,
              let v = state.ints["contrasted_views"]?.first, let p = state.floats["projection"], p.count == parameterBlock.count,
              let h = state.doubles["history"], h.count % 4 == 0,
              memory.labels.allSatisfy({ Int($0) < known.count }) else {
            throw CheckpointError.mismatch("scr state does not fit (\(known.count) classes, projection of \(parameterBlock.count) parameters)")
        }
        augmentRNG = RandomSource(state: a.map { UInt64(bitPattern: $0) })
        known = k.map { $0 != 0 }
        contrastedViews = Int(v)
        parameterBlock = p
        history = stride(from: 0, to: h.count, by: 4).map { Array(h[$0..<($0 + 4)]) }
    }

    public func report() -> PluginReport {
        // The view's translation and scaling are named only when on: reports from before these options are unchanged.
        let transformed = options.shift != 0 || options.scale != 0
        var report = PluginReport(attributes: [
            "capacity": .int(Int64(options.capacity)), "replay_per_batch": .int(Int64(options.replayPerBatch)),
            "temperature": .double(options.temperature), "projection": .string(options.projection.rawValue),
            "projection_dim": .int(Int64(options.projection == .none ? 0 : options.projectionDim)),
            "noise_std": .double(options.noiseStd), "feature_drop": .double(options.featureDrop),
            "memory_samples": .int(Int64(memory.count)), "offered": .int(Int64(memory.offered)),
            "contrasted_views": .int(Int64(contrastedViews)),
            "classifier": .string("ncm: nearest normalised mean of the memory's normalised penultimate features per class, "
                + "recomputed with the evaluated model at every evaluation; the network's head is not used"),
            "objective": .string("SupCon (Khosla 2020, L_out) at temperature tau over two views of the incoming and replayed rows, "
                + "on L2-normalised projections; the loop's CE is removed from every row"),
            "augmentation": .string("view 1: the row; view 2: the row"
                + (transformed ? " moved by s positions, s uniform in -shift...shift (vacated positions 0), times a factor "
                    + "uniform in [1 - scale, 1 + scale]," : "")
                + " + N(0, noise_std^2) per feature, each feature then zeroed with probability feature_drop (the plugin's seeded stream)"),
            "empty_memory": .string("training: the incoming rows' two views alone (the authors' code skips the step); "
                + "evaluation: the network's own argmax"),
            "class_without_memory": .string("never predicted (the authors' code draws a random mean for it)"),
            "not_reproduced": .string("image augmentations (random resized crop, flip, colour jitter, grayscale) replaced by "
                + (transformed ? "a translation and rescaling of each row, " : "")
                + "vector noise and feature dropout; the review trick (an epoch on the memory at each task's end, gradients / 10); "
                + "reduced ResNet-18 and batch norm (an MLP here)"),
        ], arrays: [
            "memory": .init(values: history.flatMap { $0 }, shape: [history.count, 4], attributes: [
                "meaning": .string("per experience, at its end: memory rows, classes with memory rows, classes seen in training "
                    + "with no memory row (never predicted), steps trained with an empty memory")]),
        ])
        if transformed {
            report.attributes["shift"] = .int(Int64(options.shift))
            report.attributes["scale"] = .double(options.scale)
        }
        return report
    }
}
