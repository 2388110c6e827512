import ContinualCore

extension BIR {
    /// toZ, decoder and prior with two Adam moments, the previous copies of them and of the model,
    /// working copies of the model's parts, the gates; per step the replayed rows, their
    /// generation and labelling, and the VAE passes.
    public var resources: PluginResources {
        guard let gen = generator, let net = encoder else { return .none }
        let previous = previousModel == nil ? 0 : gen.parameterCount + (previousModel?.parameterCount ?? 0)
        let rows = previousModel == nil ? 0 : (options.replayPerBatch ?? batchSize)
        let decoder = gen.decoder.reduce(0) { $0 + $1.flopsPerTrainingSample }
        let vae = net.flopsPerTrainingSample + gen.toZ.flopsPerTrainingSample + decoder
        let generate = gen.decoder.reduce(0) { $0 + $1.flopsPerPrediction } + (previousModel?.flopsPerPrediction ?? 0)
        // Internal replay: the first layer runs again for the VAE's inputs; replayed rows go through
        // the layers above (the loop does not see them), forward and backward.
        let internalFLOPs = below.map { batchSize * $0.flopsPerPrediction } ?? 0
        let replayed = (above?.flopsPerTrainingSample ?? 0) + (previousAbove?.flopsPerPrediction ?? 0)
        // Working copies of the model's parts (encoder; with internal replay the layers below and
        // above the split, and the previous model's part above).
        let copies = [encoder, below, above, previousAbove].reduce(0) { $0 + ($1?.parameterCount ?? 0) }
        return PluginResources(stateBytes: 4 * (3 * gen.parameterCount + previous + copies + gen.gates.reduce(0) { $0 + $1.count }),
                               extraRowsPerBatch: options.internalReplay ? 0 : rows,
                               extraFLOPsPerStep: (batchSize + rows) * vae + rows * generate + internalFLOPs + rows * replayed)
    }

    public func checkpointState() -> PluginState {
        var s = PluginState()
        guard let gen = generator, let o = optimizer else { return s }
        s.floats["generator"] = gen.parameters
        s.floats["adam.first"] = o.first
        s.floats["adam.second"] = o.second
        s.ints["adam.steps"] = [Int64(o.steps)]
        if let p = previousGenerator { s.floats["previous_generator"] = p.parameters }
        if let m = previousModel { s.floats["previous_model"] = m.parameters }
        s.ints["seen"] = seen.map { $0 ? 1 : 0 }
        s.ints["rng.noise"] = noise.state.map { Int64(bitPattern: $0) }
        s.doubles["vae_losses"] = losses
        return s
    }

    public mutating func restore(from s: PluginState) throws {
        guard var gen = generator, let o = optimizer, let g = s.floats["generator"], g.count == gen.parameterCount,
              let r = s.ints["rng.noise"], let seenBits = s.ints["seen"], seenBits.count == seen.count else {
            throw CheckpointError.mismatch("bir's state does not match this configuration")
        }
        gen.parameters = g
        generator = gen
        optimizer = try Optimizer(spec: o.spec, parameterCount: o.parameterCount, first: s.floats["adam.first"] ?? [],
                                       second: s.floats["adam.second"] ?? [], steps: Int(s.ints["adam.steps"]?.first ?? 0))
        previousGenerator = nil
        if let p = s.floats["previous_generator"] {
            guard p.count == gen.parameterCount else { throw CheckpointError.mismatch("bir's previous generator does not match") }
            var old = gen
            old.parameters = p
            previousGenerator = old
        }
        previousModel = nil
        previousAbove = nil
        if let p = s.floats["previous_model"] {
            guard var m = template, m.parameterCount == p.count else {
                throw CheckpointError.mismatch("bir's previous model has \(p.count) parameters, this model \(template?.parameterCount ?? 0)")
            }
            m.parameters = p
            previousModel = m
            if let a = above { previousAbove = Self.above(of: m, template: a, frozen: frozenCount) }
        }
        seen = seenBits.map { $0 != 0 }
        noise = RandomSource(state: r.map { UInt64(bitPattern: $0) })
        losses = s.doubles["vae_losses"] ?? []
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "feedback": .string("classifier's hidden layers are the VAE's encoder (shared, trained by both losses)"),
            "conditional": .string(options.conditional ? "Gaussian-mixture prior, one learnable mode per class" : "off: standard normal prior"),
            "gates": .string(options.gates ? "per-class fixed decoder masks, proportion \(options.gateProportion) off" : "off"),
            "internal_replay": .string(options.internalReplay
                ? "first hidden layer frozen after the first experience; its activations (\(below?.logitCount ?? 0) wide) are encoded and replayed"
                : "off (inputs replayed)"),
            "distillation": .string(options.distillation ? "soft targets, T = \(options.temperature), KD × T²" : "off: previous model's most probable seen class (hard)"),
            "latent": .int(Int64(options.latent)), "learning_rate": .double(options.learningRate),
            "weighting": .string(options.weighting.rawValue), "reconstruction": .string(options.reconstruction.rawValue),
            "replay_per_batch": .string(options.replayPerBatch.map(String.init) ?? "own rows"),
        ], arrays: ["vae_loss": .init(values: losses)])
    }
}

extension BIR {
    /// `{"type": "bir", "latent": 16, "lr": 0.001, "temperature": 2, "gate_proportion": 0.8,
    /// "conditional": true, "gates": true, "distillation": true, "feedback": true,
    /// "internal_replay": false, "weighting": "inverse_task", "reconstruction": "gaussian"}`.
    public struct Options: PluginOptions {
        public static let typeName = "bir"
        public static let summary = "brain-inspired replay (van de Ven 2020): the classifier is the VAE's encoder; conditional, gated, distilled generative replay"
        public static let composition = PluginComposition.alone(
            reason: "it sets the weights of the batch's own and replayed rows (1/t against 1 − 1/t) and replaces the replayed rows' loss")

        /// Latent dimensions (the authors: 100 for MNIST's 784 inputs; 16 here as generative_replay).
        public var latent = 16
        /// Adam learning rate of toZ, the decoder and the prior (the authors' split MNIST: 0.001).
        public var learningRate = 0.001
        public var temperature = 2.0
        /// Share of each class's decoder units gated off (the authors' `dg_prop`: 0.8 for MNIST).
        public var gateProportion = 0.8
        public var conditional = true, gates = true, distillation = true
        /// `feedback`: only `true` (the classifier is the encoder). `internal_replay`: off by default
        /// (the authors' MNIST BI-R replays inputs; they replay internal representations after
        /// convolutional layers); on, the first hidden layer plays those layers (see BIR+Internal).
        public var feedback = true, internalReplay = false
        public var weighting = GenerativeReplay.Weighting.inverseTask
        public var reconstruction = VariationalAutoencoder.Reconstruction.gaussian
        public var replayPerBatch: Int? = nil

        public init() {}

        enum CodingKeys: String, CodingKey, CaseIterable {
            case latent, learningRate = "lr", temperature, gateProportion = "gate_proportion", conditional, gates
            case distillation, feedback, internalReplay = "internal_replay", weighting, reconstruction
            case replayPerBatch = "replay_per_batch"
        }

        public init(from decoder: any Decoder) throws {
            let k = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            latent = try k.decode(.latent, default: 16)
            try k.require((1...4096).contains(latent), .latent, "latent must be an integer in 1...4096, got \(latent)")
            learningRate = try k.decode(.learningRate, default: 0.001)
            try k.require(learningRate > 0 && learningRate.isFinite && learningRate <= 10, .learningRate,
                          "lr must be a finite number in (0, 10], got \(learningRate)")
            temperature = try k.decode(.temperature, default: 2.0)
            try k.require(temperature >= 0.01 && temperature <= 100, .temperature, "temperature must be in [0.01, 100], got \(temperature)")
            gateProportion = try k.decode(.gateProportion, default: 0.8)
            try k.require(gateProportion >= 0 && gateProportion < 1, .gateProportion,
                          "gate_proportion (share of decoder units gated off per class) must be in [0, 1), got \(gateProportion)")
            conditional = try k.decode(.conditional, default: true)
            gates = try k.decode(.gates, default: true)
            distillation = try k.decode(.distillation, default: true)
            feedback = try k.decode(.feedback, default: true)
            try k.require(feedback, .feedback, "feedback: only true is implemented (the classifier is the VAE's encoder); a separate generator is \"generative_replay\"")
            internalReplay = try k.decode(.internalReplay, default: false)
            weighting = try k.decodeChoice(.weighting, default: .inverseTask)
            reconstruction = try k.decodeChoice(.reconstruction, default: .gaussian)
            try k.require(!(internalReplay && reconstruction == .bernoulli), .reconstruction,
                          "reconstruction must be \"gaussian\" with internal_replay: hidden activations are not in [0, 1]")
            replayPerBatch = try k.decode(.replayPerBatch, default: nil as Int?)
            if let r = replayPerBatch {
                try k.require((1...1_000_000).contains(r), .replayPerBatch, "replay_per_batch must be an integer in 1...1000000, got \(r)")
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var k = encoder.container(keyedBy: CodingKeys.self)
            try k.encode(latent, forKey: .latent)
            try k.encode(learningRate, forKey: .learningRate)
            try k.encode(temperature, forKey: .temperature)
            try k.encode(gateProportion, forKey: .gateProportion)
            try k.encode(conditional, forKey: .conditional)
            try k.encode(gates, forKey: .gates)
            try k.encode(distillation, forKey: .distillation)
            try k.encode(feedback, forKey: .feedback)
            try k.encode(internalReplay, forKey: .internalReplay)
            try k.encode(weighting, forKey: .weighting)
            try k.encode(reconstruction, forKey: .reconstruction)
            try k.encodeIfPresent(replayPerBatch, forKey: .replayPerBatch)
        }

        public func makePlugin() -> any StrategyPlugin { BIR(options: self) }

        /// toZ + decoder (about the model's hidden part again), two Adam moments, previous copies of
        /// them and of the model; the replayed rows appended to each batch.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(4 * (5 * shape.parameters), key: CodingKeys.latent.path)],
                             extraRowsPerBatch: replayPerBatch.map(Double.init) ?? shape.batchSize)
        }
    }
}
