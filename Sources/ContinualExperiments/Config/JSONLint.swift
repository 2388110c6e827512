import Foundation

/// A strict pass over experiment JSON before Foundation decodes it, for what Foundation accepts
/// silently or reports without a position: trailing commas (`[1, 2,]`, `{"a": 1,}`), number
/// literals beyond a Double (`1e400`), and syntax errors (line and column). Errors name the line,
/// column and, where known, the key path. Linear in the text. The same pass enforces the size
/// budget (`JSONBudget`: keys per object, values, nesting, string length), stopping at the first
/// value over a limit, so a hostile file is refused before any slower step sees it.
public enum JSONLint {
    public static func check(_ data: Data, file: String = "") -> ConfigError? {
        guard data.count <= JSONBudget.maxFileBytes else {
            return ConfigError(file: file, location: "", message: JSONBudget.message(
                "the text has \(data.count) bytes (experiment files have a few kilobytes)", limit: "\(JSONBudget.maxFileBytes) bytes", name: "maxFileBytes"))
        }
        var p = Parser(bytes: [UInt8](data), file: file)
        do {
            p.skipSpace()
            try p.value(path: "", depth: 0)
            p.skipSpace()
            if p.i < p.bytes.count { throw p.error("unexpected text after the JSON value") }
            return nil
        } catch let e as ConfigError {
            return e
        } catch {
            return nil
        }
    }

    struct Parser {
        let bytes: [UInt8]
        let file: String
        var i = 0
        /// Values seen so far (`JSONBudget.maxValues`).
        var values = 0

        init(bytes: [UInt8], file: String) {
            self.bytes = bytes
            self.file = file
            // A UTF-8 byte order mark is allowed (Foundation accepts it).
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        }

        func lineColumn(_ at: Int) -> String {
            var line = 1, column = 1
            var k = 0
            while k < min(at, bytes.count) {
                if bytes[k] == UInt8(ascii: "\n") { line += 1; column = 1 }
                else if bytes[k] & 0xC0 != 0x80 { column += 1 }  // count characters, not UTF-8 continuation bytes
                k += 1
            }
            return "line \(line), column \(column)"
        }

        func error(_ message: String, at: Int? = nil, path: String = "") -> ConfigError {
            let place = lineColumn(at ?? i)
            return ConfigError(file: file, location: path.isEmpty ? place : "\(path) (\(place))", message: message)
        }

        /// A value over a `JSONBudget` limit, at the key path of the object or value (never a bare
        /// line and column: the path says which part of the file to cut).
        func overBudget(_ what: String, limit: String, name: String, path: String, at: Int) -> ConfigError {
            error(JSONBudget.message(what, limit: limit, name: name), at: at, path: path.isEmpty ? "(top level)" : path)
        }

        mutating func skipSpace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        mutating func expect(_ c: UInt8, _ what: String) throws {
            guard i < bytes.count, bytes[i] == c else { throw error(i < bytes.count ? "expected \(what)" : "unexpected end of the file, expected \(what)") }
            i += 1
        }

        mutating func value(path: String, depth: Int) throws {
            guard depth < JSONBudget.maxDepth else {
                throw overBudget("nested too deeply", limit: "\(JSONBudget.maxDepth) levels", name: "maxDepth", path: path, at: i)
            }
            guard i < bytes.count else { throw error("unexpected end of the file, expected a value") }
            values += 1
            guard values <= JSONBudget.maxValues else {
                throw overBudget("too many values in the file", limit: "\(JSONBudget.maxValues) values", name: "maxValues", path: path, at: i)
            }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                i += 1
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return }
                var keys = 0
                while true {
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
                        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
                            throw error("trailing comma before \"}\" (JSON allows none)", at: lastComma(before: i), path: path)
                        }
                        throw error(i < bytes.count ? "expected a key in double quotes" : "unexpected end of the file, expected a key")
                    }
                    keys += 1
                    guard keys <= JSONBudget.maxKeysPerObject else {
                        throw overBudget("too many keys in this object", limit: "\(JSONBudget.maxKeysPerObject) keys per object",
                                         name: "maxKeysPerObject", path: path, at: i)
                    }
                    let key = try string(path: path)
                    skipSpace()
                    try expect(UInt8(ascii: ":"), "\":\" after the key")
                    skipSpace()
                    try value(path: path + "." + key, depth: depth + 1)
                    skipSpace()
                    guard i < bytes.count else { throw error("unexpected end of the file, expected \",\" or \"}\"") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "}") { i += 1; return }
                    throw error("expected \",\" or \"}\" after the value of \"\(key.count > 60 ? String(key.prefix(60)) + "…" : key)\"")
                }
            case UInt8(ascii: "["):
                i += 1
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return }
                var index = 0
                while true {
                    skipSpace()
                    if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
                        throw error("trailing comma before \"]\" (JSON allows none)", at: lastComma(before: i), path: path)
                    }
                    try value(path: path + "[\(index)]", depth: depth + 1)
                    index += 1
                    skipSpace()
                    guard i < bytes.count else { throw error("unexpected end of the file, expected \",\" or \"]\"") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "]") { i += 1; return }
                    throw error("expected \",\" or \"]\"")
                }
            case UInt8(ascii: "\""):
                _ = try string(path: path)
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number(path: path)
            default:
                let word = bytes[i...].prefix { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) }
                if !word.isEmpty, ["NaN", "Infinity", "inf", "nan"].contains(String(decoding: word, as: UTF8.self)) {
                    throw error("\(String(decoding: word, as: UTF8.self)) is not a JSON number (only finite numbers are allowed)", path: path)
                }
                throw error("expected a value (an object, array, string, number, true, false or null)")
            }
        }

        func lastComma(before end: Int) -> Int {
            var k = end - 1
            while k > 0, bytes[k] != UInt8(ascii: ",") { k -= 1 }
            return k
        }

        mutating func literal(_ word: String) throws {
            let w = Array(word.utf8)
            guard bytes[i...].starts(with: w) else { throw error("expected a value (an object, array, string, number, true, false or null)") }
            i += w.count
        }

        /// Reads the string at `i`; `path` is where it is, for the length limit's message.
        mutating func string(path: String) throws -> String {
            let start = i
            i += 1
            var out: [UInt8] = []
            while i < bytes.count {
                guard i - start <= JSONBudget.maxStringBytes + 1 else {
                    throw overBudget("a string too long", limit: "\(JSONBudget.maxStringBytes) bytes per string",
                                     name: "maxStringBytes", path: path, at: start)
                }
                let c = bytes[i]
                if c == UInt8(ascii: "\"") { i += 1; return String(decoding: out, as: UTF8.self) }
                if c < 0x20 { throw error("control character in a string (escape it, e.g. \\n)") }
                if c == UInt8(ascii: "\\") {
                    i += 1
                    guard i < bytes.count else { break }
                    if bytes[i] == UInt8(ascii: "u") {
                        guard i + 4 < bytes.count, bytes[(i + 1)...(i + 4)].allSatisfy({ isHex($0) }) else {
                            throw error("bad \\u escape in a string")
                        }
                        i += 4
                    } else if !"\"\\/bfnrt".utf8.contains(bytes[i]) {
                        throw error("bad escape \\\(Character(UnicodeScalar(bytes[i]))) in a string")
                    }
                }
                out.append(c)
                i += 1
            }
            throw error("unterminated string", at: start)
        }

        func isHex(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
        }

        mutating func number(path: String) throws {
            let start = i
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            func digits() -> Int {
                let s = i
                while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
                return i - s
            }
            let intDigits = digits()
            guard intDigits > 0 else { throw error("expected digits after \"-\"", at: start) }
            if intDigits > 1 && bytes[i - intDigits] == UInt8(ascii: "0") { throw error("numbers cannot start with 0", at: start) }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                guard digits() > 0 else { throw error("expected digits after \".\"", at: start) }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits() > 0 else { throw error("expected digits in the exponent", at: start) }
            }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            if let d = Double(text), !d.isFinite {
                let shown = text.count > 60 ? String(text.prefix(60)) + "…" : text
                throw error("number \(shown) is out of range (beyond ±1.8e308)", at: start, path: path)
            }
        }
    }
}
