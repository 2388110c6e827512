import Foundation

/// Finds a key that appears twice in one JSON object. Foundation's decoder keeps one of the
/// values and Python's `json` (which users read the stored `experiment_json` with) the last, so a
/// duplicate would make the toolkit and the user see different experiments: it is an error.
///
/// A single pass over the bytes that tracks only object nesting, keys and array indices; it
/// assumes the text is valid JSON (syntax errors are reported elsewhere) and gives up (nil) on
/// anything it does not understand.
enum JSONDuplicateKeys {
    /// The key path (`.training.epochs`, `.strategy[1].type`) of the first duplicated key, if any.
    static func firstDuplicate(in data: Data) -> String? {
        let b = [UInt8](data)
        enum Frame { case object(keys: Set<String>, path: String, current: String?), array(index: Int, path: String) }
        var stack: [Frame] = []
        var i = 0
        var expectKey = false
        func pathOfValue() -> String {
            switch stack.last {
            case .object(_, let p, let k)?: return p + "." + (k ?? "?")
            case .array(let n, let p)?: return p + "[\(n)]"
            case nil: return ""
            }
        }
        func readString() -> String? {
            // b[i] == '"'; returns the decoded string and leaves i after the closing quote.
            let start = i
            i += 1
            var escaped = false
            while i < b.count {
                if escaped { escaped = false } else if b[i] == 0x5C { escaped = true } else if b[i] == 0x22 { break }
                i += 1
            }
            guard i < b.count else { return nil }
            i += 1
            let raw = Data(b[start..<i])
            return (try? JSONDecoder().decode(String.self, from: raw)) ?? String(decoding: b[(start + 1)..<(i - 1)], as: UTF8.self)
        }
        while i < b.count {
            let c = b[i]
            switch c {
            case 0x7B:  // {
                stack.append(.object(keys: [], path: pathOfValue(), current: nil))
                expectKey = true
                i += 1
            case 0x5B:  // [
                stack.append(.array(index: 0, path: pathOfValue()))
                expectKey = false
                i += 1
            case 0x7D, 0x5D:  // } ]
                guard !stack.isEmpty else { return nil }
                stack.removeLast()
                expectKey = false
                i += 1
            case 0x2C:  // ,
                if case .array(let n, let p)? = stack.last { stack[stack.count - 1] = .array(index: n + 1, path: p) }
                if case .object? = stack.last { expectKey = true }
                i += 1
            case 0x22:  // "
                let wasKey = expectKey
                guard let s = readString() else { return nil }
                if wasKey, case .object(var keys, let p, _)? = stack.last {
                    if keys.contains(s) { return p + "." + s }
                    keys.insert(s)
                    stack[stack.count - 1] = .object(keys: keys, path: p, current: s)
                    expectKey = false
                }
            default:
                i += 1
            }
        }
        return nil
    }
}
