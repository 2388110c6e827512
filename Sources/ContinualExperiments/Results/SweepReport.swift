import Foundation
import ContinualHDF5

/// Sweep summaries for the terminal and spreadsheets: means ± standard deviations over seeds,
/// grouped by variant and swept values, and `/summary` as CSV.
public enum SweepReport {
    /// Runs sharing the same values of the grouping columns.
    public struct Group: Sendable {
        public var key: [(column: String, value: HDF5Value)]
        public var runs: Int
        /// Runs with status "completed" (the only ones in the statistics).
        public var completed: Int
        /// metric → (mean, sample standard deviation (n−1; NaN for one run)).
        public var stats: [String: (mean: Double, std: Double)]
    }

    /// The metrics `inspect` shows.
    public static let metrics = ["acc", "bwt", "fwt", "forgetting", "learning_accuracy"]

    /// `/summary` of a results file and its grouping columns (variant + swept columns except seed).
    public static func read(path: String) throws -> (table: HDF5Table, groupBy: [String]) {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        return try HDF5Lock.withLock {
            let file = try HDF5File.open(path: path, mode: .readOnly)
            defer { try? file.close() }
            guard file.root.exists("summary") else { throw HDF5Error(.notFound, "\(path) has no /summary table") }
            let d = try file.root.openDataset("summary")
            let table = try d.readTable()
            var swept: [String] = []
            if let text = try? d.attributes.string("swept_columns_json"),
               let names = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) {
                swept = names.filter { $0 != "seed" }
            }
            let names = Set(table.columns.map(\.name))
            let by = (["variant"] + swept).filter { names.contains($0) }
            return (table, by.isEmpty ? ["name"] : by)
        }
    }

    /// Groups rows by `columns` (groups in order of first appearance) with each metric's mean ± std.
    public static func groups(_ table: HDF5Table, by columns: [String], metrics: [String] = metrics) -> [Group] {
        let names = table.columns.map(\.name)
        let keyIndex = columns.compactMap { names.firstIndex(of: $0) }
        let statusIndex = names.firstIndex(of: "status")
        var order: [[HDF5Value]] = []
        var members: [[HDF5Value]: [[HDF5Value]]] = [:]
        for row in table.rows {
            // NaN (a swept path the run's variant does not have) must group with NaN.
            let key = keyIndex.map { i -> HDF5Value in
                if case .double(let d) = row[i], d.isNaN { return .string("—") }
                return row[i]
            }
            if members[key] == nil { order.append(key) }
            members[key, default: []].append(row)
        }
        return order.map { key in
            let rows = members[key]!
            let done = rows.filter { r in statusIndex.map { r[$0].stringValue == "completed" } ?? true }
            var stats: [String: (Double, Double)] = [:]
            for m in metrics {
                guard let i = names.firstIndex(of: m) else { continue }
                let xs = done.compactMap { $0[i].doubleValue }.filter { !$0.isNaN }
                stats[m] = meanStd(xs)
            }
            return Group(key: zip(keyIndex.map { names[$0] }, key).map { ($0, $1) }, runs: rows.count,
                         completed: done.count, stats: stats)
        }
    }

    /// Mean and sample standard deviation (n−1), as pandas computes them.
    public static func meanStd(_ xs: [Double]) -> (mean: Double, std: Double) {
        guard !xs.isEmpty else { return (.nan, .nan) }
        let mean = xs.reduce(0, +) / Double(xs.count)
        guard xs.count > 1 else { return (mean, .nan) }
        let ss = xs.reduce(0) { $0 + ($1 - mean) * ($1 - mean) }
        return (mean, (ss / Double(xs.count - 1)).squareRoot())
    }

    /// The grouped table as text: one line per group, metrics in percentage points.
    public static func text(_ groups: [Group], metrics: [String] = ["acc", "bwt", "fwt", "forgetting"]) -> String {
        guard let first = groups.first else { return "(no runs)" }
        let keyNames = first.key.map(\.column)
        let keyTexts = groups.map { g in g.key.map { cell($0.value) } }
        let widths = keyNames.indices.map { i in max(keyNames[i].count, keyTexts.map { $0[i].count }.max() ?? 0) }
        func pad(_ s: String, _ w: Int) -> String { s.padding(toLength: max(w, s.count), withPad: " ", startingAt: 0) }
        var header = zip(keyNames, widths).map { pad($0, $1) }.joined(separator: "  ") + "  runs  ok "
        for m in metrics { header += "  " + pad(m.uppercased() + " (%)", 15) }
        var lines = [header]
        for (g, texts) in zip(groups, keyTexts) {
            var line = zip(texts, widths).map { pad($0, $1) }.joined(separator: "  ")
            line += String(format: "  %4d  %3d", g.runs, g.completed)
            for m in metrics {
                let s = g.stats[m] ?? (.nan, .nan)
                let text = s.mean.isNaN ? "—" : s.std.isNaN ? String(format: "%7.2f", s.mean * 100)
                    : String(format: "%7.2f ± %5.2f", s.mean * 100, s.std * 100)
                line += "  " + pad(text, 15)
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// The whole table as CSV (RFC 4180 quoting; doubles in shortest round-trip form, NaN as "nan").
    public static func csv(_ table: HDF5Table) -> String {
        var out = table.columns.map { quote($0.name) }.joined(separator: ",") + "\n"
        for row in table.rows {
            out += row.map { v -> String in
                switch v {
                case .string(let s): return quote(s)
                case .int(let i): return String(i)
                case .double(let d): return d.isNaN ? "nan" : "\(d)"
                }
            }.joined(separator: ",") + "\n"
        }
        return out
    }

    static func quote(_ s: String) -> String {
        s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
            ? "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : s
    }

    static func cell(_ v: HDF5Value) -> String {
        switch v {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : "\(d)"
        }
    }
}
