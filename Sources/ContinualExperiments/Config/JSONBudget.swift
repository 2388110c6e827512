import Foundation

/// How large an experiment JSON may be, checked before anything decodes it: the file's size before
/// it is read, everything else in the one syntax pass over its bytes (`JSONLint`).
///
/// Real experiment files are a few kilobytes: a few dozen keys in the largest object, a few
/// hundred values, nesting below ten levels. The limits sit far above that and far below what
/// makes the later steps slow — Foundation's decoder, the variant merge and the strict decode each
/// visit every value, and a hostile 200,000-key object used to keep `validate` busy for minutes.
/// A file over a limit is refused at once, with the key path of the object or value and the limit
/// by name (docs/data-limits.md).
public enum JSONBudget {
    /// Bytes of an experiment file (checked before it is read).
    public static let maxFileBytes = 64 << 20
    /// Keys of one object: a generated file with a key per user or class still fits.
    public static let maxKeysPerObject = 10_000
    /// Values in the whole document: objects, arrays, strings, numbers, `true`, `false`, `null`
    /// (a swept list of a million seeds is written as a `range`).
    public static let maxValues = 1_000_000
    /// Nesting levels of objects and arrays: also bounds the recursion of every later step.
    public static let maxDepth = 512
    /// UTF-8 bytes of one string, key or value, as written (escapes count as written).
    public static let maxStringBytes = 65_536

    /// "WHAT (limit: 10000 keys per object, JSONBudget.maxKeysPerObject; see docs/data-limits.md)".
    static func message(_ what: String, limit: String, name: String) -> String {
        "\(what) (limit: \(limit), JSONBudget.\(name); see docs/data-limits.md)"
    }

    /// Refuses a file larger than `maxFileBytes` before its bytes are read.
    static func checkFileSize(_ path: String) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber
        guard let bytes = size?.intValue, bytes > maxFileBytes else { return }
        throw ConfigError(file: path, location: "", message: message(
            "the file has \(bytes) bytes (experiment files have a few kilobytes)", limit: "\(maxFileBytes) bytes", name: "maxFileBytes"))
    }
}
