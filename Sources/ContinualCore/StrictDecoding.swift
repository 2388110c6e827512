/// Helpers that make `Decodable` configs strict: unknown keys are errors naming the key path and
/// the allowed keys, and invalid values are errors naming their key. Foundation-free, so option
/// types of strategies and scenarios can live beside their code and still ship in an app.

/// A coding key made from any string or index.
public struct AnyCodingKey: CodingKey, Hashable, Sendable {
    public var stringValue: String
    public var intValue: Int?
    public init(_ string: String) { stringValue = string; intValue = nil }
    public init?(stringValue: String) { self.stringValue = stringValue; intValue = nil }
    public init?(intValue: Int) { stringValue = "Index \(intValue)"; self.intValue = intValue }
}

/// A decoder that describes what it is asked for instead of reading a document: the probe behind
/// `continual schema`, which derives a JSON Schema from the configs' own `init(from:)`. The
/// strict helpers below tell it what a plain `Decoder` call cannot show: every key a strict
/// object accepts, and every value of a string choice.
public protocol DecodingDescriber: AnyObject {
    /// The keys of a strict object (unknown keys are refused).
    func describeKeys(_ keys: [String])
    /// The values a string choice accepts; returns the index of the one to decode as.
    func describeChoice(_ values: [String]) -> Int
}

extension Decoder {
    /// A keyed container that rejects keys outside `K.allCases` (and `alsoAllowed`).
    public func strictContainer<K: CodingKey & CaseIterable>(
        keyedBy type: K.Type, alsoAllowed: Set<String> = []
    ) throws -> KeyedDecodingContainer<K> {
        let any = try container(keyedBy: AnyCodingKey.self)
        let allowed = Set(K.allCases.map(\.stringValue)).union(alsoAllowed)
        (self as? any DecodingDescriber)?.describeKeys(allowed.sorted())
        // Sorted, so that the first unknown key reported is the same on every run.
        for key in any.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) where !allowed.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(.init(
                codingPath: codingPath + [key],
                debugDescription: "unknown key \"\(key.stringValue)\"\(didYouMean(key.stringValue, allowed)); allowed keys: \(allowed.sorted().joined(separator: ", "))"))
        }
        return try container(keyedBy: K.self)
    }
}

extension KeyedDecodingContainer {
    /// The value at `key`, or `defaultValue` when the key is absent (null is an error).
    public func decode<T: Decodable>(_ key: Key, default defaultValue: T) throws -> T {
        guard contains(key) else { return defaultValue }
        return try decode(T.self, forKey: key)
    }

    /// Throws a key-path error unless `condition` holds.
    public func require(_ condition: Bool, _ key: Key, _ message: @autoclosure () -> String) throws {
        if !condition {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: message())
        }
    }

    /// Decodes a string that must be one of `T.allCases`, with an error listing them.
    public func decodeChoice<T: RawRepresentable & CaseIterable>(_ key: Key, default defaultValue: T) throws -> T
    where T.RawValue == String {
        guard contains(key) else { return defaultValue }
        if let describer = try? superDecoder(forKey: key) as? any DecodingDescriber {
            let all = Array(T.allCases)
            return all.isEmpty ? defaultValue : all[describer.describeChoice(all.map(\.rawValue))]
        }
        let raw = try decode(String.self, forKey: key)
        guard let value = T(rawValue: raw) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self,
                debugDescription: "\"\(raw)\" is not allowed\(didYouMean(raw, T.allCases.map(\.rawValue))); allowed values: \(T.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }
}

/// Formats a coding path as `.training.tasks[1].id`.
public func formatCodingPath(_ path: [any CodingKey]) -> String {
    var text = ""
    for key in path {
        if let i = key.intValue { text += "[\(i)]" } else { text += "." + key.stringValue }
    }
    return text.isEmpty ? "(top level)" : text
}

/// The keys of an options type that has no options (only `"type"` is allowed).
public enum NoOptionKeys: CodingKey, CaseIterable {
    public var stringValue: String { switch self {} }
    public var intValue: Int? { nil }
    public init?(stringValue: String) { nil }
    public init?(intValue: Int) { nil }
    public static var allCases: [NoOptionKeys] { [] }
}

/// The candidate closest to `word` by edit distance (Levenshtein, case-insensitive), if it is
/// close enough to be a likely typo: at most 1 edit for short words, up to 3 for long ones.
public func closestName<C: Collection>(to word: String, in candidates: C) -> String? where C.Element == String {
    guard !word.isEmpty, word.count <= 64 else { return nil }
    let w = Array(word.lowercased())
    var best: (String, Int)? = nil
    for candidate in candidates where candidate != word {
        let c = Array(candidate.lowercased())
        guard abs(c.count - w.count) <= 3 else { continue }
        var previous = Array(0...c.count)
        for i in 1...w.count {
            var row = [i] + [Int](repeating: 0, count: c.count)
            for j in stride(from: 1, through: c.count, by: 1) {
                row[j] = Swift.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (w[i - 1] == c[j - 1] ? 0 : 1))
            }
            previous = row
        }
        let d = previous[c.count]
        if best == nil || d < best!.1 || (d == best!.1 && candidate < best!.0) { best = (candidate, d) }
    }
    guard let (name, d) = best else { return nil }
    let allowed = w.count <= 4 ? 1 : w.count <= 8 ? 2 : 3
    return d <= allowed ? name : nil
}

/// " (did you mean `epochs`?)" or "".
public func didYouMean<C: Collection>(_ word: String, _ candidates: C) -> String where C.Element == String {
    closestName(to: word, in: candidates).map { " (did you mean `\($0)`?)" } ?? ""
}
