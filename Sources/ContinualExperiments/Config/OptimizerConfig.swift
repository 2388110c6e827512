import ContinualCore

/// `"optimizer"`: `{"type": "sgd" | "adam" | "adamw" | "adafactor" | "adam8bit", "lr": …, …}`;
/// keys that do not belong to the chosen type are errors.
///
/// Adafactor (`AdafactorOptions`): `beta1` (default 0: no first moment), `decay_rate` (−0.8),
/// `clip_threshold` (1), `eps` (ε1, 1e-30), `eps_scale` (ε2, 1e-3), `relative_step` (false; true
/// uses lr as the cap of ρ_t, default 0.01 then), `factored` (true), `weight_decay` (0, decoupled).
/// 8-bit Adam (`Adam8bitOptions`): Adam's keys with decoupled `weight_decay` (0),
/// `block_size` (2048) and `min_8bit_size` (4096: smaller tensors keep float32 moments).
public struct OptimizerConfig: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, CaseIterable, Sendable { case sgd, adam, adamw, adafactor, adam8bit }

    public var kind: Kind = .sgd
    public var learningRate: Float = 0.05
    public var momentum: Float = 0
    /// Default 0 for SGD and Adam, 0.01 for AdamW (PyTorch's defaults).
    public var weightDecay: Float = 0
    public var nesterov: Bool = false
    public var beta1: Float = 0.9
    public var beta2: Float = 0.999
    public var epsilon: Float = 1e-8
    public var decayRate: Float = -0.8
    public var clipThreshold: Float = 1
    public var epsilonScale: Float = 1e-3
    public var relativeStep = false
    public var factored = true
    public var blockSize = 2048
    public var minQuantizedSize = 4096

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind = "type", learningRate = "lr", momentum, weightDecay = "weight_decay", nesterov, beta1, beta2
        case epsilon = "eps", decayRate = "decay_rate", clipThreshold = "clip_threshold", epsilonScale = "eps_scale"
        case relativeStep = "relative_step", factored, blockSize = "block_size", minQuantizedSize = "min_8bit_size"
    }

    static let allowed: [Kind: Set<String>] = [
        .sgd: ["type", "lr", "momentum", "weight_decay", "nesterov"],
        .adam: ["type", "lr", "beta1", "beta2", "eps", "weight_decay"],
        .adamw: ["type", "lr", "beta1", "beta2", "eps", "weight_decay"],
        .adafactor: ["type", "lr", "beta1", "decay_rate", "clip_threshold", "eps", "eps_scale", "relative_step",
                     "factored", "weight_decay"],
        .adam8bit: ["type", "lr", "beta1", "beta2", "eps", "weight_decay", "block_size", "min_8bit_size"],
    ]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        kind = try c.decodeChoice(.kind, default: .sgd)
        let permitted = OptimizerConfig.allowed[kind]!
        for key in c.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) where !permitted.contains(key.stringValue) {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: c,
                debugDescription: "not an option of \(kind.rawValue)\(didYouMean(key.stringValue, permitted)); allowed keys: \(permitted.sorted().joined(separator: ", "))")
        }
        relativeStep = try c.decode(.relativeStep, default: false)
        learningRate = try c.decode(.learningRate, default: kind == .adafactor && relativeStep ? 0.01 : 0.05)
        momentum = try c.decode(.momentum, default: 0)
        weightDecay = try c.decodeIfPresent(Float.self, forKey: .weightDecay) ?? (kind == .adamw ? 0.01 : 0)
        nesterov = try c.decode(.nesterov, default: false)
        beta1 = try c.decode(.beta1, default: kind == .adafactor ? 0 : 0.9)
        beta2 = try c.decode(.beta2, default: 0.999)
        epsilon = try c.decode(.epsilon, default: kind == .adafactor ? 1e-30 : 1e-8)
        decayRate = try c.decode(.decayRate, default: -0.8)
        clipThreshold = try c.decode(.clipThreshold, default: 1)
        epsilonScale = try c.decode(.epsilonScale, default: 1e-3)
        factored = try c.decode(.factored, default: true)
        blockSize = try c.decode(.blockSize, default: 2048)
        minQuantizedSize = try c.decode(.minQuantizedSize, default: 4096)
        try c.require(minQuantizedSize >= 0, .minQuantizedSize, "must be ≥ 0 (0 quantises every tensor), got \(minQuantizedSize)")
        try c.require(decayRate < 0 && decayRate >= -1, .decayRate, "must be in [-1, 0) (β̂2_t = 1 − t^decay_rate), got \(decayRate)")
        try c.require(clipThreshold > 0 && clipThreshold.isFinite, .clipThreshold, "must be a finite number > 0, got \(clipThreshold)")
        try c.require(epsilonScale >= 0 && epsilonScale.isFinite, .epsilonScale, "must be a finite number ≥ 0, got \(epsilonScale)")
        try c.require(blockSize >= 1 && blockSize <= 1 << 20, .blockSize, "must be in 1…1048576, got \(blockSize)")
        try c.require(learningRate > 0 && learningRate.isFinite, .learningRate, "must be a finite number > 0, got \(learningRate)")
        try c.require((0..<1).contains(momentum), .momentum, "must be in [0, 1), got \(momentum)")
        try c.require(weightDecay >= 0, .weightDecay, "must be ≥ 0, got \(weightDecay)")
        try c.require((0..<1).contains(beta1), .beta1, "must be in [0, 1), got \(beta1)")
        try c.require((0..<1).contains(beta2), .beta2, "must be in [0, 1), got \(beta2)")
        try c.require(epsilon > 0 && epsilon.isFinite, .epsilon, "must be a finite number > 0, got \(epsilon)")
        try c.require(!nesterov || momentum > 0, .nesterov, "needs momentum > 0")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(learningRate, forKey: .learningRate)
        try c.encode(resolvedWeightDecay, forKey: .weightDecay)
        switch kind {
        case .sgd:
            try c.encode(momentum, forKey: .momentum)
            try c.encode(nesterov, forKey: .nesterov)
        case .adam, .adamw:
            try c.encode(beta1, forKey: .beta1)
            try c.encode(beta2, forKey: .beta2)
            try c.encode(epsilon, forKey: .epsilon)
        case .adafactor:
            try c.encode(beta1, forKey: .beta1)
            try c.encode(decayRate, forKey: .decayRate)
            try c.encode(clipThreshold, forKey: .clipThreshold)
            try c.encode(epsilon, forKey: .epsilon)
            try c.encode(epsilonScale, forKey: .epsilonScale)
            try c.encode(relativeStep, forKey: .relativeStep)
            try c.encode(factored, forKey: .factored)
        case .adam8bit:
            try c.encode(beta1, forKey: .beta1)
            try c.encode(beta2, forKey: .beta2)
            try c.encode(epsilon, forKey: .epsilon)
            try c.encode(blockSize, forKey: .blockSize)
            try c.encode(minQuantizedSize, forKey: .minQuantizedSize)
        }
    }

    public var resolvedWeightDecay: Float { weightDecay }

    public var spec: OptimizerSpec {
        switch kind {
        case .sgd: return .sgd(learningRate: learningRate, momentum: momentum, weightDecay: resolvedWeightDecay, nesterov: nesterov)
        case .adam: return .adam(learningRate: learningRate, beta1: beta1, beta2: beta2, epsilon: epsilon, weightDecay: resolvedWeightDecay)
        case .adamw: return .adamw(learningRate: learningRate, beta1: beta1, beta2: beta2, epsilon: epsilon, weightDecay: resolvedWeightDecay)
        case .adafactor:
            return .adafactor(AdafactorOptions(learningRate: learningRate, beta1: beta1, decayRate: decayRate,
                                               clipThreshold: clipThreshold, epsilon1: epsilon, epsilon2: epsilonScale,
                                               relativeStep: relativeStep, factored: factored, weightDecay: resolvedWeightDecay))
        case .adam8bit:
            return .adam8bit(Adam8bitOptions(learningRate: learningRate, beta1: beta1, beta2: beta2, epsilon: epsilon,
                                             weightDecay: resolvedWeightDecay, blockSize: blockSize,
                                             minQuantizedSize: minQuantizedSize))
        }
    }
}
