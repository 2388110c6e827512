import ContinualCore

extension BiC {
    /// Exemplars (float32 features and a 4-byte label each); the previous model, the correction
    /// and the per-experience record. Per step one forward pass of the previous model; per
    /// experience the validation split's forward pass and the stage-2 epochs.
    public var resources: PluginResources {
        let stored = (trainSets + validationSets).reduce(0) { $0 + $1.count / max(dimension, 1) } * (4 * dimension + 4)
        let state = 8 * (2 + correction.corrected.count + 4 * history.count)
        guard let prev = previous else { return PluginResources(storedSampleBytes: stored, stateBytes: state) }
        let validation = validationSets.reduce(0) { $0 + $1.count / max(dimension, 1) }
        return PluginResources(storedSampleBytes: stored, stateBytes: state + 4 * prev.parameterCount,
                               extraFLOPsPerStep: batchSize * (prev.flopsPerPrediction + 12 * prev.logitCount),
                               extraFLOPsPerExperience: validation * (prev.flopsPerPrediction
                                   + options.biasEpochs * 12 * prev.logitCount))
    }

    public func checkpointState() -> PluginState {
        var s = PluginState(floats: ["train_exemplars": trainSets.flatMap { $0 }, "validation_exemplars": validationSets.flatMap { $0 }],
                            doubles: ["correction": [correction.alpha, correction.beta], "history": history.flatMap { $0 }],
                            ints: ["known": known.map { $0 ? 1 : 0 }, "corrected": correction.corrected.map { $0 ? 1 : 0 },
                                   "train_counts": trainSets.map { Int64($0.count / max(dimension, 1)) },
                                   "validation_counts": validationSets.map { Int64($0.count / max(dimension, 1)) },
                                   "rng.split": rng.state.map { Int64(bitPattern: $0) }])
        if let prev = previous { s.floats["previous_parameters"] = prev.parameters }
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        let k = known.count
        guard let kn = state.ints["known"], kn.count == k, let cc = state.ints["corrected"], cc.count == k,
              let tc = state.ints["train_counts"], tc.count == k, let vc = state.ints["validation_counts"], vc.count == k,
              (tc + vc).allSatisfy({ $0 >= 0 && $0 <= Int64(options.capacity) }),
              let tf = state.floats["train_exemplars"], tf.count == Int(tc.reduce(0, +)) * dimension,
              let vf = state.floats["validation_exemplars"], vf.count == Int(vc.reduce(0, +)) * dimension,
              let ab = state.doubles["correction"], ab.count == 2, let h = state.doubles["history"], h.count % 4 == 0,
              let r = state.ints["rng.split"], r.count == 4 else {
            throw CheckpointError.mismatch("bic state does not fit (\(k) classes, dimension \(dimension))")
        }
        known = kn.map { $0 != 0 }
        correction = BiasCorrection(alpha: ab[0], beta: ab[1], corrected: cc.map { $0 != 0 })
        trainSets = Self.split(tf, counts: tc, dimension: dimension)
        validationSets = Self.split(vf, counts: vc, dimension: dimension)
        history = stride(from: 0, to: h.count, by: 4).map { Array(h[$0..<($0 + 4)]) }
        rng = RandomSource(state: r.map { UInt64(bitPattern: $0) })
        previous = try state.previousModel(template: template, plugin: "bic")
    }

    /// `flat` cut into consecutive sets of `counts[i]` rows.
    static func split(_ flat: [Float], counts: [Int64], dimension: Int) -> [[Float]] {
        var at = 0
        return counts.map { n in
            defer { at += Int(n) * dimension }
            return Array(flat[at..<(at + Int(n) * dimension)])
        }
    }

    public func report() -> PluginReport {
        let T = history.count
        return PluginReport(attributes: [
            "capacity": .int(Int64(options.capacity)), "validation_fraction": .double(options.validationFraction),
            "temperature": .double(options.temperature), "lambda": options.lambda.map { .double($0) } ?? .string("n_old / (n_old + n_new)"),
            "bias_epochs": .int(Int64(options.biasEpochs)), "bias_lr": .double(options.biasLR),
            "beta_decay": .double(options.betaDecay),
            "alpha": .double(correction.alpha), "beta": .double(correction.beta),
            "train_exemplars": .int(Int64(trainSets.reduce(0) { $0 + $1.count / max(dimension, 1) })),
            "validation_exemplars": .int(Int64(validationSets.reduce(0) { $0 + $1.count / max(dimension, 1) })),
            "loss": .string("(1 - lambda) CE + lambda sum_{old c} -q_c log p_c, p, q = softmax over old classes of z/T and of the previous model's corrected logits/T"),
            "not_reproduced": .string("herding exemplars (random per class), data augmentation"),
        ], arrays: [
            "stages": .init(values: history.flatMap { $0 }, shape: [T, 4], attributes: [
                "meaning": .string("per experience: alpha, beta, lambda, validation samples stage 2 used (0: no stage 2, identity correction)")]),
        ])
    }
}

extension BiC {
    /// `{"type": "bic", "capacity": 200, "validation_fraction": 0.1, "temperature": 2}`.
    public struct Options: PluginOptions {
        public static let typeName = "bic"
        public static let summary = "BiC (Wu 2019): exemplars, distillation, then α·z + β on the newest classes' logits fitted on a held-out split"
        public static let storesSamples = true
        public static let composition = PluginComposition.soleRehearsal
        /// Exemplars in all classes together (training and validation).
        public var capacity = 200
        /// Share of each class's exemplars held out for stage 2 (the paper's 9:1 split).
        public var validationFraction = 0.1
        /// T of the distillation (the paper's 2).
        public var temperature = 2.0
        /// A fixed λ; nil = the paper's n_old / (n_old + n_new).
        public var lambda: Double?
        /// Stage 2's full-batch SGD epochs and learning rate (Avalanche's 200 and 0.1).
        public var biasEpochs = 200
        public var biasLR = 0.1
        /// Weight of β²/2 in stage 2 (the paper 0, the authors' code 0.1).
        public var betaDecay = 0.0

        enum Keys: String, CodingKey, CaseIterable {
            case capacity, temperature, lambda
            case validationFraction = "validation_fraction"
            case biasEpochs = "bias_epochs"
            case biasLR = "bias_lr"
            case betaDecay = "beta_decay"
        }

        public init(capacity: Int = 200, validationFraction: Double = 0.1, temperature: Double = 2, lambda: Double? = nil,
                    biasEpochs: Int = 200, biasLR: Double = 0.1, betaDecay: Double = 0) {
            (self.capacity, self.validationFraction, self.temperature) = (capacity, validationFraction, temperature)
            (self.lambda, self.biasEpochs, self.biasLR, self.betaDecay) = (lambda, biasEpochs, biasLR, betaDecay)
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            capacity = try c.decode(.capacity, default: 200)
            try c.require((1...10_000_000).contains(capacity), .capacity, "capacity must be in 1...10000000, got \(capacity)")
            validationFraction = try c.decode(.validationFraction, default: 0.1)
            try c.require(validationFraction > 0 && validationFraction < 1, .validationFraction,
                          "validation_fraction must be in (0, 1), got \(validationFraction)")
            temperature = try c.decode(.temperature, default: 2.0)
            try c.require(temperature > 0 && temperature.isFinite, .temperature, "temperature must be a finite number > 0, got \(temperature)")
            lambda = try c.decodeIfPresent(Double.self, forKey: .lambda)
            if let lambda { try c.require((0...1).contains(lambda), .lambda, "lambda must be in 0...1 (absent: n_old / (n_old + n_new)), got \(lambda)") }
            biasEpochs = try c.decode(.biasEpochs, default: 200)
            try c.require((0...100_000).contains(biasEpochs), .biasEpochs, "bias_epochs must be in 0...100000, got \(biasEpochs)")
            biasLR = try c.decode(.biasLR, default: 0.1)
            try c.require(biasLR > 0 && biasLR.isFinite, .biasLR, "bias_lr must be a finite number > 0, got \(biasLR)")
            betaDecay = try c.decode(.betaDecay, default: 0.0)
            try c.require(betaDecay >= 0 && betaDecay.isFinite, .betaDecay, "beta_decay must be a finite number ≥ 0, got \(betaDecay)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(capacity, forKey: .capacity)
            try c.encode(validationFraction, forKey: .validationFraction)
            try c.encode(temperature, forKey: .temperature)
            try c.encodeIfPresent(lambda, forKey: .lambda)
            try c.encode(biasEpochs, forKey: .biasEpochs)
            try c.encode(biasLR, forKey: .biasLR)
            try c.encode(betaDecay, forKey: .betaDecay)
        }

        public func makePlugin() -> any StrategyPlugin { BiC(options: self) }

        /// The corrected logits are not the network's: an exported network would predict without α, β.
        public var predictionExport: PredictionExport {
            .refused("bic predicts with α·z + β on the newest classes' logits (the run's plugin report holds α, β); "
                + "the exported network has no bias-correction layer")
        }

        /// The memory of `capacity` exemplars.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(Double(capacity) * shape.sampleBytes(), key: Keys.capacity.path)])
        }
    }
}
