import Foundation
import ContinualCore

/// A problem with an experiment file, reported as one line naming where it is.
public struct ConfigError: Error, Sendable, CustomStringConvertible, Equatable {
    /// File the problem is in (may be empty for in-memory configs).
    public var file: String
    /// Key path such as `.strategy[0].lambda`, or `line 3, column 5` for syntax errors.
    public var location: String
    public var message: String

    public init(file: String = "", location: String, message: String) {
        self.file = file
        self.location = location
        self.message = message
    }

    /// One line; values echoed from the file (a long string, a long key) cut to 60 characters.
    public var description: String {
        let prefix = file.isEmpty ? "" : "\(file): "
        let location = Self.shortenedWords(self.location), message = Self.shortenedWords(self.message)
        return location.isEmpty ? "\(prefix)\(message)" : "\(prefix)\(location): \(message)"
    }

    /// `text` cut to `limit` characters plus "…".
    public static func shortened(_ text: String, limit: Int = 60) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "…"
    }

    /// Every quoted string and every unbroken word longer than 60 characters shortened, and the
    /// whole text kept under 2,000 characters (lists of allowed keys stay whole).
    static func shortenedWords(_ text: String) -> String {
        guard text.count > 60 else { return text }
        var out = "", current = "", inQuote = false
        func flush() { out += shortened(current); current = "" }
        for ch in text {
            if ch == "\"" {
                if inQuote { flush(); out.append(ch); inQuote = false } else { flush(); out.append(ch); inQuote = true }
            } else if !inQuote && (ch == " " || ch == ",") {
                flush(); out.append(ch)
            } else {
                current.append(ch)
            }
        }
        flush()
        return shortened(out, limit: 2000)
    }

    /// Turns a `DecodingError` into a key-path message, prefixing `pathPrefix` (e.g. a variant).
    static func from(_ error: DecodingError, file: String, context: String = "") -> ConfigError {
        let suffix = context.isEmpty ? "" : " (\(context))"
        switch error {
        case .typeMismatch(let type, let c):
            return ConfigError(file: file, location: formatCodingPath(c.codingPath),
                               message: "expected \(typeName(type)), \(foundDescription(c.debugDescription))\(suffix)")
        case .valueNotFound(let type, let c):
            return ConfigError(file: file, location: formatCodingPath(c.codingPath),
                               message: "expected \(typeName(type)), found null\(suffix)")
        case .keyNotFound(let key, let c):
            return ConfigError(file: file, location: formatCodingPath(c.codingPath + [key]),
                               message: "required key is missing\(suffix)")
        case .dataCorrupted(let c):
            return ConfigError(file: file, location: formatCodingPath(c.codingPath),
                               message: (c.codingPath.isEmpty && c.debugDescription.contains("not valid JSON")
                                         ? "a number does not fit its setting (out of range, negative or fractional)"
                                         : c.debugDescription) + suffix)
        @unknown default:
            return ConfigError(file: file, location: "", message: "\(error)")
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        let name = String(describing: type)
        switch name {
        case "Int", "Int64", "UInt64", "Int32": return "an integer"
        case "Double", "Float": return "a number"
        case "String": return "a string"
        case "Bool": return "true or false"
        default:
            if name.hasPrefix("Array") { return "an array" }
            if name.hasPrefix("Dictionary") || name.contains("Keyed") { return "an object" }
            return name
        }
    }

    private static func foundDescription(_ debug: String) -> String {
        // Foundation says e.g. "Expected to decode Int but found a string instead."
        if let range = debug.range(of: "but found ") {
            let rest = debug[range.upperBound...].replacingOccurrences(of: " instead.", with: "")
            return "found \(rest)"
        }
        return debug
    }
}
