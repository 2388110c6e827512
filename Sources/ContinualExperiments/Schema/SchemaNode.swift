/// What the schema probe learned about one position of a config (a key's value, an array's
/// items, a type's own value): every JSON kind the decoder tried there, merged over all probe
/// passes. Turned into a JSON Schema (draft 2020-12) fragment by `schema`.
///
/// A reference type because the probe's decoders, containers and passes all record into the
/// same tree; it never leaves `SchemaProbe`.
final class SchemaNode {
    /// JSON kinds a primitive decode asked for here ("integer", "number", "string", "boolean").
    var primitives: [String] = []
    /// Values of a string choice (`decodeChoice` or a `String`-backed enum).
    var choices: [String] = []
    /// Values of an integer-backed enum.
    var integerChoices: [Int] = []
    /// A keyed container was opened here: the value may be an object.
    var isObject = false
    /// The keys a strict object accepts (nil: not strict, other keys are ignored by the decoder).
    var strictKeys: [String]? = nil
    /// Children by key, in the order first seen.
    private(set) var properties: [(key: String, node: SchemaNode)] = []
    /// An unkeyed container was opened here: the value may be an array of `items`.
    var items: SchemaNode? = nil
    /// A whole schema given by a type that describes itself (`SchemaDescribing`), or a `$ref`.
    var given: [JSONValue] = []
    /// `null` is accepted (decodeIfPresent, or `decodeNil` answered).
    var nullable = false

    func child(_ key: String) -> SchemaNode {
        if let found = properties.first(where: { $0.key == key }) { return found.node }
        let node = SchemaNode()
        properties.append((key, node))
        return node
    }

    func add(primitive kind: String) { if !primitives.contains(kind) { primitives.append(kind) } }
    func add(choices values: [String]) { for v in values where !choices.contains(v) { choices.append(v) } }
    func add(given schema: JSONValue) { if !given.contains(schema) { given.append(schema) } }

    /// Whether nothing at all was learned (the schema is then `{}`: anything).
    var isEmpty: Bool {
        primitives.isEmpty && choices.isEmpty && integerChoices.isEmpty && !isObject && items == nil && given.isEmpty
    }

    /// The node as a schema: one alternative per kind seen (`anyOf` when there are several).
    var schema: JSONValue {
        var alternatives: [JSONValue] = given
        if !choices.isEmpty { alternatives.append(.object(["enum": .array(choices.map(JSONValue.string))])) }
        if !integerChoices.isEmpty { alternatives.append(.object(["enum": .array(integerChoices.map { .int(Int64($0)) })])) }
        // A string that became a choice is not also "any string"; an integer is a number.
        for kind in primitives where !(kind == "string" && !choices.isEmpty) {
            if kind == "integer" && primitives.contains("number") { continue }
            alternatives.append(.object(["type": .string(kind)]))
        }
        if isObject { alternatives.append(objectSchema) }
        if let items { alternatives.append(.object(["type": "array", "items": items.schema])) }
        if nullable && !alternatives.isEmpty { alternatives.append(.object(["type": "null"])) }
        switch alternatives.count {
        case 0: return .object([:])
        case 1: return alternatives[0]
        default: return .object(["anyOf": .array(alternatives)])
        }
    }

    private var objectSchema: JSONValue {
        var props: [String: JSONValue] = [:]
        for key in strictKeys ?? [] { props[key] = .object([:]) }
        for (key, node) in properties { props[key] = node.schema }
        var out: [String: JSONValue] = ["type": "object", "properties": .object(props)]
        if strictKeys != nil { out["additionalProperties"] = false }
        return .object(out)
    }

    /// Every key of a strict object at or below this node that no probe pass gave a type (its
    /// schema is `{}`): the object, the key and its key path below this node.
    func untypedStrictKeys(path: String = "") -> [(object: SchemaNode, key: String, path: String)] {
        var out = (strictKeys ?? []).filter { key in properties.first { $0.key == key }.map { $0.node.isEmpty } ?? true }
            .map { (object: self, key: $0, path: path + "." + $0) }
        for (key, node) in properties { out += node.untypedStrictKeys(path: path + "." + key) }
        if let items { out += items.untypedStrictKeys(path: path + "[]") }
        return out
    }

    /// The key paths of `untypedStrictKeys`: what the schema cannot check.
    func untypedKeys() -> [String] { untypedStrictKeys().map(\.path) }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
