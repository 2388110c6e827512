import ContinualCore

extension SCR {
    /// `{"type": "scr", "capacity": 200, "replay_per_batch": 100, "temperature": 0.1,
    /// "projection": "mlp", "projection_dim": 128, "noise_std": 0.1, "feature_drop": 0.2, "shift": 0, "scale": 0}`.
    public struct Options: PluginOptions {
        public static let typeName = "scr"
        public static let summary = "SCR (Mai 2021): supervised contrastive loss on incoming + replayed rows, nearest-class-mean prediction from the memory"
        public static let storesSamples = true
        public static let composition = PluginComposition.soleRehearsal
        /// The projection head between the features and the loss (the authors' `--head`): `mlp` is
        /// Linear(w, w) → ReLU → Linear(w, projection_dim), `linear` one Linear(w, projection_dim),
        /// `none` the loss on the normalised features themselves.
        public enum Projection: String, Codable, Sendable, CaseIterable { case mlp, linear, none }
        /// Reservoir memory size, and stored rows drawn per step (the authors' `eps_mem_batch`: 100).
        public var capacity = 200
        public var replayPerBatch = 100
        /// τ of the SupCon loss: 0.1 in the authors' paper configurations (`config_CVPR/agent/scr`)
        /// and Avalanche; their README and argparse default say 0.07.
        public var temperature = 0.1
        public var projection = Projection.mlp
        public var projectionDim = 128
        /// The second view of every row (`SupConLoss.augment`): moved by up to `shift` positions
        /// (a translation, for signals whose features are ordered in time or space; 0: off) and
        /// scaled by a factor in [1 − `scale`, 1 + `scale`] (0: off), then Gaussian noise of
        /// `noise_std` (in the inputs' units) on every feature, then each feature zeroed with
        /// probability `feature_drop`. All 0: two identical views.
        public var noiseStd = 0.1
        public var featureDrop = 0.2
        public var shift = 0
        public var scale = 0.0

        enum Keys: String, CodingKey, CaseIterable {
            case capacity, temperature, projection
            case replayPerBatch = "replay_per_batch"
            case projectionDim = "projection_dim"
            case noiseStd = "noise_std"
            case featureDrop = "feature_drop"
            case shift, scale
        }

        public init(capacity: Int = 200, replayPerBatch: Int = 100, temperature: Double = 0.1, projection: Projection = .mlp,
                    projectionDim: Int = 128, noiseStd: Double = 0.1, featureDrop: Double = 0.2, shift: Int = 0, scale: Double = 0) {
            (self.capacity, self.replayPerBatch, self.temperature) = (capacity, replayPerBatch, temperature)
            (self.projection, self.projectionDim, self.noiseStd, self.featureDrop) = (projection, projectionDim, noiseStd, featureDrop)
            (self.shift, self.scale) = (shift, scale)
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self, alsoAllowed: ["type"])
            capacity = try c.decode(.capacity, default: 200)
            try c.require((1...10_000_000).contains(capacity), .capacity, "capacity must be in 1...10000000, got \(capacity)")
            replayPerBatch = try c.decode(.replayPerBatch, default: 100)
            try c.require((0...100_000).contains(replayPerBatch), .replayPerBatch,
                          "replay_per_batch must be in 0...100000, got \(replayPerBatch)")
            temperature = try c.decode(.temperature, default: 0.1)
            try c.require(temperature >= 0.001 && temperature <= 100, .temperature,
                          "temperature must be in [0.001, 100], got \(temperature)")
            projection = try c.decodeChoice(.projection, default: .mlp)
            projectionDim = try c.decode(.projectionDim, default: 128)
            try c.require((2...65_536).contains(projectionDim), .projectionDim,
                          "projection_dim must be in 2...65536, got \(projectionDim)")
            noiseStd = try c.decode(.noiseStd, default: 0.1)
            try c.require(noiseStd >= 0 && noiseStd.isFinite, .noiseStd, "noise_std must be a finite number ≥ 0, got \(noiseStd)")
            featureDrop = try c.decode(.featureDrop, default: 0.2)
            try c.require(featureDrop >= 0 && featureDrop < 1, .featureDrop, "feature_drop must be in [0, 1), got \(featureDrop)")
            shift = try c.decode(.shift, default: 0)
            try c.require((0...65_536).contains(shift), .shift, "shift must be in 0...65536 positions, got \(shift)")
            scale = try c.decode(.scale, default: 0)
            try c.require(scale >= 0 && scale < 1, .scale, "scale must be in [0, 1), got \(scale)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(capacity, forKey: .capacity)
            try c.encode(replayPerBatch, forKey: .replayPerBatch)
            try c.encode(temperature, forKey: .temperature)
            try c.encode(projection, forKey: .projection)
            try c.encode(projectionDim, forKey: .projectionDim)
            try c.encode(noiseStd, forKey: .noiseStd)
            try c.encode(featureDrop, forKey: .featureDrop)
            // Written only when on, so configurations from before these options encode (and hash) as they did.
            if shift != 0 { try c.encode(shift, forKey: .shift) }
            if scale != 0 { try c.encode(scale, forKey: .scale) }
        }

        public func makePlugin() -> any StrategyPlugin { SCR(options: self) }

        /// SCR predicts by the nearest mean of its memory's features; the network's own head is
        /// never trained by it.
        public var predictionExport: PredictionExport {
            .refused("scr predicts by the nearest class mean of its memory's normalised features; the exported network's head "
                + "is not trained by scr and the class means are not stored with the run")
        }

        /// The memory of `capacity` samples and `replay_per_batch` rows per batch (each in two views).
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            PlannedResources(memory: [.init(Double(capacity) * shape.sampleBytes(), key: Keys.capacity.path)],
                             extraRowsPerBatch: Double(replayPerBatch))
        }
    }
}
