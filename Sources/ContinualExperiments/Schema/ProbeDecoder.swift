import ContinualCore

/// The rules of one probe pass over one type's `init(from:)` (see `TypeProbe`): which keys
/// answer "absent", which position's first primitive decode fails (so that a decoder trying
/// one JSON kind after another, `try? decode(String)` then `decode(Int)`, shows every kind), and
/// which case a choice answers with (so that keys read only for that case show).
final class ProbePass {
    let absent: Set<ObjectIdentifier>
    /// Per position: how many primitive asks fail there, or the case a choice answers with.
    let rules: [ObjectIdentifier: Int]
    private var fired: [ObjectIdentifier: Int] = [:]
    /// The last key asked about: blamed when the pass ends in an error.
    var lastKey: SchemaNode? = nil
    /// Positions asked for a primitive (choices 0) or a choice of `choices` cases, in order.
    private(set) var asked: [(node: SchemaNode, choices: Int)] = []

    init(absent: Set<ObjectIdentifier>, rules: [ObjectIdentifier: Int]) {
        self.absent = absent
        self.rules = rules
    }

    /// Whether this primitive ask at `node` fails: the rule's first asks there do (a decoder
    /// trying a word, then a number, then an object shows all three).
    func failsFirstAsk(at node: SchemaNode) -> Bool {
        asked.append((node, 0))
        let id = ObjectIdentifier(node)
        guard let failing = rules[id], fired[id, default: 0] < failing else { return false }
        fired[id, default: 0] += 1
        return true
    }

    /// The case a choice of `count` answers with: the first, or the one the rules give.
    func pick(among count: Int, at node: SchemaNode) -> Int {
        asked.append((node, count))
        let rule = rules[ObjectIdentifier(node)] ?? 0
        return rule < count ? rule : 0
    }
}

/// A `Decoder` that reads no document: every value asked for is recorded in a `SchemaNode` and
/// answered with a placeholder (`SchemaProbe.value`).
final class ProbeDecoder: Decoder, DecodingDescriber {
    let node: SchemaNode
    let pass: ProbePass
    let probe: SchemaProbe
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(node: SchemaNode, pass: ProbePass, probe: SchemaProbe, codingPath: [any CodingKey]) {
        self.node = node
        self.pass = pass
        self.probe = probe
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        node.isObject = true
        return KeyedDecodingContainer(ProbeKeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        if node.items == nil { node.items = SchemaNode() }
        return ProbeUnkeyedContainer(decoder: child(node.items!, AnyCodingKey(intValue: 0)!))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { ProbeSingleValueContainer(decoder: self) }

    func describeKeys(_ keys: [String]) {
        node.isObject = true
        node.strictKeys = keys
    }

    func describeChoice(_ values: [String]) -> Int {
        node.add(choices: values)
        return pass.pick(among: values.count, at: node)
    }

    func child(_ node: SchemaNode, _ key: any CodingKey) -> ProbeDecoder {
        ProbeDecoder(node: node, pass: pass, probe: probe, codingPath: codingPath + [key])
    }

    func value<T: Decodable>(_ type: T.Type) throws -> T {
        try probe.value(T.self, at: self)
    }
}

struct ProbeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ProbeDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { [] }

    private func child(_ key: Key) -> ProbeDecoder { decoder.child(decoder.node.child(key.stringValue), key) }

    /// Every key is present unless this pass made it absent. A present key asked about becomes
    /// the pass's `lastKey`: checks between keys (`"epochs"` or `"steps_per_experience"`) come
    /// right after such questions.
    func contains(_ key: Key) -> Bool {
        let node = decoder.node.child(key.stringValue)
        guard !decoder.pass.absent.contains(ObjectIdentifier(node)) else { return false }
        decoder.pass.lastKey = node
        return true
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        decoder.node.child(key.stringValue).nullable = true
        return false
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decodeValue(T.self, forKey: key) }

    private func decodeValue<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let child = child(key)
        decoder.pass.lastKey = child.node
        guard contains(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "absent in this probe pass"))
        }
        return try child.value(T.self)
    }

    // The primitive overloads go through the generic one (which records their JSON kind).
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decodeValue(Bool.self, forKey: key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decodeValue(String.self, forKey: key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decodeValue(Double.self, forKey: key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decodeValue(Float.self, forKey: key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decodeValue(Int.self, forKey: key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decodeValue(Int8.self, forKey: key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decodeValue(Int16.self, forKey: key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decodeValue(Int32.self, forKey: key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decodeValue(Int64.self, forKey: key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decodeValue(UInt.self, forKey: key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decodeValue(UInt8.self, forKey: key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decodeValue(UInt16.self, forKey: key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decodeValue(UInt32.self, forKey: key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decodeValue(UInt64.self, forKey: key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        decoder.pass.lastKey = decoder.node.child(key.stringValue)
        return try child(key).container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }
    func superDecoder() throws -> any Decoder { decoder }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        decoder.pass.lastKey = decoder.node.child(key.stringValue)
        return child(key)
    }
}

/// An array of one element (so that `Array.init(from:)` asks for the element type once).
struct ProbeUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: ProbeDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { 1 }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex >= 1 }

    init(decoder: ProbeDecoder) { self.decoder = decoder }

    mutating func decodeNil() throws -> Bool {
        decoder.node.nullable = true
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(T.self) }

    private mutating func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        defer { currentIndex += 1 }
        return try decoder.value(T.self)
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try decodeValue(Bool.self) }
    mutating func decode(_ type: String.Type) throws -> String { try decodeValue(String.self) }
    mutating func decode(_ type: Double.Type) throws -> Double { try decodeValue(Double.self) }
    mutating func decode(_ type: Float.Type) throws -> Float { try decodeValue(Float.self) }
    mutating func decode(_ type: Int.Type) throws -> Int { try decodeValue(Int.self) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try decodeValue(Int8.self) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try decodeValue(Int16.self) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try decodeValue(Int32.self) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try decodeValue(Int64.self) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try decodeValue(UInt.self) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeValue(UInt8.self) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeValue(UInt16.self) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeValue(UInt32.self) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeValue(UInt64.self) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        currentIndex += 1
        return try decoder.container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentIndex += 1
        return try decoder.unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        currentIndex += 1
        return decoder
    }
}

struct ProbeSingleValueContainer: SingleValueDecodingContainer {
    let decoder: ProbeDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool {
        decoder.node.nullable = true
        return false
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(T.self) }
    private func decodeValue<T: Decodable>(_ type: T.Type) throws -> T { try decoder.value(T.self) }

    func decode(_ type: Bool.Type) throws -> Bool { try decodeValue(Bool.self) }
    func decode(_ type: String.Type) throws -> String { try decodeValue(String.self) }
    func decode(_ type: Double.Type) throws -> Double { try decodeValue(Double.self) }
    func decode(_ type: Float.Type) throws -> Float { try decodeValue(Float.self) }
    func decode(_ type: Int.Type) throws -> Int { try decodeValue(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeValue(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeValue(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeValue(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeValue(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeValue(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeValue(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeValue(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeValue(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeValue(UInt64.self) }
}

