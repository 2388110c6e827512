import ContinualCore

/// One entry of `"strategy"`: a registered plugin type and its decoded options.
public struct StrategySpec: Codable, @unchecked Sendable, Equatable {
    // `any PluginOptions` is Sendable by protocol; the existential box is immutable here.
    public let options: any PluginOptions

    public init(_ options: any PluginOptions) { self.options = options }

    public var typeName: String { Swift.type(of: options).typeName }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        let name = try c.decode(String.self, forKey: AnyCodingKey("type"))
        guard let type = Registry.strategy(named: name) else {
            throw DecodingError.dataCorruptedError(
                forKey: AnyCodingKey("type"), in: c,
                debugDescription: "unknown strategy \"\(name)\"; allowed: \(Registry.strategies.map { $0.typeName }.joined(separator: ", "))")
        }
        let decoded = try decodePluginOptions(type, from: decoder)
        options = decoded
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyCodingKey.self)
        try c.encode(typeName, forKey: AnyCodingKey("type"))
        try options.encode(to: encoder)
    }

    public static func == (a: StrategySpec, b: StrategySpec) -> Bool {
        a.typeName == b.typeName && (try? JSONValue.encodeCanonical(a)) == (try? JSONValue.encodeCanonical(b))
    }
}

/// `"scenario"`: a registered scenario type and its decoded options.
public struct ScenarioSpec: Codable, @unchecked Sendable, Equatable {
    public let options: any ScenarioOptions

    public init(_ options: any ScenarioOptions) { self.options = options }

    public var typeName: String { Swift.type(of: options).typeName }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        let name = try c.decode(String.self, forKey: AnyCodingKey("type"))
        guard let type = Registry.scenario(named: name) else {
            throw DecodingError.dataCorruptedError(
                forKey: AnyCodingKey("type"), in: c,
                debugDescription: "unknown scenario \"\(name)\"; allowed: \(Registry.scenarios.map { $0.typeName }.joined(separator: ", "))")
        }
        let decoded = try decodeScenarioOptions(type, from: decoder)
        options = decoded
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyCodingKey.self)
        try c.encode(typeName, forKey: AnyCodingKey("type"))
        try options.encode(to: encoder)
    }

    public static func == (a: ScenarioSpec, b: ScenarioSpec) -> Bool {
        a.typeName == b.typeName && (try? JSONValue.encodeCanonical(a)) == (try? JSONValue.encodeCanonical(b))
    }
}

// Generic openers: calling `init(from:)` on an existential metatype directly crashes the 6.3
// compiler (SILGen), so the metatype is opened through a generic function instead.
private func decodePluginOptions<T: PluginOptions>(_ type: T.Type, from decoder: any Decoder) throws -> any PluginOptions {
    try T(from: decoder)
}

private func decodeScenarioOptions<T: ScenarioOptions>(_ type: T.Type, from decoder: any Decoder) throws -> any ScenarioOptions {
    try T(from: decoder)
}
