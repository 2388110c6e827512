import Foundation

/// Finds a key that appears twice in one JSON object. Foundation's decoder keeps one of the
/// values and Python's `json` (which users read the stored `experiment_json` with) the last, so a
/// duplicate would make the toolkit and the user see different experiments: it is an error.
///
/// A single pass over the bytes that tracks only object nesting, keys and array indices; it
/// assumes the text is valid JSON (syntax errors are reported elsewhere) and gives up (nil) on
/// anything it does not understand. Linear in the text: each object's keys live in a set that is
/// updated in place (a set copied per key made a 20,000-key object take seconds, issue 41), and
/// only strings with escapes go through a decoder.
enum JSONDuplicateKeys {
    /// An open object or array: its key path, and its keys seen so far or its current index.
    private struct Frame {
        var isObject: Bool
        var path: String
        var keys: Set<String> = []
        var current: String? = nil
        var index = 0
    }

    /// The key path (`.training.epochs`, `.strategy[1].type`) of the first duplicated key, if any.
    static func firstDuplicate(in data: Data) -> String? {
        let b = [UInt8](data)
        var stack: [Frame] = []
        var i = 0
        var expectKey = false
        func pathOfValue() -> String {
            guard let top = stack.last else { return "" }
            return top.isObject ? top.path + "." + (top.current ?? "?") : top.path + "[\(top.index)]"
        }
        func readString() -> String? {
            // b[i] == '"'; returns the decoded string and leaves i after the closing quote.
            let start = i
            i += 1
            var escaped = false, hasEscape = false
            while i < b.count {
                if escaped { escaped = false } else if b[i] == 0x5C { escaped = true; hasEscape = true } else if b[i] == 0x22 { break }
                i += 1
            }
            guard i < b.count else { return nil }
            i += 1
            let plain = String(decoding: b[(start + 1)..<(i - 1)], as: UTF8.self)
            guard hasEscape else { return plain }
            return (try? JSONDecoder().decode(String.self, from: Data(b[start..<i]))) ?? plain
        }
        while i < b.count {
            switch b[i] {
            case 0x7B:  // {
                stack.append(Frame(isObject: true, path: pathOfValue()))
                expectKey = true
                i += 1
            case 0x5B:  // [
                stack.append(Frame(isObject: false, path: pathOfValue()))
                expectKey = false
                i += 1
            case 0x7D, 0x5D:  // } ]
                guard !stack.isEmpty else { return nil }
                stack.removeLast()
                expectKey = false
                i += 1
            case 0x2C:  // ,
                if let top = stack.indices.last {
                    if stack[top].isObject { expectKey = true } else { stack[top].index += 1 }
                }
                i += 1
            case 0x22:  // "
                let wasKey = expectKey
                guard let s = readString() else { return nil }
                if wasKey, let top = stack.indices.last, stack[top].isObject {
                    // In place: the set is uniquely referenced, so inserting does not copy it.
                    guard stack[top].keys.insert(s).inserted else { return stack[top].path + "." + s }
                    stack[top].current = s
                    expectKey = false
                }
            default:
                i += 1
            }
        }
        return nil
    }
}
