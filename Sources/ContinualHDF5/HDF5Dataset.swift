import CHDF5

/// A dataset (n-dimensional array, string list or compound table) in an open HDF5 file.
/// Reads convert to the requested Swift type inside HDF5, so a file written as Float can be read as Double.
public struct HDF5Dataset {
    /// The file this dataset belongs to (kept alive by the dataset).
    public let file: HDF5File
    /// Absolute path inside the file.
    public let path: String
    let handle: HDF5Handle

    init(file: HDF5File, handle: HDF5Handle, path: String) {
        self.file = file
        self.handle = handle
        self.path = path
    }

    /// The last path component.
    public var name: String { String(path.split(separator: "/").last ?? "") }

    /// The attributes attached to this dataset.
    public var attributes: HDF5Attributes {
        HDF5Attributes(file: file, handle: handle, owner: object)
    }

    /// The current shape; `[]` for a scalar (rank-0) dataset.
    public var shape: [Int] {
        get throws {
            let space = try check(H5Dget_space(handle.id), failure("inspect"))
            defer { H5Sclose(space) }
            guard let dims = HDF5Dataspace.dimensions(of: space) else { throw failure("inspect") }
            return dims
        }
    }

    /// Reads every element in row-major order, converted by HDF5 to `T` (out-of-range values are clipped).
    public func read<T: HDF5Scalar>(as type: T.Type = T.self) throws -> [T] {
        try withTypeAndCount("read") { fileType, _, count in
            try expect(fileType, classes: [H5T_INTEGER, H5T_FLOAT], as: "\(T.self)")
            try checkReadSize(count: count, fileType: fileType, memoryElementSize: MemoryLayout<T>.stride)
            return try [T](unsafeUninitializedCapacity: count) { buffer, initialized in
                if count > 0 {
                    let status = H5Dread(
                        handle.id, T.nativeType, chdf5_H5S_ALL(), chdf5_H5S_ALL(), chdf5_H5P_DEFAULT(),
                        buffer.baseAddress)
                    try check(status, failure("read"))
                }
                initialized = count
            }
        }
    }

    /// Reads a string dataset (variable- or fixed-length, any shape, flattened in row-major order).
    public func readStrings() throws -> [String] {
        try withTypeAndCount("read") { fileType, space, count in
            try expect(fileType, classes: [H5T_STRING], as: "String")
            try checkReadSize(count: count, fileType: fileType, memoryElementSize: 16)
            return try HDF5Strings.read(fileType: fileType, space: space, count: count, failure: { failure("read") }) {
                memoryType, buffer in
                H5Dread(handle.id, memoryType, chdf5_H5S_ALL(), chdf5_H5S_ALL(), chdf5_H5P_DEFAULT(), buffer)
            }
        }
    }

    /// "dataset 'runs/a/loss'", for messages.
    var object: String { "dataset '\(displayPath(path))'" }

    /// An error for `verb` on this dataset.
    func failure(_ verb: String, kind: HDF5Error.Kind? = nil, reason: String? = nil) -> HDF5Error {
        file.failure(verb, object, kind: kind, reason: reason)
    }

    /// Throws a type-mismatch error unless the file type's class is one of `classes`.
    func expect(_ fileType: hid_t, classes: [H5T_class_t], as requested: String) throws {
        let typeClass = H5Tget_class(fileType)
        guard classes.contains(typeClass) else {
            throw failure("read", kind: .typeMismatch, reason: "it holds \(describe(typeClass: typeClass)), not \(requested)")
        }
    }

    /// Calls `body` with the dataset's file type, dataspace and element count, closing both ids afterwards.
    func withTypeAndCount<R>(_ verb: String, _ body: (hid_t, hid_t, Int) throws -> R) throws -> R {
        let fileType = try check(H5Dget_type(handle.id), failure(verb))
        defer { H5Tclose(fileType) }
        let space = try check(H5Dget_space(handle.id), failure(verb))
        defer { H5Sclose(space) }
        guard let count = HDF5Dataspace.count(of: space) else { throw failure(verb) }
        return try body(fileType, space, count)
    }
}
