import Foundation
import ContinualCore

/// Reads a scenario from CSV: a header row, then one sample per row, with a column for the
/// experience id (integer), one for the split (`train` / `test`), a label column (integer class)
/// and every other column a numeric feature, in header order. Experiences are ordered by id.
/// Errors name the file, line and column (ragged rows, non-numbers, missing columns, labels out
/// of range), because this is where users' own logged data enters the toolkit.
public struct CSVScenarioReader: Sendable {
    public var experienceColumn = "experience"
    public var splitColumn = "split"
    public var labelColumn = "label"
    /// Number of classes; nil = max label + 1 (2 or fewer ⇒ binary head).
    public var classes: Int?
    /// Force the head kind ("binary" / "multiclass"); nil = 2 classes ⇒ binary.
    public var forceMulticlass = false

    public init() {}

    public func read(path: String) throws -> ExperienceStream {
        guard FileManager.default.fileExists(atPath: path) else { throw ScenarioError("\(path): no such file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw ScenarioError("\(path): cannot read the file") }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    /// The comma-separated fields of `line`; a field wholly in double quotes loses them. Quoting
    /// is not otherwise supported (no commas, quotes or line breaks inside fields): returns the
    /// 0-based column of the first field that needs it as `quoted`.
    static func fields(_ line: Substring) -> (fields: [String], quoted: Int?) {
        var quoted: Int? = nil
        let f = line.split(separator: ",", omittingEmptySubsequences: false).enumerated().map { c, raw in
            var s = raw.trimmingCharacters(in: .whitespaces)
            if s.count >= 2, s.hasPrefix("\""), s.hasSuffix("\"") { s = String(s.dropFirst().dropLast()) }
            if s.contains("\""), quoted == nil { quoted = c }
            return s
        }
        return (f, quoted)
    }

    public func parse(_ text: String, path: String) throws -> ExperienceStream {
        // A UTF-8 byte order mark (as Excel writes) is not part of the first column's name.
        var text = text
        if text.unicodeScalars.first == "\u{FEFF}" { text = String(text.unicodeScalars.dropFirst()) }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.hasSuffix("\r") ? $0.dropLast() : $0
        }
        guard let headerIndex = lines.firstIndex(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty }) else {
            throw ScenarioError("\(path): the file is empty (expected a header row)")
        }
        let (header, headerQuoted) = Self.fields(lines[headerIndex])
        if let q = headerQuoted { throw Self.quotedError(path: path, line: headerIndex + 1, column: q) }
        func column(_ name: String) throws -> Int {
            guard let i = header.firstIndex(of: name) else {
                throw ScenarioError("\(path):\(headerIndex + 1): missing column \"\(name)\" in the header (found: \(header.joined(separator: ", ")))")
            }
            return i
        }
        let ec = try column(experienceColumn), sc = try column(splitColumn), lc = try column(labelColumn)
        let featureColumns = header.indices.filter { ![ec, sc, lc].contains($0) }
        guard !featureColumns.isEmpty else { throw ScenarioError("\(path):\(headerIndex + 1): no feature columns in the header") }
        if let dup = header.first(where: { h in header.filter { $0 == h }.count > 1 }) {
            throw ScenarioError("\(path):\(headerIndex + 1): column \"\(dup)\" appears more than once")
        }
        let d = featureColumns.count
        var byExperience: [Int: (train: Samples, test: Samples)] = [:]
        var maxLabel: Int32 = 0
        for lineIndex in (headerIndex + 1)..<lines.count {
            let line = lines[lineIndex]
            if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            let lineNumber = lineIndex + 1
            let (f, quoted) = Self.fields(line)
            if let q = quoted { throw Self.quotedError(path: path, line: lineNumber, column: q) }
            guard f.count == header.count else {
                throw ScenarioError("\(path):\(lineNumber): ragged row: expected \(header.count) columns as in the header, found \(f.count)")
            }
            func at(_ c: Int) -> String { "\(path):\(lineNumber), column \(c + 1) (\"\(header[c])\")" }
            guard let e = Int(f[ec]) else { throw ScenarioError("\(at(ec)): expected an integer experience id, found \"\(f[ec])\"") }
            guard let y = Int32(f[lc]) else { throw ScenarioError("\(at(lc)): expected an integer class label, found \"\(f[lc])\"") }
            if y < 0 || (classes.map { Int(y) >= $0 } ?? false) {
                throw ScenarioError("\(at(lc)): label \(y) is out of range 0..<\(classes.map(String.init) ?? "∞")")
            }
            maxLabel = max(maxLabel, y)
            let isTest: Bool
            switch f[sc].lowercased() {
            case "train": isTest = false
            case "test": isTest = true
            default: throw ScenarioError("\(at(sc)): split must be \"train\" or \"test\", found \"\(f[sc])\"")
            }
            var row = [Float]()
            row.reserveCapacity(d)
            for c in featureColumns {
                guard let v = Float(f[c]), v.isFinite else {
                    throw ScenarioError("\(at(c)): expected a finite number, found \"\(f[c])\"")
                }
                row.append(v)
            }
            var entry = byExperience[e] ?? (Samples(dimension: d), Samples(dimension: d))
            if isTest {
                entry.test.features.append(contentsOf: row)
                entry.test.labels.append(y)
            } else {
                entry.train.features.append(contentsOf: row)
                entry.train.labels.append(y)
            }
            byExperience[e] = entry
        }
        guard !byExperience.isEmpty else { throw ScenarioError("\(path): no data rows after the header") }
        let k = classes ?? Int(maxLabel) + 1
        let head: OutputHead = k <= 2 && !forceMulticlass ? .binary : .multiclass(classes: max(k, 2))
        let experiences = byExperience.keys.sorted().enumerated().map { i, id in
            Experience(index: i, name: "experience_\(id)", train: byExperience[id]!.train, test: byExperience[id]!.test,
                       metadata: ["experience_id": "\(id)", "source": path])
        }
        try ExperienceStream.requireNonEmptySplits(experiences, source: path)
        return ExperienceStream(name: "dataset", featureNames: featureColumns.map { header[$0] }, head: head,
                                experiences: experiences, metadata: ["source": path, "format": "csv"])
    }

    static func quotedError(path: String, line: Int, column: Int) -> ScenarioError {
        ScenarioError("\(path):\(line), column \(column + 1): quoted fields with commas or quotes inside are not "
            + "supported; write plain comma-separated values (numbers, train/test, integer labels)")
    }
}
