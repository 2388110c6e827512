import ContinualCore

/// Deep generative replay (Shin et al., NeurIPS 2017; the variant of van de Ven & Tolias 2019,
/// "Three scenarios for continual learning"): no sample is stored. A generator (a
/// `VariationalAutoencoder`) learns the inputs of every experience; while the solver (the run's
/// model) trains on experience t > 1, each step appends generated inputs labelled by the previous
/// solver, and the generator itself trains on the current rows plus inputs replayed by its own
/// previous copy.
///
/// Choices, documented and recorded in the results:
/// - Labels of replayed rows: the previous solver's most probable class among the classes it was
///   trained on for the row's route (hard targets, as in Shin et al.; van de Ven & Tolias's
///   "+distill" variant with soft targets is not implemented). A binary head labels by the sign
///   of its logit.
/// - Routes of replayed rows: each row takes the route of a previous experience drawn uniformly
///   (multi-head task-IL: the head that labels it; single head: the one route).
/// - Weighting (`weighting`): `inverse_task` (default, van de Ven & Tolias) makes the loss
///   (1/t)·mean(current rows) + (1 − 1/t)·mean(replayed rows) for the solver and for the
///   generator; `equal` is the mean over all rows (Shin et al.'s ratio r = ½ with as many replayed
///   rows as current ones). The solver's rescaling is applied to the logit gradient after the
///   loop's task loss; the recorded training loss stays the loop's per-row mean.
/// - Replayed rows per step: `replay_per_batch`, default as many as the step's own rows.
/// - The generator trains one Adam step per solver step on the same rows, with its own optimizer
///   (`lr`, β = 0.9, 0.999) rather than the run's: its parameters are not the model's.
/// - The previous solver and generator are copies taken after each experience; the generator keeps
///   training from its current parameters.
public struct GenerativeReplay: BatchLossTerm {
    public var name: String { Options.typeName }
    public let options: Options
    public private(set) var generator: VariationalAutoencoder?
    /// The generator's decoder at the end of the previous experience (what replays).
    public private(set) var previousDecoder: MLP?
    public private(set) var previousSolver: MLP?
    private var template: MLP?
    /// Classes each route's previous solver was trained on (route → [Bool] over the logits).
    private var seenClasses: [Int32: [Bool]] = [:]
    /// Routes of the finished experiences, in order.
    private var finishedRoutes: [Int32] = []
    private var noise = RandomSource(seed: 0)
    private var batchSize = 1
    /// This step's counts: own rows, replayed rows, and the experience's 1-based index t.
    private var ownRows = 0, replayedRows = 0, task = 1
    private var generatorLossSum = 0.0, generatorSteps = 0
    private var generatorLosses: [Double] = []
    private var dimension = 0

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        template = model
        dimension = context.dimension
        batchSize = context.training.batchSize
        var init_ = context.randomSource("generative_replay.init")
        generator = VariationalAutoencoder(dimension: context.dimension, hidden: options.hidden ?? model.spec.hidden,
                                           latent: options.latent, reconstruction: options.reconstruction,
                                           learningRate: Float(options.learningRate), rng: &init_)
        noise = context.randomSource("generative_replay.noise")
        previousDecoder = nil
        previousSolver = nil
        seenClasses = [:]
        finishedRoutes = []
        generatorLosses = []
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        task = context.index + 1
        generatorLossSum = 0
        generatorSteps = 0
        if let refusal = options.reconstruction.refusal(context.experience.train.features, dimension: dimension,
                                                        method: Options.typeName, experience: context.index) {
            throw TrainingError.invalid(refusal)
        }
    }

    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        let own = batch.ownCount, D = batch.dimension
        ownRows = own
        replayedRows = 0
        guard var gen = generator, own > 0 else { return }
        var rows = [Float](repeating: 0, count: own * D)
        for r in 0..<own { rows.replaceSubrange((r * D)..<((r + 1) * D), with: batch.row(r)) }
        var weights: [Float]
        if let old = previousDecoder, let solver = previousSolver, !finishedRoutes.isEmpty {
            let rep = options.replayPerBatch ?? own
            let generated = VariationalAutoencoder.generate(decoder: old, latent: gen.latent, reconstruction: gen.reconstruction,
                                                            count: rep, rng: &noise)
            let routes = (0..<rep).map { _ in finishedRoutes[noise.uniformInt(below: finishedRoutes.count)] }
            let labels = Self.label(generated, routes: routes, solver: solver, seen: seenClasses, dimension: D)
            for k in 0..<rep {
                batch.append(features: generated[(k * D)..<((k + 1) * D)], label: labels[k], route: routes[k])
            }
            replayedRows = rep
            let (wc, wr) = mixture(own: own, replayed: rep)
            weights = [Float](repeating: Float(wc / Double(own)), count: own)
                + [Float](repeating: Float(wr / Double(rep)), count: rep)
            rows += generated
        } else {
            weights = [Float](repeating: 1 / Float(own), count: own)
        }
        let eps = (0..<(weights.count * gen.latent)).map { _ in Float(noise.normal()) }
        generatorLossSum += gen.trainStep(rows, weights: weights, noise: eps)
        generatorSteps += 1
        generator = gen
    }

    /// (weight of the current rows, weight of the replayed rows) in the loss.
    func mixture(own: Int, replayed: Int) -> (Double, Double) {
        switch options.weighting {
        case .inverseTask: return (1 / Double(task), 1 - 1 / Double(task))
        case .equal:
            let n = Double(own + replayed)
            return (Double(own) / n, Double(replayed) / n)
        }
    }

    /// The previous solver's label of each generated row: its most probable class among `seen`
    /// of the row's route (binary head: logit > 0).
    static func label(_ x: [Float], routes: [Int32], solver: MLP, seen: [Int32: [Bool]], dimension D: Int) -> [Int32] {
        var labels = [Int32](repeating: 0, count: routes.count)
        let L = solver.logitCount
        let ws = solver.makeWorkspace(capacity: 1)
        for k in routes.indices {
            x.withUnsafeBufferPointer { solver.forward($0.baseAddress! + k * D, count: 1, route: Int(routes[k]), workspace: ws) }
            let z = ws.logits
            if L == 1 {
                labels[k] = z[0] > 0 ? 1 : 0
                continue
            }
            let allowed = seen[routes[k]]
            var best = -1
            for c in 0..<L where allowed?[c] ?? true {
                if best < 0 || z[c] > z[best] { best = c }
            }
            labels[k] = Int32(max(best, 0))
        }
        return labels
    }

    /// `inverse_task`: rescales the loop's per-row gradient (1/n each) so that current rows weigh
    /// 1/t in total and replayed rows 1 − 1/t. `equal` leaves it as it is.
    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        guard replayedRows > 0, options.weighting == .inverseTask else { return 0 }
        let n = Float(input.batch.count), L = input.logitCount
        let (wc, wr) = mixture(own: ownRows, replayed: replayedRows)
        let fOwn = n * Float(wc) / Float(ownRows), fRep = n * Float(wr) / Float(replayedRows)
        for (k, row) in input.rows.enumerated() {
            let f = row < ownRows ? fOwn : fRep
            let g = input.logitGradient + k * L
            for c in 0..<L { g[c] *= f }
        }
        return 0
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        let L = model.logitCount
        var seen = seenClasses[context.route] ?? [Bool](repeating: false, count: L)
        for y in context.experience.train.labels where y >= 0 && Int(y) < L { seen[Int(y)] = true }
        seenClasses[context.route] = seen
        finishedRoutes.append(context.route)
        previousSolver = model
        previousDecoder = generator?.decoder
        generatorLosses.append(generatorSteps > 0 ? generatorLossSum / Double(generatorSteps) : .nan)
    }

    /// The generator (parameters and two Adam moments), its previous decoder and the previous solver;
    /// per step the generator's training on own and replayed rows, the generation and labelling.
    public var resources: PluginResources {
        guard let gen = generator else { return .none }
        let previous = (previousDecoder?.parameterCount ?? 0) + (previousSolver?.parameterCount ?? 0)
        let rows = previousSolver == nil ? 0 : (options.replayPerBatch ?? batchSize)
        let genFLOPs = gen.encoder.flopsPerTrainingSample + gen.decoder.flopsPerTrainingSample
        return PluginResources(stateBytes: 4 * (3 * gen.parameterCount + previous), extraRowsPerBatch: rows,
                               extraFLOPsPerStep: (batchSize + rows) * genFLOPs
                                   + rows * (gen.decoder.flopsPerPrediction + (previousSolver?.flopsPerPrediction ?? 0)))
    }

    public func checkpointState() -> PluginState {
        var s = PluginState()
        generator?.state(into: &s, prefix: "generator")
        if let d = previousDecoder { s.floats["previous_decoder"] = d.parameters }
        if let p = previousSolver { s.floats["previous_solver"] = p.parameters }
        s.ints["rng.noise"] = noise.state.map { Int64(bitPattern: $0) }
        s.ints["finished_routes"] = finishedRoutes.map(Int64.init)
        for (route, mask) in seenClasses { s.ints["seen_classes.\(route)"] = mask.map { $0 ? 1 : 0 } }
        s.doubles["generator_losses"] = generatorLosses
        return s
    }

    public mutating func restore(from s: PluginState) throws {
        try generator?.restore(from: s, prefix: "generator")
        previousDecoder = nil
        if let d = s.floats["previous_decoder"] {
            guard var decoder = generator?.decoder, decoder.parameterCount == d.count else {
                throw CheckpointError.mismatch("generative_replay's previous decoder has \(d.count) parameters, this generator's \(generator?.decoder.parameterCount ?? 0)")
            }
            decoder.parameters = d
            previousDecoder = decoder
        }
        previousSolver = nil
        if let p = s.floats["previous_solver"] {
            guard var m = template, m.parameterCount == p.count else {
                throw CheckpointError.mismatch("generative_replay's previous solver has \(p.count) parameters, this model \(template?.parameterCount ?? 0)")
            }
            m.parameters = p
            previousSolver = m
        }
        if let r = s.ints["rng.noise"] { noise = RandomSource(state: r.map { UInt64(bitPattern: $0) }) }
        finishedRoutes = (s.ints["finished_routes"] ?? []).map { Int32($0) }
        seenClasses = [:]
        for (key, mask) in s.ints where key.hasPrefix("seen_classes.") {
            guard let route = Int32(key.dropFirst("seen_classes.".count)) else { continue }
            seenClasses[route] = mask.map { $0 != 0 }
        }
        generatorLosses = s.doubles["generator_losses"] ?? []
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "latent": .int(Int64(options.latent)), "learning_rate": .double(options.learningRate),
            "hidden": .string((options.hidden ?? template?.spec.hidden ?? []).map(String.init).joined(separator: ",")),
            "weighting": .string(options.weighting.rawValue), "reconstruction": .string(options.reconstruction.rawValue),
            "replay_per_batch": .string(options.replayPerBatch.map(String.init) ?? "own rows"),
            "replay_labels": .string("previous solver, most probable seen class (hard)"),
        ], arrays: ["generator_loss": .init(values: generatorLosses)])
    }
}

extension GenerativeReplay {
    /// How the loss mixes the current rows with the replayed ones (see `GenerativeReplay`).
    public enum Weighting: String, CaseIterable, Sendable, Codable {
        case inverseTask = "inverse_task", equal
    }

    /// `{"type": "generative_replay", "latent": 16, "hidden": [64, 64], "lr": 0.001,
    /// "weighting": "inverse_task", "reconstruction": "gaussian", "replay_per_batch": 128}`.
    public struct Options: PluginOptions {
        public static let typeName = "generative_replay"
        public static let summary = "deep generative replay: a VAE replays past inputs labelled by the previous model (Shin 2017; van de Ven & Tolias 2019)"
        public static let composition = PluginComposition.alone(
            reason: "it sets the weights of the batch's own and replayed rows (1/t against 1 − 1/t)")

        /// Latent dimensions of the VAE (van de Ven & Tolias: 100 for MNIST's 784 inputs; default
        /// 16 for the toolkit's 64-feature digits and smaller inputs).
        public var latent: Int = 16
        /// Hidden widths of the encoder (the decoder mirrors them); nil = the model's hidden widths.
        public var hidden: [Int]? = nil
        /// Adam learning rate of the generator (van de Ven & Tolias: 0.001).
        public var learningRate: Double = 0.001
        public var weighting: Weighting = .inverseTask
        /// `gaussian` (default: any real features) or `bernoulli` (features in [0, 1], e.g. pixel
        /// intensities; van de Ven & Tolias's choice for MNIST).
        public var reconstruction: VariationalAutoencoder.Reconstruction = .gaussian
        /// Generated rows per step; nil = as many as the step's own rows.
        public var replayPerBatch: Int? = nil

        public init() {}

        enum CodingKeys: String, CodingKey, CaseIterable {
            case latent, hidden, learningRate = "lr", weighting, reconstruction, replayPerBatch = "replay_per_batch"
        }

        public init(from decoder: any Decoder) throws {
            let k = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            latent = try k.decode(.latent, default: 16)
            try k.require((1...4096).contains(latent), .latent, "latent must be an integer in 1...4096, got \(latent)")
            hidden = try k.decode(.hidden, default: nil as [Int]?)
            if let h = hidden {
                try k.require(h.count <= 16 && h.allSatisfy { (1...65_536).contains($0) }, .hidden,
                              "hidden must list at most 16 widths in 1...65536, got \(h)")
            }
            learningRate = try k.decode(.learningRate, default: 0.001)
            try k.require(learningRate > 0 && learningRate.isFinite && learningRate <= 10, .learningRate,
                          "lr must be a finite number in (0, 10], got \(learningRate)")
            weighting = try k.decodeChoice(.weighting, default: .inverseTask)
            reconstruction = try k.decodeChoice(.reconstruction, default: .gaussian)
            replayPerBatch = try k.decode(.replayPerBatch, default: nil as Int?)
            if let r = replayPerBatch {
                try k.require((1...1_000_000).contains(r), .replayPerBatch, "replay_per_batch must be an integer in 1...1000000, got \(r)")
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var k = encoder.container(keyedBy: CodingKeys.self)
            try k.encode(latent, forKey: .latent)
            try k.encodeIfPresent(hidden, forKey: .hidden)
            try k.encode(learningRate, forKey: .learningRate)
            try k.encode(weighting, forKey: .weighting)
            try k.encode(reconstruction, forKey: .reconstruction)
            try k.encodeIfPresent(replayPerBatch, forKey: .replayPerBatch)
        }

        public func makePlugin() -> any StrategyPlugin { GenerativeReplay(options: self) }

        /// The generator, its Adam moments and previous decoder, and the previous solver; the
        /// generated rows appended to each batch.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            func dense(_ widths: [Double]) -> Double { zip(widths, widths.dropFirst()).reduce(0) { $0 + ($1.0 + 1) * $1.1 } }
            let z = Double(latent), d = shape.dimension
            // With the model's hidden widths (unknown here), each half is about the model's size.
            let generator = hidden.map { h -> Double in
                let w = h.map(Double.init)
                return dense([d] + w + [2 * z]) + dense([z] + w.reversed() + [d])
            } ?? 2 * shape.parameters
            // Parameters and two Adam moments, the previous decoder (counted as a whole generator:
            // the estimate errs high), the previous solver.
            return PlannedResources(memory: [.init(4 * (4 * generator + shape.parameters), key: CodingKeys.latent.path)],
                                    extraRowsPerBatch: replayPerBatch.map(Double.init) ?? shape.batchSize)
        }
    }
}
