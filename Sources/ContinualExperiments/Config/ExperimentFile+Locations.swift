import Foundation
import ContinualCore

extension ExperimentFile {
    static func threadCount(_ value: JSONValue?, at location: String, file: String) throws -> Int? {
        guard let value else { return nil }
        guard case .int(let n) = value, n >= 1, n <= maximumThreads else {
            throw ConfigError(file: file, location: location, message: "expected an integer from 1 to \(maximumThreads) "
                + "(threads per dense product of a run; results do not depend on it)")
        }
        return Int(n)
    }

    static func string(_ value: JSONValue?, at location: String, file: String) throws -> String? {
        guard let value else { return nil }
        guard case .string(let s) = value else {
            throw ConfigError(file: file, location: location, message: "expected a string")
        }
        return s
    }

    /// Names become HDF5 group names and file names: keep them to a safe alphabet.
    static func checkName(_ name: String, at location: String, file: String) throws {
        let ok = !name.isEmpty && name.count <= 100 && name.unicodeScalars.allSatisfy {
            CharacterSet.alphanumerics.contains($0) || "-_.+=,".unicodeScalars.contains($0)
        }
        if !ok {
            throw ConfigError(file: file, location: location,
                              message: "\"\(name)\" is not a valid name (1–100 letters, digits or - _ . + = ,)")
        }
    }

    /// "line L, column C" of the first syntax error, found with JSONSerialization (JSONDecoder
    /// reports no position).
    static func syntaxLocation(_ data: Data) -> String {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return ""  // valid JSON but not decodable as a value (should not happen)
        } catch {
            let text = "\(error)"
            if let index = firstNumber(after: "character ", in: text) ?? firstNumber(after: "index ", in: text) {
                return lineColumn(of: index, in: data)
            }
            if let line = firstNumber(after: "line ", in: text) {
                let column = firstNumber(after: "column ", in: text) ?? 0
                return "line \(line), column \(column)"
            }
            return ""
        }
    }

    static func firstNumber(after marker: String, in text: String) -> Int? {
        guard let r = text.range(of: marker) else { return nil }
        let digits = text[r.upperBound...].prefix { $0.isNumber }
        return Int(digits)
    }

    static func lineColumn(of offset: Int, in data: Data) -> String {
        var line = 1, column = 1
        for (i, byte) in data.enumerated() {
            if i >= offset { break }
            if byte == UInt8(ascii: "\n") { line += 1; column = 1 } else { column += 1 }
        }
        return "line \(line), column \(column)"
    }
}
