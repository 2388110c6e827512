import Foundation

/// A JSON document as a value, used to merge variant overrides and set swept values by key path
/// before the strict, typed decode. Integers stay integers (no Double round trip for seeds).
public enum JSONValue: Codable, Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    /// Only for integers above Int64.max (e.g. a UInt64 seed); everything else is `.int`.
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .int(i) }
        else if let u = try? c.decode(UInt64.self) { self = .uint(u) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .uint(let u): try c.encode(u)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// `self` with `override` merged in: objects merge key by key, anything else is replaced. An
    /// override object whose `"type"` differs from the base's replaces it whole (switching SGD to
    /// Adam must not inherit SGD's `momentum`).
    public func merging(_ override: JSONValue) -> JSONValue {
        guard case .object(var base) = self, case .object(let over) = override else { return override }
        if let t = over["type"], let b = base["type"], t != b { return override }
        for (k, v) in over { base[k] = base[k].map { $0.merging(v) } ?? v }
        return .object(base)
    }

    /// Canonical text: sorted keys, no whitespace.
    public func canonicalText() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// Short human-readable form for labels and tables.
    public var shortDescription: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return String(b)
        case .int(let i): return String(i)
        case .uint(let u): return String(u)
        case .double(let d): return String(d)
        case .string(let s): return s
        default: return canonicalText()
        }
    }
}
