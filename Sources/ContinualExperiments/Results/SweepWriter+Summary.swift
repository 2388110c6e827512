import Foundation
import ContinualHDF5

extension SweepWriter {
    // MARK: - Shared with merge

    /// Root attributes of a sweep file.
    static func writeHeader(_ root: HDF5Group, experiment: ExperimentFile, layout: SummaryLayout, shard: String) throws {
        try ResultsWriter.writeHeader(root, experiment: experiment)
        let a = root.attributes
        try a.set("kind", "sweep")
        try a.set("sweep_json", experiment.sweepJSON?.canonicalText() ?? "")
        try a.set("sweep_run_count", Int64(experiment.runs.count))
        try a.set("shard", shard)
        try writeLayout(layout, to: a)
    }

    static func writeLayout(_ layout: SummaryLayout, to a: HDF5Attributes) throws {
        try a.set("swept_paths_json", (try? JSONValue.encodeCanonicalText(layout.sweptPaths)) ?? "[]")
        try a.set("swept_columns_json", (try? JSONValue.encodeCanonicalText(layout.sweptColumnNames)) ?? "[]")
    }

    /// The layout recorded in a sweep file's root attributes and its runs' `summary_row` tables.
    static func readLayout(_ root: HDF5Group) throws -> SummaryLayout? {
        guard let pathsText = try root.attributes.string("swept_paths_json"),
              let columnsText = try root.attributes.string("swept_columns_json"),
              let paths = try? JSONDecoder().decode([String].self, from: Data(pathsText.utf8)),
              let names = try? JSONDecoder().decode([String].self, from: Data(columnsText.utf8)),
              paths.count == names.count, root.exists("summary") else { return nil }
        let columns = try root.openDataset("summary").readTable().columns
        var swept: [SummaryLayout.SweptColumn] = []
        for (p, n) in zip(paths, names) where p != "seed" {
            guard let c = columns.first(where: { $0.name == n }) else { return nil }
            swept.append(.init(path: p, name: n, kind: c.kind))
        }
        return SummaryLayout(swept: swept, sweptPaths: paths)
    }

    /// The complete runs' summary rows, keyed by run id. Groups that cannot be read (damaged) are
    /// skipped and listed in `damaged` with the reason, so one bad group does not cost the rest.
    static func storedRows(_ root: HDF5Group, damaged: inout [(id: String, reason: String)])
        throws -> [(id: String, row: [HDF5Value], columns: [HDF5Table.Column])]
    {
        guard root.exists("runs") else { return [] }
        let runs = try root.openGroup("runs")
        var out: [(String, [HDF5Value], [HDF5Table.Column])] = []
        for id in try runs.childNames() {
            do {
                let g = try runs.openGroup(id)
                guard (try? g.attributes.scalar("complete", as: Int64.self)) == 1, g.exists("summary_row") else { continue }
                let t = SummaryUpgrade.upgraded(try g.openDataset("summary_row").readTable())
                guard let row = t.rows.first else { continue }
                out.append((id, row, t.columns))
            } catch {
                damaged.append((id, "\(error)"))
            }
        }
        return out
    }

    static func storedRows(_ root: HDF5Group) throws -> [(id: String, row: [HDF5Value], columns: [HDF5Table.Column])] {
        var damaged: [(id: String, reason: String)] = []
        return try storedRows(root, damaged: &damaged)
    }

    /// Rebuilds `/summary` from the complete run groups.
    static func rebuildSummary(_ root: HDF5Group, layout: SummaryLayout) throws {
        let rows = try storedRows(root).filter { $0.columns == layout.columns }.map(\.row)
        try writeSummary(rows, layout: layout, into: root)
    }

    /// Rewrites `/summary` sorted by (sweep_index, run_id), from the rows it holds.
    static func sortSummary(_ root: HDF5Group, layout: SummaryLayout) throws {
        let table = try root.openDataset("summary").readTable()
        guard table.columns == layout.columns else {
            // Not written by this sweep's layout (cannot happen for a file this writer made):
            // fall back to the run groups, which are the truth.
            return try rebuildSummary(root, layout: layout)
        }
        try writeSummary(table.rows, layout: layout, into: root)
    }

    /// Writes `/summary` (replacing it) with `rows` sorted by (sweep_index, run_id).
    static func writeSummary(_ rows: [[HDF5Value]], layout: SummaryLayout, into root: HDF5Group) throws {
        let names = layout.columns.map(\.name)
        let si = names.firstIndex(of: "sweep_index")!, ri = names.firstIndex(of: "run_id")!
        let sorted = rows.sorted { a, b in
            let ia = a[si].intValue ?? 0, ib = b[si].intValue ?? 0
            return ia != ib ? ia < ib : (a[ri].stringValue ?? "") < (b[ri].stringValue ?? "")
        }
        if root.exists("summary") { try root.delete("summary") }
        let d = try root.write(HDF5Table(columns: layout.columns, rows: sorted), name: "summary")
        try d.attributes.set("meaning", "one row per run, sorted by sweep_index; metrics as in /metric_definitions; fractions 0..1")
        try writeLayout(layout, to: d.attributes)
        try d.attributes.set("timing_columns_json", (try? JSONValue.encodeCanonicalText(ResultsSchema.timingColumns.sorted())) ?? "[]")
        try RunManifest.write(root)
    }
}
