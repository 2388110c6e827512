import CHDF5

extension HDF5Group {
    /// Writes `table` as a new 1-D compound dataset, chunked by `chunkRows` with an unlimited first
    /// dimension so `HDF5Dataset.append(rows:)` can grow it; `compress` adds shuffle + gzip(4).
    ///
    /// Readers: `pandas.DataFrame(h5py.File(p)[name][:])` loads it. h5py (3.x) returns the
    /// variable-length UTF-8 string columns as `bytes`, so pandas users decode them with
    /// `df[col].str.decode("utf-8")`; whole string datasets and string attributes come back as `str`.
    @discardableResult
    public func write(_ table: HDF5Table, name: String, compress: Bool = true, chunkRows: Int = 512) throws
        -> HDF5Dataset
    {
        let object = "table '\(displayPath(joinPath(path, name)))'"
        func invalid(_ reason: String) -> HDF5Error {
            file.failure("create", object, kind: .invalidArgument, reason: reason)
        }
        guard !table.columns.isEmpty else { throw invalid("a table needs at least one column") }
        guard chunkRows > 0 else { throw invalid("chunkRows must be positive, not \(chunkRows)") }
        let names = table.columns.map(\.name)
        if let bad = names.first(where: { $0.isEmpty || names.firstIndex(of: $0) != names.lastIndex(of: $0) }) {
            throw invalid(bad.isEmpty ? "empty column name" : "duplicate column name '\(bad)'")
        }
        let layout = HDF5TableLayout(columns: table.columns)
        let type = try check(layout.makeType(), file.failure("create", object))
        defer { H5Tclose(type) }
        return try layout.withPacked(table.rows, failure: invalid) { buffer in
            try createDataset(name, type: type, shape: [table.rows.count], chunk: [chunkRows], compress: compress,
                              unlimitedFirst: true) { id in
                guard !table.rows.isEmpty else { return 0 }
                return H5Dwrite(id, type, chdf5_H5S_ALL(), chdf5_H5S_ALL(), chdf5_H5P_DEFAULT(), buffer)
            }
        }
    }
}
