import ContinualCore

extension EWC {
    /// `{"type": "ewc", "lambda": 100, "fisher": "exact", "mode": "separate", ...}`.
    ///
    /// Every option has a default; `encode(to:)` writes all of them (the resolved config), with
    /// `fisher_samples: "all"` and `save_importance: "auto"` for the data-dependent defaults.
    public struct Options: PluginOptions {
        public static let typeName = "ewc"
        public static let strengthKey: String? = "lambda"
        public static let summary = "elastic weight consolidation (Kirkpatrick 2017) / online EWC (Schwarz 2018)"

        /// How the diagonal Fisher is estimated (see `EWC`).
        public enum Estimator: String, CaseIterable, Sendable, Codable { case exact, sample, empirical, batched }
        /// One penalty term per past experience, or one running term.
        public enum Mode: String, CaseIterable, Sendable, Codable { case separate, online }

        /// Penalty strength λ ≥ 0 (0 = naive).
        public var lambda: Double = Options.defaultLambda
        public var fisher: Estimator = .exact
        /// Samples of the experience's training set used for F; nil = all of them.
        public var fisherSamples: Int? = nil
        /// Mini-batch size of the `batched` estimator.
        public var fisherBatchSize: Int = 32
        /// true: (λ/2) Σ F (θ − θ*)² (the paper); false: λ Σ F (θ − θ*)².
        public var half: Bool = true
        public var mode: Mode = .separate
        /// Decay of the running Fisher in `online` mode, 0 < γ ≤ 1 (ignored in `separate`).
        public var gamma: Double = 1
        /// Write the Fisher and anchor vectors; nil = only for models with < 100 000 parameters.
        public var saveImportance: Bool? = nil

        /// λ used when the JSON gives none (chosen on the habit drift scenario, see docs/strategies.md).
        public static let defaultLambda = 100.0
        /// Models below this parameter count save importance vectors by default.
        public static let importanceParameterLimit = 100_000

        public init(lambda: Double = Options.defaultLambda, fisher: Estimator = .exact, fisherSamples: Int? = nil,
                    fisherBatchSize: Int = 32, half: Bool = true, mode: Mode = .separate, gamma: Double = 1,
                    saveImportance: Bool? = nil) {
            self.lambda = lambda
            self.fisher = fisher
            self.fisherSamples = fisherSamples
            self.fisherBatchSize = fisherBatchSize
            self.half = half
            self.mode = mode
            self.gamma = gamma
            self.saveImportance = saveImportance
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case lambda, fisher, half, mode, gamma
            case fisherSamples = "fisher_samples"
            case fisherBatchSize = "fisher_batch_size"
            case saveImportance = "save_importance"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            lambda = try c.decode(.lambda, default: Options.defaultLambda)
            try c.require(lambda >= 0 && lambda.isFinite, .lambda, "lambda must be a finite number ≥ 0, got \(lambda)")
            fisher = try c.decodeChoice(.fisher, default: .exact)
            fisherSamples = try c.decodeCountOrAll(.fisherSamples)
            fisherBatchSize = try c.decode(.fisherBatchSize, default: 32)
            try c.require(fisherBatchSize >= 1, .fisherBatchSize, "fisher_batch_size must be ≥ 1, got \(fisherBatchSize)")
            half = try c.decode(.half, default: true)
            mode = try c.decodeChoice(.mode, default: .separate)
            gamma = try c.decode(.gamma, default: 1.0)
            try c.require(gamma > 0 && gamma <= 1, .gamma, "gamma must be in (0, 1], got \(gamma)")
            saveImportance = try c.decodeBoolOrAuto(.saveImportance)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(lambda, forKey: .lambda)
            try c.encode(fisher.rawValue, forKey: .fisher)
            if let n = fisherSamples { try c.encode(n, forKey: .fisherSamples) } else { try c.encode("all", forKey: .fisherSamples) }
            try c.encode(fisherBatchSize, forKey: .fisherBatchSize)
            try c.encode(half, forKey: .half)
            try c.encode(mode.rawValue, forKey: .mode)
            try c.encode(gamma, forKey: .gamma)
            if let s = saveImportance { try c.encode(s, forKey: .saveImportance) } else { try c.encode("auto", forKey: .saveImportance) }
        }

        /// Whether the report carries importance vectors for a model of `parameterCount` parameters.
        public func savesImportance(parameterCount: Int) -> Bool {
            saveImportance ?? (parameterCount < Options.importanceParameterLimit)
        }

        public func makePlugin() -> any StrategyPlugin { EWC(options: self) }
        /// The time estimate's prior: measured on `Experiments/sweeps/eta_mixed_800.json` (EWC
        /// against naive, hidden [16] … [128, 64]), the exact Fisher (one batch-1 gradient per
        /// training sample) costs ≈ 2.8 epochs per experience and the penalty ≈ 0.18 epoch per epoch.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(extraPassesPerExperience: 2.8, extraPassesPerEpoch: 0.18)
        }
    }
}
