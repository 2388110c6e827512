import ContinualHDF5

/// The columns of a sweep's `/summary`: the fixed `ResultsSchema.summaryColumns`, then one column
/// per swept key path (int64, float64 or string as the values fit; `seed` reuses the seed column).
public struct SummaryLayout: Sendable, Equatable {
    /// A swept key path and the column holding its value.
    public struct SweptColumn: Sendable, Equatable {
        public var path: String
        public var name: String
        public var kind: HDF5Table.ColumnKind
    }

    /// Swept columns appended after the fixed ones (a swept `seed` is not repeated here).
    public var swept: [SweptColumn]
    /// Every swept key path, in order (`seed` included).
    public var sweptPaths: [String]

    public init(swept: [SweptColumn], sweptPaths: [String]) {
        self.swept = swept
        self.sweptPaths = sweptPaths
    }

    /// The layout of an experiment's sweep. Column kinds come from the whole expansion, so every
    /// shard of a sweep writes the same columns.
    public init(experiment: ExperimentFile) {
        let fixed = Set(ResultsSchema.summaryColumns.map(\.name))
        var swept: [SweptColumn] = []
        for path in experiment.sweptPaths where path != "seed" {
            let values = experiment.runs.map { r in r.sweepValues.first { $0.path == path }?.value }
            let present = values.compactMap { $0 }
            let kind: HDF5Table.ColumnKind
            if present.count == values.count, present.allSatisfy({ if case .int = $0 { return true } else { return false } }) {
                kind = .int64
            } else if present.allSatisfy({ $0.numberValue != nil }) {
                kind = .float64
            } else {
                kind = .string
            }
            swept.append(SweptColumn(path: path, name: fixed.contains(path) ? "sweep:" + path : path, kind: kind))
        }
        self.init(swept: swept, sweptPaths: experiment.sweptPaths)
    }

    /// Names of the columns that hold swept values (`seed` when seeds are swept).
    public var sweptColumnNames: [String] {
        sweptPaths.map { p in p == "seed" ? "seed" : swept.first { $0.path == p }?.name ?? p }
    }

    /// All columns in storage order.
    public var columns: [HDF5Table.Column] {
        ResultsSchema.summaryColumns.map { col -> HDF5Table.Column in
            switch col.kind {
            case .string: return HDF5Table.Column(col.name, .string)
            case .int: return HDF5Table.Column(col.name, .int64)
            case .double: return HDF5Table.Column(col.name, .float64)
            }
        } + swept.map { HDF5Table.Column($0.name, $0.kind) }
    }

    /// One run's row: `ResultsWriter.summaryRow` plus its swept values (NaN or "" where a
    /// variant does not sweep that path).
    public func row(_ r: RunResult) -> [HDF5Value] {
        ResultsWriter.summaryRow(r) + swept.map { col -> HDF5Value in
            let v = r.run.sweepValues.first { $0.path == col.path }?.value
            switch col.kind {
            case .int64:
                if case .int(let i)? = v { return .int(i) }
                if case .uint(let u)? = v { return .int(Int64(bitPattern: u)) }  // same bit pattern as the `seed` column
                return .int(0)
            case .float64: return .double(v?.numberValue ?? .nan)
            case .string: return .string(v?.shortDescription ?? "")
            }
        }
    }
}
