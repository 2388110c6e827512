import ContinualCore

/// `"model"`: the MLP between the scenario's features and its output head.
public struct ModelConfig: Codable, Sendable, Equatable {
    /// Hidden layer widths; `[]` gives logistic/softmax regression. Default `[16, 8]`.
    public var hidden: [Int] = [16, 8]
    public var activation: Activation = .relu
    public var initialization: Initialization = .auto
    /// One output head per experience (task-incremental: the experience id picks the head).
    public var multiHead: Bool = false
    /// Start from another run's trained parameters (see `WarmStart`); nil = random weights.
    public var initFrom: WarmStart? = nil

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case hidden, activation, initialization = "init", multiHead = "multi_head", initFrom = "init_from"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        hidden = try c.decode(.hidden, default: [16, 8])
        activation = try c.decodeChoice(.activation, default: .relu)
        initialization = try c.decodeChoice(.initialization, default: .auto)
        multiHead = try c.decode(.multiHead, default: false)
        initFrom = try c.decodeIfPresent(WarmStart.self, forKey: .initFrom)
        // No upper bound here: the resource estimate refuses widths the machine cannot hold,
        // with the memory it would need (see Preflight).
        if let i = hidden.firstIndex(where: { $0 < 1 }) {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath + [CodingKeys.hidden, AnyCodingKey(intValue: i)!],
                                                    debugDescription: "every width must be ≥ 1, got \(hidden[i])"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(hidden, forKey: .hidden)
        try c.encode(activation, forKey: .activation)
        try c.encode(initialization, forKey: .initialization)
        try c.encode(multiHead, forKey: .multiHead)
        // Absent when not set, so the canonical JSON (and run ids) of cold starts are unchanged.
        try c.encodeIfPresent(initFrom, forKey: .initFrom)
    }

    /// The network spec for a stream with `inputs` features and `head`, over `experiences`;
    /// throws when its size is beyond `DataLimits` (checked with overflow-safe arithmetic, before
    /// anything is allocated).
    public func spec(inputs: Int, head: OutputHead, experiences: Int) throws -> MLPSpec {
        let spec = MLPSpec(inputs: inputs, hidden: hidden, activation: activation, head: head,
                           heads: multiHead ? max(experiences, 1) : 1, initialization: initialization)
        if let e = spec.sizeError() { throw TrainingError.invalid("model: \(e)") }
        return spec
    }
}
