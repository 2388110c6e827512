import ContinualCore

/// `"optimizer"`: `{"type": "sgd" | "adam" | "adamw", "lr": …, …}`; keys that do not belong to
/// the chosen type are errors.
public struct OptimizerConfig: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, CaseIterable, Sendable { case sgd, adam, adamw }

    public var kind: Kind = .sgd
    public var learningRate: Float = 0.05
    public var momentum: Float = 0
    /// Default 0 for SGD and Adam, 0.01 for AdamW (PyTorch's defaults).
    public var weightDecay: Float = 0
    public var nesterov: Bool = false
    public var beta1: Float = 0.9
    public var beta2: Float = 0.999
    public var epsilon: Float = 1e-8

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind = "type", learningRate = "lr", momentum, weightDecay = "weight_decay", nesterov, beta1, beta2
        case epsilon = "eps"
    }

    static let allowed: [Kind: Set<String>] = [
        .sgd: ["type", "lr", "momentum", "weight_decay", "nesterov"],
        .adam: ["type", "lr", "beta1", "beta2", "eps", "weight_decay"],
        .adamw: ["type", "lr", "beta1", "beta2", "eps", "weight_decay"],
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
        learningRate = try c.decode(.learningRate, default: 0.05)
        momentum = try c.decode(.momentum, default: 0)
        weightDecay = try c.decodeIfPresent(Float.self, forKey: .weightDecay) ?? (kind == .adamw ? 0.01 : 0)
        nesterov = try c.decode(.nesterov, default: false)
        beta1 = try c.decode(.beta1, default: 0.9)
        beta2 = try c.decode(.beta2, default: 0.999)
        epsilon = try c.decode(.epsilon, default: 1e-8)
        try c.require(learningRate > 0 && learningRate.isFinite, .learningRate, "must be a finite number > 0, got \(learningRate)")
        try c.require((0..<1).contains(momentum), .momentum, "must be in [0, 1), got \(momentum)")
        try c.require(weightDecay >= 0, .weightDecay, "must be ≥ 0, got \(weightDecay)")
        try c.require((0..<1).contains(beta1), .beta1, "must be in [0, 1), got \(beta1)")
        try c.require((0..<1).contains(beta2), .beta2, "must be in [0, 1), got \(beta2)")
        try c.require(epsilon > 0, .epsilon, "must be > 0, got \(epsilon)")
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
        }
    }

    public var resolvedWeightDecay: Float { weightDecay }

    public var spec: OptimizerSpec {
        switch kind {
        case .sgd: return .sgd(learningRate: learningRate, momentum: momentum, weightDecay: resolvedWeightDecay, nesterov: nesterov)
        case .adam: return .adam(learningRate: learningRate, beta1: beta1, beta2: beta2, epsilon: epsilon, weightDecay: resolvedWeightDecay)
        case .adamw: return .adamw(learningRate: learningRate, beta1: beta1, beta2: beta2, epsilon: epsilon, weightDecay: resolvedWeightDecay)
        }
    }
}
