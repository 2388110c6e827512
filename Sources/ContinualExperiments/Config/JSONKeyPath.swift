/// A key path into a JSON config such as `strategy[0].lambda` or `scenario.train_per_experience`,
/// used by sweeps to set a value before the strict typed decode (so any option can be swept).
public struct JSONKeyPath: Sendable, Hashable, CustomStringConvertible {
    /// One step: an object key or an array index.
    public enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    public let components: [Component]
    /// The path as written.
    public let text: String

    public var description: String { text }

    /// Parses `a.b[2].c`; keys are letters, digits, `_` and `-`. Throws a message on bad syntax.
    public init(_ text: String) throws(KeyPathError) {
        self.text = text
        var components: [Component] = []
        var chars = Array(text)[...]
        func isKeyChar(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "-" }
        guard !chars.isEmpty else { throw KeyPathError("empty key path") }
        while !chars.isEmpty {
            let key = chars.prefix(while: isKeyChar)
            guard !key.isEmpty else { throw KeyPathError("expected a key at position \(text.count - chars.count + 1) of \"\(text)\"") }
            components.append(.key(String(key)))
            chars = chars.dropFirst(key.count)
            while chars.first == "[" {
                chars = chars.dropFirst()
                let digits = chars.prefix(while: { $0.isASCII && $0.isNumber })
                guard !digits.isEmpty, chars.dropFirst(digits.count).first == "]", let i = Int(String(digits)) else {
                    throw KeyPathError("expected [index] in \"\(text)\"")
                }
                components.append(.index(i))
                chars = chars.dropFirst(digits.count + 1)
            }
            if chars.isEmpty { break }
            guard chars.first == "." else { throw KeyPathError("expected \".\" or \"[\" at position \(text.count - chars.count + 1) of \"\(text)\"") }
            chars = chars.dropFirst()
            if chars.isEmpty { throw KeyPathError("key path \"\(text)\" ends with \".\"") }
        }
        self.components = components
    }

    /// First key (the run key it belongs to, e.g. `strategy`).
    public var head: String {
        if case .key(let k)? = components.first { return k }
        return ""
    }

    /// Last object key (`lambda` for `strategy[0].lambda`), used for short run-name labels.
    public var lastKey: String {
        for c in components.reversed() { if case .key(let k) = c { return k } }
        return text
    }

    /// The path with brackets turned into dots (`strategy.0.lambda`), safe in run names.
    public var flatText: String {
        components.map { c -> String in
            switch c { case .key(let k): return k; case .index(let i): return String(i) }
        }.joined(separator: ".")
    }

    /// `root` with the value at this path replaced by `value`. Missing object keys are created
    /// (the strict decode then rejects unknown ones by name); indexes must exist.
    public func setting(_ value: JSONValue, in root: JSONValue) throws(KeyPathError) -> JSONValue {
        try set(value, in: root, from: 0)
    }

    private func set(_ value: JSONValue, in node: JSONValue, from i: Int) throws(KeyPathError) -> JSONValue {
        guard i < components.count else { return value }
        let here = prefixText(i)
        switch components[i] {
        case .key(let k):
            var object: [String: JSONValue]
            switch node {
            case .object(let o): object = o
            case .null: object = [:]
            default: throw KeyPathError("\(here.isEmpty ? "the config" : here) is \(node.kindName), not an object, so it has no key \"\(k)\"")
            }
            object[k] = try set(value, in: object[k] ?? .null, from: i + 1)
            return .object(object)
        case .index(let n):
            guard case .array(var items) = node else {
                throw KeyPathError("\(here) is \(node.kindName), not an array, so it has no element [\(n)]")
            }
            guard n < items.count else {
                throw KeyPathError("\(here) has \(items.count) element\(items.count == 1 ? "" : "s"), so [\(n)] does not exist")
            }
            items[n] = try set(value, in: items[n], from: i + 1)
            return .array(items)
        }
    }

    /// Text of the first `count` components (`strategy[0]`), for messages.
    private func prefixText(_ count: Int) -> String {
        var out = ""
        for c in components.prefix(count) {
            switch c {
            case .key(let k): out += out.isEmpty ? k : "." + k
            case .index(let n): out += "[\(n)]"
            }
        }
        return out
    }
}

/// A bad key path or a path that does not fit the config; the message names it.
public struct KeyPathError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension JSONValue {
    /// "a number", "an array", ... for messages.
    var kindName: String {
        switch self {
        case .null: return "missing"
        case .bool: return "true/false"
        case .int, .uint, .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
