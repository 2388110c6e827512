import Foundation
import ContinualHDF5
import ContinualMetrics

/// Sweep summaries for the terminal and spreadsheets: one row per configuration (variant + every
/// swept value except the seed) with n, mean ± standard deviation and a 95 % confidence interval
/// over seeds (`SeedStatistics`), in sweep order; and `/summary` as CSV.
public enum SweepReport {
    /// Runs sharing the same values of the grouping columns: one configuration, its seeds pooled.
    public struct Group: Sendable {
        public var key: [(column: String, value: HDF5Value)]
        /// The configuration's name: its runs' name without the `seed=` part (run names are
        /// unique, so these are too), e.g. `ewc_lambda=100` for `ewc_lambda=100_seed=3`.
        public var name: String
        /// Smallest sweep index among the group's runs (groups are listed in this order).
        public var firstSweepIndex: Int
        public var runs: Int
        /// Runs with status "completed" (the only ones in the statistics).
        public var completed: Int
        /// metric → statistics over the completed runs (NaN values skipped).
        public var stats: [String: SeedStatistics]
    }

    /// The metrics summarised per group: the accuracy family, then the measures beyond accuracy
    /// (`balanced_acc`, `macro_f1`, `auroc`, `auprc`: each over the test samples of every
    /// experience at the end of the run, as scikit-learn computes it on the concatenated
    /// predictions — `ResultsWriter.measureSummary` — NaN where the head does not give it).
    /// `steps_per_experience` is the training budget actually used (mean optimizer steps per
    /// experience), shown beside ACC so no comparison hides its compute.
    public static let metrics = ["acc", "bwt", "fwt", "forgetting", "learning_accuracy",
                                 "balanced_acc", "macro_f1", "auroc", "auprc", "steps_per_experience"]

    /// `/summary` of a results file and its grouping columns (variant + swept columns except seed).
    public static func read(path: String) throws -> (table: HDF5Table, groupBy: [String]) {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        return try HDF5Lock.withLock {
            let file = try HDF5File.open(path: path, mode: .readOnly)
            defer { try? file.close() }
            guard file.root.exists("summary") else { throw HDF5Error(.notFound, "\(path) has no /summary table") }
            let d = try file.root.openDataset("summary")
            var table = try d.readTable()
            // A run counts once: rows repeated by a damaged or hand-merged /summary are not more seeds.
            if let ri = table.columns.firstIndex(where: { $0.name == "run_id" }) {
                var seen = Set<HDF5Value>()
                table.rows = table.rows.filter { seen.insert($0[ri]).inserted }
            }
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

    /// Groups rows by `columns`, listed in sweep order (by each group's smallest `sweep_index`,
    /// whatever order the rows are stored in — merged shards, resumed files), with every metric's
    /// statistics over the group's completed runs.
    public static func groups(_ table: HDF5Table, by columns: [String], metrics: [String] = metrics) -> [Group] {
        let names = table.columns.map(\.name)
        let keyIndex = columns.compactMap { names.firstIndex(of: $0) }
        let statusIndex = names.firstIndex(of: "status")
        let sweepIndex = names.firstIndex(of: "sweep_index")
        let nameIndex = names.firstIndex(of: "name")
        let rows = table.rows.enumerated().sorted { a, b in
            let ia = sweepIndex.flatMap { a.element[$0].doubleValue } ?? Double(a.offset)
            let ib = sweepIndex.flatMap { b.element[$0].doubleValue } ?? Double(b.offset)
            return (ia, a.offset) < (ib, b.offset)
        }.map(\.element)
        var order: [[HDF5Value]] = []
        var members: [[HDF5Value]: [[HDF5Value]]] = [:]
        for row in rows {
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
            var stats: [String: SeedStatistics] = [:]
            for m in metrics {
                guard let i = names.firstIndex(of: m) else { continue }
                stats[m] = SeedStatistics(done.compactMap { $0[i].doubleValue })
            }
            let runName = nameIndex.flatMap { rows[0][$0].stringValue } ?? ""
            let keyText = zip(keyIndex.map { names[$0] }, key).map { "\($0)=\(cell($1))" }.joined(separator: "_")
            return Group(key: zip(keyIndex.map { names[$0] }, key).map { ($0, $1) },
                         name: runName.isEmpty ? keyText : configurationName(runName),
                         firstSweepIndex: sweepIndex.flatMap { rows[0][$0].doubleValue }.map { Int($0) } ?? 0,
                         runs: rows.count, completed: done.count, stats: stats)
        }
    }

    /// A run name without its seed label: `naive_seed=3` → `naive`, `lr=0.1_seed=0` → `lr=0.1`,
    /// `seed=4` → `seed` (a sweep over seeds only). Names without a seed label are unchanged.
    public static func configurationName(_ runName: String) -> String {
        var parts = runName.split(separator: "_", omittingEmptySubsequences: false).map(String.init)
        parts.removeAll { $0.hasPrefix("seed=") }
        let joined = parts.joined(separator: "_")
        return joined.isEmpty ? "seed" : joined
    }

    /// The grouped table as text, at most `width` columns wide (at 80 columns everything fits;
    /// narrower, the rightmost columns are left out): one line per configuration with
    /// n (completed/total when some failed), ACC as mean ± std with its 95 % interval, BWT and
    /// forgetting as mean ± std, in percentage points; a name too long for its column gets a line
    /// of its own (names are never cut). A second table lists balanced accuracy, macro-F1,
    /// AUROC and AUPRC when any run has them and `measures` is true.
    public static func text(_ groups: [Group], width: Int = 80, measures: Bool = true) -> String {
        guard !groups.isEmpty else { return "(no runs)" }
        func pm(_ s: SeedStatistics?) -> String {
            guard let s, !s.mean.isNaN else { return "—" }
            return s.std.isNaN ? String(format: "%.2f", s.mean * 100) : String(format: "%.2f ± %.2f", s.mean * 100, s.std * 100)
        }
        func ci(_ s: SeedStatistics?) -> String {
            guard let s, !s.ciHalfWidth.isNaN else { return "—" }
            return String(format: "[%.1f, %.1f]", s.ciLow * 100, s.ciHigh * 100)
        }
        func n(_ g: Group) -> String { g.completed == g.runs ? "\(g.runs)" : "\(g.completed)/\(g.runs)" }
        func steps(_ g: Group) -> String {
            guard let s = g.stats["steps_per_experience"], !s.mean.isNaN else { return "—" }
            return String(format: "%.0f", s.mean)
        }
        var out = table(groups, width: width, title: "configuration", n: n, columns: [
            ("ACC %", { pm($0.stats["acc"]) }), ("steps/exp", steps), ("ACC 95% CI", { ci($0.stats["acc"]) }),
            ("BWT", { pm($0.stats["bwt"]) }), ("forgetting", { pm($0.stats["forgetting"]) }),
        ])
        let extra: [(String, String)] = [("balanced_acc", "bal. acc %"), ("macro_f1", "macro-F1 %"),
                                          ("auroc", "AUROC %"), ("auprc", "AUPRC %")]
        let present = extra.filter { m in groups.contains { !($0.stats[m.0]?.mean.isNaN ?? true) } }
        if measures && !present.isEmpty {
            out += "\n\n" + table(groups, width: width, title: "final measures", n: n,
                                 columns: present.map { m in (m.1, { pm($0.stats[m.0]) }) })
        }
        return out
    }

    /// Left-aligned name column, right-aligned value columns, two spaces between columns.
    /// Columns that would not fit `width` even with the shortest name column are dropped from
    /// the right (the first one always stays).
    static func table(_ groups: [Group], width: Int, title: String, n: (Group) -> String,
                      columns allColumns: [(String, (Group) -> String)]) -> String {
        var columns = allColumns
        func valueWidth(_ cs: [(String, (Group) -> String)]) -> Int {
            let heads = ["n"] + cs.map(\.0)
            return heads.indices.reduce(0) { sum, i in
                sum + 2 + max(heads[i].count, groups.map { g in (i == 0 ? n(g) : cs[i - 1].1(g)).count }.max() ?? 0)
            }
        }
        while columns.count > 1, title.count + valueWidth(columns) > width { columns.removeLast() }
        let cells = groups.map { g in [n(g)] + columns.map { $0.1(g) } }
        let headers = ["n"] + columns.map(\.0)
        let widths = headers.indices.map { i in max(headers[i].count, cells.map { $0[i].count }.max() ?? 0) }
        let valuesWidth = widths.reduce(0) { $0 + 2 + $1 }
        let longest = max(title.count, groups.map(\.name.count).max() ?? 0)
        let nameWidth = max(title.count, min(longest, width - valuesWidth))
        func right(_ s: String, _ w: Int) -> String { String(repeating: " ", count: max(0, w - s.count)) + s }
        func left(_ s: String, _ w: Int) -> String { s + String(repeating: " ", count: max(0, w - s.count)) }
        func values(_ row: [String]) -> String { zip(row, widths).map { "  " + right($0, $1) }.joined() }
        var lines = [left(title, nameWidth) + values(headers)]
        for (g, row) in zip(groups, cells) {
            if g.name.count > nameWidth {
                lines.append(g.name)
                lines.append(String(repeating: " ", count: nameWidth) + values(row))
            } else {
                lines.append(left(g.name, nameWidth) + values(row))
            }
        }
        return lines.map { $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }.joined(separator: "\n")
    }

    /// The whole table as CSV (RFC 4180 quoting; doubles in shortest round-trip form, NaN as "nan").
    public static func csv(_ table: HDF5Table) -> String {
        var out = table.columns.map { quote($0.name) }.joined(separator: ",") + "\n"
        for row in table.rows {
            out += row.map { v -> String in
                switch v {
                case .string(let s): return quote(s)
                case .int(let i): return String(i)
                case .double(let d): return csvNumber(d)
                }
            }.joined(separator: ",") + "\n"
        }
        return out
    }

    /// A Double as `inspect --csv` prints it: the shorter of Swift's shortest round-trip form
    /// and the value rounded to 15 significant digits (DBL_DIG: every decimal of at most 15
    /// digits survives a trip through a Double), so the residue of arithmetic in the 17th digit —
    /// 0.29400000000000004 from a mean of accuracies — prints as 0.294. The rounding changes a
    /// value by at most 5e-15 relative; the results file keeps the exact bits.
    static func csvNumber(_ d: Double) -> String {
        if d.isNaN { return "nan" }
        if d.isInfinite { return d > 0 ? "inf" : "-inf" }
        let exact = "\(d)"
        let rounded = String(format: "%.15g", d)
        return rounded.count < exact.count ? rounded : exact
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
