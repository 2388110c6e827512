import ContinualCore

/// The parameter names, labelling subset, presets and valid ranges of one generator's concepts.
public protocol ConceptSchema: Sendable {
    associatedtype Key: RawRepresentable & CaseIterable & Hashable & Sendable where Key.RawValue == String
    /// Parameters of the labelling function P(y|x); the rest shape the inputs P(x).
    static var labelKeys: Set<Key> { get }
    /// Built-in concepts by name; each gives every key.
    static var presets: [String: [Key: Double]] { get }
    static var defaultPreset: String { get }
    /// Allowed range of each key (absent: any finite number).
    static var ranges: [Key: ClosedRange<Double>] { get }
}

/// A named set of numeric behaviour parameters: the concept type of the notification, app usage
/// and health generators. In JSON either a preset name (`"fatigued"`) or an object
/// `{"preset": "fatigued", "name": "...", "<key>": value, ...}` overriding the preset's values.
public struct ParameterConcept<Schema: ConceptSchema>: DriftConcept, Codable, Equatable, Sendable {
    public var name: String
    public var values: [Schema.Key: Double]

    public init(name: String, values: [Schema.Key: Double]) {
        self.name = name
        self.values = values
    }

    /// A built-in concept.
    public static func preset(_ name: String) -> ParameterConcept {
        ParameterConcept(name: name, values: Schema.presets[name]!)
    }

    public static var presetNames: [String] { Schema.presets.keys.sorted() }

    public subscript(_ key: Schema.Key) -> Double {
        get { values[key] ?? 0 }
        set { values[key] = newValue }
    }

    public func interpolated(to other: ParameterConcept, fraction t: Double) -> ParameterConcept {
        var p = self
        p.name = t < 0.5 ? name : other.name
        for k in Schema.Key.allCases { p[k] = lerp(self[k], other[k], t) }
        return p
    }

    public func withLabelFunction(of other: ParameterConcept) -> ParameterConcept {
        var p = self
        for k in Schema.labelKeys { p[k] = other[k] }
        return p
    }

    /// The labelling parameters only (equal for two concepts ⇔ same P(y|x)).
    public var labelFunction: [Double] {
        Schema.Key.allCases.filter { Schema.labelKeys.contains($0) }.map { self[$0] }
    }

    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), let n = try? single.decode(String.self) {
            guard Schema.presets[n] != nil else {
                throw DecodingError.dataCorruptedError(
                    in: single, debugDescription: "unknown phase \"\(n)\"\(didYouMean(n, Self.presetNames)); presets: \(Self.presetNames.joined(separator: ", "))")
            }
            self = .preset(n)
            return
        }
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        let allowed = Set(["preset", "name"] + Schema.Key.allCases.map(\.rawValue))
        for key in c.allKeys where !allowed.contains(key.stringValue) {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: c, debugDescription: "unknown key \"\(key.stringValue)\"\(didYouMean(key.stringValue, allowed)); allowed keys: \(allowed.sorted().joined(separator: ", "))")
        }
        let presetName = try c.decode(AnyCodingKey("preset"), default: Schema.defaultPreset)
        guard let base = Schema.presets[presetName] else {
            throw DecodingError.dataCorruptedError(
                forKey: AnyCodingKey("preset"), in: c,
                debugDescription: "unknown preset \"\(presetName)\"\(didYouMean(presetName, Self.presetNames)); presets: \(Self.presetNames.joined(separator: ", "))")
        }
        name = try c.decode(AnyCodingKey("name"), default: c.contains(AnyCodingKey("preset")) ? presetName : "custom")
        values = base
        for k in Schema.Key.allCases {
            let key = AnyCodingKey(k.rawValue)
            guard c.contains(key) else { continue }
            let v = try c.decode(Double.self, forKey: key)
            let range = Schema.ranges[k] ?? -1e6...1e6
            try c.require(range.contains(v), key, "must be in \(range.lowerBound)...\(range.upperBound), got \(v)")
            values[k] = v
        }
    }

    /// Always the full parameter set, so the resolved config is explicit.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyCodingKey.self)
        try c.encode(name, forKey: AnyCodingKey("name"))
        for k in Schema.Key.allCases { try c.encode(self[k], forKey: AnyCodingKey(k.rawValue)) }
    }

    public static func == (a: ParameterConcept, b: ParameterConcept) -> Bool {
        a.name == b.name && Schema.Key.allCases.allSatisfy { a[$0] == b[$0] }
    }
}
