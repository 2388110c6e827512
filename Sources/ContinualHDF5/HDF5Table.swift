/// A table of typed columns stored as a 1-D HDF5 compound dataset (one record per row).
/// `pandas.DataFrame(h5py.File(p)["t"][:])` loads it; string columns arrive as `bytes` (see `HDF5Group.write(_:name:)`).
public struct HDF5Table: Equatable, Sendable {
    /// Storage type of a column: 64-bit float, 64-bit integer or variable-length UTF-8 string.
    public enum ColumnKind: Sendable, Equatable {
        case float64, int64, string
    }

    /// A named, typed column.
    public struct Column: Equatable, Sendable {
        public var name: String
        public var kind: ColumnKind

        public init(_ name: String, _ kind: ColumnKind) {
            self.name = name
            self.kind = kind
        }
    }

    /// The columns, in storage order.
    public var columns: [Column]
    /// The rows; each has one value per column, matching its kind (`.int` is accepted in `.float64` columns).
    public var rows: [[HDF5Value]]

    public init(columns: [Column], rows: [[HDF5Value]] = []) {
        self.columns = columns
        self.rows = rows
    }

    /// Convenience for `HDF5Table(columns: [("loss", .float64), ("task", .string)])`.
    public init(columns: [(name: String, kind: ColumnKind)], rows: [[HDF5Value]] = []) {
        self.init(columns: columns.map { Column($0.name, $0.kind) }, rows: rows)
    }

    /// All values of the column called `name`, or nil if there is no such column.
    public func column(_ name: String) -> [HDF5Value]? {
        guard let index = columns.firstIndex(where: { $0.name == name }) else { return nil }
        return rows.map { $0[index] }
    }
}
