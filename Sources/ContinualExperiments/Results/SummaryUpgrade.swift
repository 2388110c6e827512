import ContinualHDF5

/// Summary rows written by earlier releases, read as today's (issue 41.2).
///
/// `/summary` and each run's `summary_row` have gained columns since `schema_version` 1 was
/// fixed (`ResultsSchema.addedColumns`: the four comparison columns of issue 24, 2026-11-23). A
/// file written before them (41 fixed columns to today's 45) was refused by `--resume` as "a
/// different sweep", failed `merge` and `repair` ("row 0 has 41 values") and trapped a merge of
/// the file with itself. Every reader of stored rows now upgrades them first: the missing
/// columns are inserted where today's layout has them, holding "not recorded" (NaN, or −1 for an
/// integer). The run groups themselves are kept as written, so their digests still hold.
enum SummaryUpgrade {
    /// `table` with every column of `ResultsSchema.addedColumns` it lacks inserted at its place
    /// among `ResultsSchema.summaryColumns` (swept columns follow, in the table's order).
    /// Unchanged when nothing is missing, or when another fixed column is missing or of another
    /// kind: then it is no older layout of a toolkit summary, and the caller's column check
    /// refuses it as before.
    static func upgraded(_ table: HDF5Table) -> HDF5Table {
        let fixed = SummaryLayout(swept: [], sweptPaths: []).columns
        let position = Dictionary(uniqueKeysWithValues: table.columns.enumerated().map { ($1.name, $0) })
        let missing = fixed.filter { position[$0.name] == nil }
        guard !missing.isEmpty, missing.allSatisfy({ ResultsSchema.addedColumns[$0.name] != nil }),
              fixed.allSatisfy({ c in position[c.name].map { table.columns[$0] == c } ?? true }) else { return table }
        let fixedNames = Set(fixed.map(\.name))
        let columns = fixed + table.columns.filter { !fixedNames.contains($0.name) }
        let rows = table.rows.map { row in
            columns.map { c in position[c.name].map { row[$0] } ?? ResultsSchema.addedColumns[c.name]! }
        }
        return HDF5Table(columns: columns, rows: rows)
    }
}
