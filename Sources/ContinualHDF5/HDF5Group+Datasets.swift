import CHDF5

extension HDF5Group {
    /// Datasets with fewer elements than this are stored contiguously, never compressed:
    /// chunk indexing costs more than gzip saves on tiny arrays.
    public static let compressionThreshold = 1024

    /// Writes `values` (row-major) as a new dataset of `shape` (`[]` = scalar; zero-length dims allowed).
    /// With `compress`, datasets of at least `compressionThreshold` elements are chunked, shuffled and gzipped (level 4).
    @discardableResult
    public func write<T: HDF5Scalar>(_ values: [T], shape: [Int], name: String, compress: Bool = true) throws
        -> HDF5Dataset
    {
        let object = "dataset '\(displayPath(joinPath(path, name)))'"
        guard shape.allSatisfy({ $0 >= 0 }) else {
            throw file.failure("create", object, kind: .invalidArgument, reason: "negative dimension in shape \(shape)")
        }
        let count = shape.reduce(1, *)
        guard count == values.count else {
            throw file.failure("create", object, kind: .invalidArgument,
                               reason: "shape \(shape) holds \(count) values but \(values.count) were given")
        }
        let chunked = compress && !shape.isEmpty && count >= Self.compressionThreshold
        let chunk = chunked ? Self.chunkShape(shape, elementSize: MemoryLayout<T>.size) : nil
        return try createDataset(name, type: T.nativeType, shape: shape, chunk: chunk, compress: chunked) { id in
            guard count > 0 else { return 0 }
            return values.withUnsafeBytes {
                H5Dwrite(id, T.nativeType, chdf5_H5S_ALL(), chdf5_H5S_ALL(), chdf5_H5P_DEFAULT(), $0.baseAddress)
            }
        }
    }

    /// Writes a scalar (rank-0) dataset.
    @discardableResult
    public func write<T: HDF5Scalar>(_ value: T, name: String) throws -> HDF5Dataset {
        try write([value], shape: [], name: name, compress: false)
    }

    /// Writes a 1-D dataset of variable-length UTF-8 strings. h5py 3 returns `bytes` from `ds[:]`
    /// (use `ds.asstr()[:]` for `str`); xarray/h5netcdf decode them to `str` automatically.
    @discardableResult
    public func write(_ strings: [String], name: String) throws -> HDF5Dataset {
        let object = "dataset '\(displayPath(joinPath(path, name)))'"
        let type = try check(HDF5Strings.variableType(), file.failure("create", object))
        defer { H5Tclose(type) }
        return try HDF5Strings.withCStrings(strings) { pointers in
            try createDataset(name, type: type, shape: [strings.count], chunk: nil, compress: false) { id in
                guard !pointers.isEmpty else { return 0 }
                return pointers.withUnsafeBytes {
                    H5Dwrite(id, type, chdf5_H5S_ALL(), chdf5_H5S_ALL(), chdf5_H5P_DEFAULT(), $0.baseAddress)
                }
            }
        }
    }

    /// Creates dataset `name` and fills it with `fill(datasetID)`; on failure the half-made dataset is unlinked.
    /// A non-nil `chunk` makes it chunked; `unlimitedFirst` lets the first dimension grow later.
    func createDataset(
        _ name: String, type: hid_t, shape: [Int], chunk: [Int]?, compress: Bool, unlimitedFirst: Bool = false,
        fill: (hid_t) -> herr_t
    ) throws -> HDF5Dataset {
        let full = joinPath(path, name)
        let object = "dataset '\(displayPath(full))'"
        guard !name.isEmpty else { throw file.failure("create", object, kind: .invalidArgument, reason: "empty name") }
        guard !exists(name) else {
            throw file.failure("create", object, kind: .alreadyExists, reason: "it already exists")
        }
        let space = try check(HDF5Dataspace.make(shape, unlimitedFirst: unlimitedFirst), file.failure("create", object))
        defer { H5Sclose(space) }
        let creation = try check(H5Pcreate(chdf5_H5P_DATASET_CREATE()), file.failure("create", object))
        defer { H5Pclose(creation) }
        if let chunk {
            try check(H5Pset_chunk(creation, Int32(chunk.count), chunk.map { hsize_t($0) }), file.failure("create", object))
        }
        if compress {
            try check(H5Pset_shuffle(creation), file.failure("create", object))
            try check(H5Pset_deflate(creation, 4), file.failure("create", object))
        }
        let links = try Self.intermediateGroupsList(file.failure("create", object))
        defer { H5Pclose(links) }
        let id = try check(
            H5Dcreate2(handle.id, name, type, space, links, creation, chdf5_H5P_DEFAULT()), file.failure("create", object))
        let dataset = HDF5Dataset(file: file, handle: HDF5Handle(id, release: H5Dclose), path: full)
        guard fill(id) >= 0 else {
            let error = file.failure("write", object)
            dataset.handle.close()
            H5Ldelete(handle.id, name, chdf5_H5P_DEFAULT())
            throw error
        }
        return dataset
    }

    /// Halves the largest dimension until a chunk is at most 1 MiB (HDF5's default chunk cache size).
    static func chunkShape(_ shape: [Int], elementSize: Int) -> [Int] {
        var chunk = shape
        while chunk.reduce(elementSize, *) > 1 << 20, let largest = chunk.indices.max(by: { chunk[$0] < chunk[$1] }) {
            chunk[largest] = (chunk[largest] + 1) / 2
        }
        return chunk
    }
}
