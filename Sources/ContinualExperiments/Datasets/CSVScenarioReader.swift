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
    /// Key columns (user, session, time): never features; their values are returned per sample
    /// by `readWithKeys`. Each pairs the column name with the JSON key that named it, for errors.
    public var keyColumns: [(name: String, key: String)] = []
    /// The feature columns, in this order (nil: every column not named above, in header order);
    /// columns in neither are not read.
    public var featureColumns: [String]?
    /// False when experiences are cut by time (`DatasetScenario.experiences`): every row is read
    /// into experience 0, and a column named `experienceColumn` is refused unless
    /// `featureColumns` leaves it unread. `readsSplits` likewise for the split (every row trains).
    public var readsExperiences = true
    public var readsSplits = true

    public init() {}

    public func read(path: String) throws -> ExperienceStream {
        try readWithKeys(path: path).stream
    }

    /// The stream and, per experience, the text of every key column for each train and test row.
    public func readWithKeys(path: String) throws -> (stream: ExperienceStream, keys: [SampleKeys]) {
        guard FileManager.default.fileExists(atPath: path) else { throw ScenarioError("\(path): no such file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw ScenarioError("\(path): cannot read the file") }
        return try [UInt8](data).withUnsafeBufferPointer { b in try parse(b, path: path) }
    }

    public func parse(_ text: String, path: String) throws -> ExperienceStream {
        try parse(bytes: Array(text.utf8), path: path)
    }

    /// The comma-separated fields of one line (byte ranges into the file, spaces and tabs trimmed,
    /// a field wholly in double quotes loses them). Quoting is not otherwise supported (no commas,
    /// quotes or line breaks inside fields): returns the 0-based column of the first field that
    /// needs it as `quoted`.
    static func fields(_ b: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) -> (fields: [Range<Int>], quoted: Int?) {
        var result: [Range<Int>] = []
        var quoted: Int? = nil
        var start = line.lowerBound
        func add(_ end: Int) {
            var lo = start, hi = end
            while lo < hi, b[lo] == 0x20 || b[lo] == 0x09 { lo += 1 }
            while hi > lo, b[hi - 1] == 0x20 || b[hi - 1] == 0x09 { hi -= 1 }
            if hi - lo >= 2, b[lo] == 0x22, b[hi - 1] == 0x22 { lo += 1; hi -= 1 }
            if quoted == nil, (lo..<hi).contains(where: { b[$0] == 0x22 }) { quoted = result.count }
            result.append(lo..<hi)
        }
        var i = line.lowerBound
        while i < line.upperBound {
            if b[i] == 0x2C { add(i); start = i + 1 }
            i += 1
        }
        add(line.upperBound)
        return (result, quoted)
    }

    /// Parses the file's bytes in one pass (time linear in the file size): lines end in LF or
    /// CRLF (Windows/Excel), a UTF-8 byte order mark is skipped, and a NUL byte anywhere is an
    /// error naming its line and column (C number parsers would stop at it: `5\0.75` read as 5).
    public func parse(bytes data: [UInt8], path: String) throws -> ExperienceStream {
        try data.withUnsafeBufferPointer { b in try parse(b, path: path) }.stream
    }

    private func parse(_ b: UnsafeBufferPointer<UInt8>, path: String) throws -> (stream: ExperienceStream, keys: [SampleKeys]) {
        let lines = try Self.lines(b, path: path)
        guard let headerIndex = lines.firstIndex(where: { !Self.isBlank(b, $0) }) else {
            throw ScenarioError("\(path): the file is empty (expected a header row)")
        }
        let (headerFields, headerQuoted) = Self.fields(b, lines[headerIndex])
        if let q = headerQuoted { throw Self.quotedError(path: path, line: headerIndex + 1, column: q) }
        let header = headerFields.map { Self.text(b, $0) }
        let (ec, sc, lc, kc, featureColumns) = try columns(header, line: headerIndex + 1, path: path)
        guard !featureColumns.isEmpty else { throw ScenarioError("\(path):\(headerIndex + 1): no feature columns in the header") }
        let labelLimit = min(classes ?? DataLimits.maxClasses, DataLimits.maxClasses)
        var rows = RowReader(reader: self, b: b, path: path, header: header, experienceColumn: ec, splitColumn: sc,
                             labelColumn: lc, keyColumns: kc, featureColumns: featureColumns, labelLimit: labelLimit)
        rows.row.reserveCapacity(featureColumns.count)
        for lineIndex in (headerIndex + 1)..<lines.count {
            let line = lines[lineIndex]
            if Self.isBlank(b, line) { continue }
            try rows.read(line, number: lineIndex + 1)
        }
        let byExperience = rows.byExperience
        guard !byExperience.isEmpty else { throw ScenarioError("\(path): no data rows after the header") }
        let k = classes ?? Int(rows.maxLabel) + 1
        let head: OutputHead = k <= 2 && !forceMulticlass ? .binary : .multiclass(classes: max(k, 2))
        let experiences = byExperience.keys.sorted().enumerated().map { i, id in
            Experience(index: i, name: "experience_\(id)", train: byExperience[id]!.train, test: byExperience[id]!.test,
                       metadata: ["experience_id": "\(id)", "source": path])
        }
        if keyColumns.isEmpty { try ExperienceStream.requireNonEmptySplits(experiences, source: path) }
        let stream = ExperienceStream(name: "dataset", featureNames: featureColumns.map { header[$0] }, head: head,
                                      experiences: experiences, metadata: ["source": path, "format": "csv"])
        return (stream, byExperience.keys.sorted().map { rows.keysByExperience[$0] ?? SampleKeys() })
    }

    /// The file's line ranges without their LF / CRLF (after a UTF-8 byte order mark); a NUL
    /// byte anywhere is an error naming its line and column.
    static func lines(_ b: UnsafeBufferPointer<UInt8>, path: String) throws -> [Range<Int>] {
        var begin = 0
        if b.count >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF { begin = 3 }
        var lines: [Range<Int>] = []
        var lineStart = begin
        for i in begin..<b.count where b[i] == 0x0A {
            lines.append(lineStart..<(i > lineStart && b[i - 1] == 0x0D ? i - 1 : i))
            lineStart = i + 1
        }
        if lineStart < b.count || lines.isEmpty {
            var end = b.count
            if end > lineStart, b[end - 1] == 0x0D { end -= 1 }
            lines.append(lineStart..<max(end, lineStart))
        }
        if let nul = b[begin...].firstIndex(of: 0) {
            let line = lines.firstIndex(where: { $0.upperBound >= nul }) ?? 0
            let column = b[lines[line].lowerBound..<nul].reduce(1) { $0 + ($1 == 0x2C ? 1 : 0) }
            throw ScenarioError("\(path):\(line + 1), column \(column): a NUL byte inside a field (the file is binary or damaged)")
        }
        return lines
    }

    /// Whether a line holds only spaces, tabs and carriage returns.
    static func isBlank(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> Bool {
        r.allSatisfy { b[$0] == 0x20 || b[$0] == 0x09 || b[$0] == 0x0D }
    }

    /// A field's bytes as text.
    static func text(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: b[r]), as: UTF8.self)
    }

    /// Whether a field is `lowercaseASCII`, ignoring ASCII case (`Train`, `TEST`).
    static func equals(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>, _ lowercaseASCII: String) -> Bool {
        let u = Array(lowercaseASCII.utf8)
        guard r.count == u.count else { return false }
        for (k, i) in r.enumerated() where (b[i] | 0x20) != u[k] { return false }
        return true
    }

    /// The data rows of one file, read in order into samples (and key values) by experience id.
    private struct RowReader {
        let reader: CSVScenarioReader
        let b: UnsafeBufferPointer<UInt8>
        let path: String
        let header: [String]
        /// Column indices (−1 for a column not read).
        let experienceColumn: Int, splitColumn: Int, labelColumn: Int
        let keyColumns: [Int], featureColumns: [Int]
        /// Labels must be below this (the `classes` given, at most `DataLimits.maxClasses`).
        let labelLimit: Int
        var byExperience: [Int: (train: Samples, test: Samples)] = [:]
        var keysByExperience: [Int: SampleKeys] = [:]
        var maxLabel: Int32 = 0
        /// The current row's features (one buffer, reused).
        var row = [Float]()

        /// Adds the row on line `lineNumber` (1-based); errors name its line and column.
        mutating func read(_ line: Range<Int>, number lineNumber: Int) throws {
            let (ec, sc, lc, kc) = (experienceColumn, splitColumn, labelColumn, keyColumns)
            let (path, header, b) = (self.path, self.header, self.b)
            func text(_ r: Range<Int>) -> String { CSVScenarioReader.text(b, r) }
            let d = featureColumns.count
            let (f, quoted) = CSVScenarioReader.fields(b, line)
            if let q = quoted { throw CSVScenarioReader.quotedError(path: path, line: lineNumber, column: q) }
            guard f.count == header.count else {
                throw ScenarioError("\(path):\(lineNumber): ragged row: expected \(header.count) columns as in the header, found \(f.count)")
            }
            func at(_ c: Int) -> String { "\(path):\(lineNumber), column \(c + 1) (\"\(header[c])\")" }
            guard let e = ec < 0 ? 0 : Int(text(f[ec])) else {
                throw ScenarioError("\(at(ec)): expected an integer experience id, found \"\(text(f[ec]))\"")
            }
            guard let y64 = Int64(text(f[lc])) else {
                throw ScenarioError("\(at(lc)): expected an integer class label, found \"\(text(f[lc]))\"")
            }
            if y64 < 0 || y64 >= Int64(labelLimit) {
                let why = reader.classes == nil ? " (at most \(DataLimits.maxClasses) classes, DataLimits.maxClasses)" : ""
                throw ScenarioError("\(at(lc)): label \(y64) is out of range 0..<\(labelLimit)\(why)")
            }
            let y = Int32(y64)
            maxLabel = max(maxLabel, y)
            let isTest: Bool
            if sc < 0 || CSVScenarioReader.equals(b, f[sc], "train") {
                isTest = false
            } else if CSVScenarioReader.equals(b, f[sc], "test") {
                isTest = true
            } else {
                throw ScenarioError("\(at(sc)): split must be \"train\" or \"test\", found \"\(text(f[sc]))\"")
            }
            row.removeAll(keepingCapacity: true)
            for c in featureColumns {
                guard let v = CSVScenarioReader.float(b, f[c]), v.isFinite else {
                    throw ScenarioError("\(at(c)): expected a finite number, found \"\(text(f[c]))\"")
                }
                row.append(v)
            }
            var entry = byExperience.removeValue(forKey: e) ?? (Samples(dimension: d), Samples(dimension: d))
            if isTest {
                entry.test.features.append(contentsOf: row)
                entry.test.labels.append(y)
            } else {
                entry.train.features.append(contentsOf: row)
                entry.train.labels.append(y)
            }
            byExperience[e] = entry
            if !kc.isEmpty {
                var keys = keysByExperience[e] ?? SampleKeys()
                for (k, c) in kc.enumerated() {
                    let value = text(f[c])
                    guard !value.isEmpty else { throw ScenarioError("\(at(c)): empty \(reader.keyColumns[k].key) value") }
                    keys.append(value, column: reader.keyColumns[k].name, test: isTest)
                }
                keysByExperience[e] = keys
            }
        }
    }

    /// The indices of the experience, split and label columns (−1 when not read), of the key
    /// columns and of the features, from the header (`line` is its line number, for errors).
    private func columns(_ header: [String], line: Int, path: String) throws
        -> (experience: Int, split: Int, label: Int, keys: [Int], features: [Int]) {
        var firstColumn: [String: Int] = [:]
        for (i, h) in header.enumerated() {
            if firstColumn[h] != nil { throw ScenarioError("\(path):\(line): column \"\(h)\" appears more than once") }
            firstColumn[h] = i
        }
        func column(_ name: String) throws -> Int {
            guard let i = firstColumn[name] else {
                throw ScenarioError("\(path):\(line): missing column \"\(name)\" in the header (found: \(header.joined(separator: ", ")))")
            }
            return i
        }
        // A column not read is -1 (no field has that index).
        func optional(_ name: String, reads: Bool, key: String, hint: String) throws -> Int {
            if reads {
                guard firstColumn[name] != nil else {
                    throw ScenarioError("\(path):\(line): missing column \"\(name)\" in the header (found: "
                        + "\(header.joined(separator: ", "))); without one, \(hint)")
                }
                return try column(name)
            }
            if firstColumn[name] != nil && self.featureColumns == nil {
                throw ScenarioError("\(path):\(line): .scenario.\(key): the file has a column \"\(name)\", but \"\(key)\" "
                    + "cuts by time; leave out the column or the key (or list \"feature_columns\", leaving it unread)")
            }
            return -1
        }
        let ec = try optional(experienceColumn, reads: readsExperiences, key: "experiences",
                              hint: "cut experiences by time: \"experiences\": {\"every\": N, \"unit\": \"days\"} with \"time_column\"")
        let sc = try optional(splitColumn, reads: readsSplits, key: "test",
                              hint: "choose test rows by time: \"test\": {\"last\": k} with \"time_column\"")
        let lc = try column(labelColumn)
        var kc: [Int] = []
        for (name, key) in keyColumns {
            guard let i = firstColumn[name] else {
                throw ScenarioError("\(path):\(line): .scenario.\(key): no column \"\(name)\" in the header "
                    + "(found: \(header.joined(separator: ", ")))")
            }
            guard ![ec, sc, lc].contains(i) else {
                throw ScenarioError("\(path): .scenario.\(key): \"\(name)\" is already the experience, split or label column")
            }
            kc.append(i)
        }
        let features = try self.featureColumns.map { listed in
            try listed.map { name in
                guard let i = firstColumn[name], ![ec, sc, lc].contains(i), !kc.contains(i) else {
                    throw ScenarioError("\(path):\(line): .scenario.feature_columns: \"\(name)\" is "
                        + (firstColumn[name] == nil ? "not in the header (found: \(header.joined(separator: ", ")))"
                                                    : "a declared column (experience, split, label, user, session or time)"))
                }
                return i
            }
        } ?? header.indices.filter { $0 != ec && $0 != sc && $0 != lc && !kc.contains($0) }
        return (ec, sc, lc, kc, features)
    }

    /// A number from a field's bytes (what `Float(String)` accepts).
    static func float(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> Float? {
        r.isEmpty ? nil : Float(String(decoding: UnsafeBufferPointer(rebasing: b[r]), as: UTF8.self))
    }

    static func quotedError(path: String, line: Int, column: Int) -> ScenarioError {
        ScenarioError("\(path):\(line), column \(column + 1): quoted fields with commas or quotes inside are not "
            + "supported; write plain comma-separated values (numbers, train/test, integer labels)")
    }
}
