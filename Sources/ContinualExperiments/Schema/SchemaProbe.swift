import ContinualCore

/// Derives JSON Schema definitions from the configs' own `init(from:)`, so the schema cannot
/// drift from what `validate` accepts: each type is decoded from a `ProbeDecoder` that records
/// every key, JSON kind and choice it is asked for and answers with placeholders.
///
/// One decode shows one path through the code, so each type is probed in several passes:
/// - a pass that ends in an error (a placeholder refused by a check) makes the last key it asked
///   for absent in the next pass, until a pass succeeds or no new key can be made absent;
/// - then one pass per position where a primitive was asked for, with that first ask failing, so
///   a decoder that tries one JSON kind after another (`"all"` or an integer) shows each.
/// Every pass records into the same `SchemaNode` tree. Placeholders: 1 for integers, 0.5 for
/// floating point, false, the string "probe", the first case of an enum, arrays of one element.
///
/// What it cannot see it leaves open, never closed: a key no pass gave a type gets `{}` (listed
/// by `untypedKeys`), and checks between values (ranges, cross-key rules) stay `validate`'s.
final class SchemaProbe {
    /// `$defs` entries by name.
    private(set) var definitions: [String: JSONValue] = [:]
    private var cache: [String: (ref: JSONValue, value: Any?)] = [:]
    private var untyped: [String: [String]] = [:]

    init() {}

    /// Key paths, per definition, that the schema leaves untyped (`{}`).
    var untypedKeys: [String: [String]] { untyped.filter { !$0.value.isEmpty } }

    func setDefinition(_ name: String, _ schema: JSONValue, untypedKeys keys: [String]) {
        definitions[name] = schema
        untyped[name] = keys
    }

    /// The `$ref` to `T`'s definition (probed once), and a value `T` decoded to, if any did.
    func definition<T: Decodable>(_ type: T.Type) -> (ref: JSONValue, value: Any?) {
        definition(named: Self.name(of: T.self)) { try T(from: $0) }
    }

    /// The `$ref` to the definition `name`, probed by running `decode` on probe decoders.
    func definition(named name: String, decode: @escaping (any Decoder) throws -> Any?) -> (ref: JSONValue, value: Any?) {
        let ref: JSONValue = .object(["$ref": .string("#/$defs/" + name)])
        if let done = cache[name] { return done }
        cache[name] = (ref, nil)   // a type that contains itself sees its own $ref
        let typeProbe = TypeProbe(probe: self, decode: decode)
        typeProbe.explore()
        let root = typeProbe.root, value = typeProbe.value
        definitions[name] = root.schema
        untyped[name] = root.untypedKeys()
        cache[name] = (ref, value)
        return (ref, value)
    }

    /// The value a probe decoder answers for `T`, after recording what `T` is at its node.
    func value<T: Decodable>(_ type: T.Type, at decoder: ProbeDecoder) throws -> T {
        let node = decoder.node
        if let kind = Self.primitiveKind(T.self) {
            node.add(primitive: kind)
            if decoder.pass.failsFirstAsk(at: node) {
                throw DecodingError.typeMismatch(T.self, .init(codingPath: decoder.codingPath, debugDescription: "probe: another kind"))
            }
            return Self.placeholder(T.self)!
        }
        if let describing = T.self as? any SchemaDescribing.Type {
            let (schema, value) = describing.describe(in: self)
            node.add(given: schema)
            return try Self.cast(value, T.self, decoder)
        }
        if let choices = Self.enumeration(T.self) {
            if choices.strings.isEmpty {
                for v in choices.integers where !node.integerChoices.contains(v) { node.integerChoices.append(v) }
            } else {
                node.add(choices: choices.strings)
            }
            let pick = decoder.pass.pick(among: choices.all.count, at: node)
            return try Self.cast(choices.all.isEmpty ? nil : choices.all[pick], T.self, decoder)
        }
        if T.self is any ProbeInline.Type {
            return try T(from: decoder)   // Array, Optional, Set: their elements at this node
        }
        let (ref, value) = definition(T.self)
        node.add(given: ref)
        return try Self.cast(value, T.self, decoder)
    }

    private static func cast<T>(_ value: Any?, _ type: T.Type, _ decoder: ProbeDecoder) throws -> T {
        guard let v = value as? T else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "probe: no placeholder for \(T.self)"))
        }
        return v
    }

    static func primitiveKind(_ type: Any.Type) -> String? {
        switch type {
        case is String.Type: return "string"
        case is Bool.Type: return "boolean"
        case is Double.Type, is Float.Type: return "number"
        case is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type, is Int64.Type,
             is UInt.Type, is UInt8.Type, is UInt16.Type, is UInt32.Type, is UInt64.Type: return "integer"
        default: return nil
        }
    }

    private static func placeholder<T>(_ type: T.Type) -> T? {
        let values: [Any] = ["probe", false, 0.5, Float(0.5), 1, Int8(1), Int16(1), Int32(1), Int64(1),
                             UInt(1), UInt8(1), UInt16(1), UInt32(1), UInt64(1)]
        return values.lazy.compactMap { $0 as? T }.first
    }

    /// The cases of an enum with raw values (strings or integers), and its first case.
    private static func enumeration(_ type: Any.Type) -> (strings: [String], integers: [Int], all: [Any])? {
        guard let e = type as? any (RawRepresentable & CaseIterable).Type else { return nil }
        return cases(e)
    }

    private static func cases<E: RawRepresentable & CaseIterable>(_ type: E.Type) -> (strings: [String], integers: [Int], all: [Any]) {
        let raws = E.allCases.map { $0.rawValue as Any }
        return (raws.compactMap { $0 as? String }, raws.compactMap { $0 as? Int }, E.allCases.map { $0 as Any })
    }

    /// A definition name for `T`: its qualified name without the module ("TrainingConfig.Mode").
    static func name(of type: Any.Type) -> String {
        var text = String(reflecting: type)
        if let dot = text.firstIndex(of: "."), !text[..<dot].contains("<") { text = String(text[text.index(after: dot)...]) }
        return String(text.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" ? $0 : "_" })
    }
}

/// A type whose schema is not what its `init(from:)` shows to a probe (a family chosen by
/// `"type"`, a free-form JSON value): it describes itself, with a value to answer the probe.
protocol SchemaDescribing {
    static func describe(in probe: SchemaProbe) -> (schema: JSONValue, value: Any?)
}

/// Containers decoded in place: their elements are recorded at the container's own node.
protocol ProbeInline {}
extension Array: ProbeInline {}
extension Optional: ProbeInline {}
extension Set: ProbeInline {}
