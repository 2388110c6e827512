import CHDF5

extension HDF5Dataset {
    /// Reads a compound dataset as a table: integer members become `.int`, float members `.double`,
    /// string members (variable- or fixed-length) `.string`. Works for tables written by h5py too.
    public func readTable() throws -> HDF5Table {
        try withTypeAndCount("read") { fileType, space, count in
            try expect(fileType, classes: [H5T_COMPOUND], as: "a table")
            let layout = try HDF5TableLayout(fileType: fileType) {
                failure("read", kind: $0 == nil ? nil : .typeMismatch, reason: $0)
            }
            let memoryType = try check(layout.makeType(), failure("read"))
            defer { H5Tclose(memoryType) }
            guard count > 0 else { return HDF5Table(columns: layout.columns) }
            try checkReadSize(count: count, fileType: fileType, memoryElementSize: layout.rowSize)
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: count * layout.rowSize, alignment: 16)
            defer { buffer.deallocate() }
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: count * layout.rowSize)
            defer { H5Dvlen_reclaim(memoryType, space, chdf5_H5P_DEFAULT(), buffer) }
            let status = H5Dread(handle.id, memoryType, chdf5_H5S_ALL(), chdf5_H5S_ALL(), chdf5_H5P_DEFAULT(), buffer)
            try check(status, failure("read"))
            return HDF5Table(columns: layout.columns, rows: layout.unpack(buffer, count: count))
        }
    }

    /// Appends rows to a table written by `HDF5Group.write(_:name:)` (or any chunked 1-D compound dataset
    /// with an unlimited first dimension), extending it with `H5Dset_extent` and a hyperslab write.
    public func append(rows: [[HDF5Value]]) throws {
        let verb = "append to"
        try withTypeAndCount(verb) { fileType, space, count in
            try expect(fileType, classes: [H5T_COMPOUND], as: "a table")
            guard HDF5Dataspace.dimensions(of: space)?.count == 1 else {
                throw failure(verb, kind: .invalidArgument, reason: "a table must be 1-D")
            }
            let layout = try HDF5TableLayout(fileType: fileType) {
                failure(verb, kind: $0 == nil ? nil : .typeMismatch, reason: $0)
            }
            guard !rows.isEmpty else { return }
            let memoryType = try check(layout.makeType(), failure(verb))
            defer { H5Tclose(memoryType) }
            try layout.withPacked(rows, failure: { failure(verb, kind: .typeMismatch, reason: $0) }) { buffer in
                try check(H5Dset_extent(handle.id, [hsize_t(count + rows.count)]), failure(verb))
                do {
                    let fileSpace = try check(H5Dget_space(handle.id), failure(verb))
                    defer { H5Sclose(fileSpace) }
                    try check(H5Sselect_hyperslab(fileSpace, H5S_SELECT_SET, [hsize_t(count)], nil,
                                                  [hsize_t(rows.count)], nil), failure(verb))
                    let memorySpace = try check(HDF5Dataspace.make([rows.count]), failure(verb))
                    defer { H5Sclose(memorySpace) }
                    try check(H5Dwrite(handle.id, memoryType, memorySpace, fileSpace, chdf5_H5P_DEFAULT(), buffer),
                              failure(verb))
                } catch {
                    H5Dset_extent(handle.id, [hsize_t(count)])  // leave no half-written records behind
                    throw error
                }
            }
        }
    }
}
