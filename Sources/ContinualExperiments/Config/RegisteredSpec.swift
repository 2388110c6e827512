import ContinualCore

/// A family of options that experiment files name by `"type"` (strategies, scenarios): how to
/// find a registered type by name and decode it, so one generic `RegisteredSpec` serves both.
public protocol SpecFamily {
    /// The existential options type of the family (`any PluginOptions`).
    associatedtype Options: Sendable
    /// What the family is called in error messages ("strategy", "scenario").
    static var kind: String { get }
    /// Every registered type name, in registry order.
    static var typeNames: [String] { get }
    /// Decodes the options of the type registered as `name` (nil if none is).
    static func decode(typeNamed name: String, from decoder: any Decoder) throws -> Options?
    static func typeName(of options: Options) -> String
    static func encode(_ options: Options, to encoder: any Encoder) throws
}

/// One `{"type": NAME, ...options}` entry of an experiment file: a registered type and its
/// decoded options (strict: unknown types and keys name their key path and the allowed values).
public struct RegisteredSpec<Family: SpecFamily>: Codable, @unchecked Sendable, Equatable {
    // The options are Sendable by protocol; the existential box is immutable here.
    public let options: Family.Options

    public init(_ options: Family.Options) { self.options = options }

    public var typeName: String { Family.typeName(of: options) }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        let name = try c.decode(String.self, forKey: AnyCodingKey("type"))
        guard let decoded = try Family.decode(typeNamed: name, from: decoder) else {
            throw DecodingError.dataCorruptedError(
                forKey: AnyCodingKey("type"), in: c,
                debugDescription: "unknown \(Family.kind) \"\(name)\"\(didYouMean(name, Family.typeNames)); allowed: \(Family.typeNames.joined(separator: ", "))")
        }
        options = decoded
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyCodingKey.self)
        try c.encode(typeName, forKey: AnyCodingKey("type"))
        try Family.encode(options, to: encoder)
    }

    public static func == (a: RegisteredSpec, b: RegisteredSpec) -> Bool {
        a.typeName == b.typeName && (try? JSONValue.encodeCanonical(a)) == (try? JSONValue.encodeCanonical(b))
    }
}

/// `"strategy"` entries: the plugins in `Registry.strategies`.
public enum StrategyFamily: SpecFamily {
    public static let kind = "strategy"
    public static var typeNames: [String] { Registry.strategies.map { $0.typeName } }
    public static func decode(typeNamed name: String, from decoder: any Decoder) throws -> (any PluginOptions)? {
        guard let type = Registry.strategy(named: name) else { return nil }
        return try open(type, decoder)
    }
    public static func typeName(of options: any PluginOptions) -> String { Swift.type(of: options).typeName }
    public static func encode(_ options: any PluginOptions, to encoder: any Encoder) throws { try options.encode(to: encoder) }
    // Calling `init(from:)` on an existential metatype directly crashes the 6.3 compiler
    // (SILGen), so the metatype is opened through a generic function instead.
    private static func open<T: PluginOptions>(_ type: T.Type, _ decoder: any Decoder) throws -> any PluginOptions {
        try T(from: decoder)
    }
}

/// `"scenario"`: the generators in `Registry.scenarios`.
public enum ScenarioFamily: SpecFamily {
    public static let kind = "scenario"
    public static var typeNames: [String] { Registry.scenarios.map { $0.typeName } }
    public static func decode(typeNamed name: String, from decoder: any Decoder) throws -> (any ScenarioOptions)? {
        guard let type = Registry.scenario(named: name) else { return nil }
        return try open(type, decoder)
    }
    public static func typeName(of options: any ScenarioOptions) -> String { Swift.type(of: options).typeName }
    public static func encode(_ options: any ScenarioOptions, to encoder: any Encoder) throws { try options.encode(to: encoder) }
    private static func open<T: ScenarioOptions>(_ type: T.Type, _ decoder: any Decoder) throws -> any ScenarioOptions {
        try T(from: decoder)
    }
}

/// One entry of `"strategy"`.
public typealias StrategySpec = RegisteredSpec<StrategyFamily>
/// `"scenario"`.
public typealias ScenarioSpec = RegisteredSpec<ScenarioFamily>
