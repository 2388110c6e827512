import CHDF5

/// Helpers for HDF5 dataspaces (the shape part of a dataset or attribute).
/// Every `make` result is a new identifier the caller must close with `H5Sclose`.
enum HDF5Dataspace {
    /// A scalar space for `nil`, otherwise a simple space (zero-length dimensions allowed).
    /// With `unlimitedFirst`, the first dimension may later grow with `H5Dset_extent`.
    static func make(_ shape: [Int]?, unlimitedFirst: Bool = false) -> hid_t {
        guard let shape else { return H5Screate(H5S_SCALAR) }
        let dims = shape.map { hsize_t($0) }
        var maxDims = dims
        if unlimitedFirst, !maxDims.isEmpty { maxDims[0] = chdf5_H5S_UNLIMITED() }
        return H5Screate_simple(Int32(dims.count), dims, maxDims)
    }

    /// The current dimensions ([] for a scalar space), or nil if HDF5 fails.
    static func dimensions(of space: hid_t) -> [Int]? {
        let rank = H5Sget_simple_extent_ndims(space)
        guard rank >= 0 else { return nil }
        var dims = [hsize_t](repeating: 0, count: Int(rank))
        guard rank == 0 || H5Sget_simple_extent_dims(space, &dims, nil) >= 0 else { return nil }
        return dims.map { Int($0) }
    }

    /// Number of elements in the space (1 for scalar, 0 for null or zero-length spaces), or nil on failure.
    static func count(of space: hid_t) -> Int? {
        let points = H5Sget_simple_extent_npoints(space)
        return points >= 0 ? Int(points) : nil
    }
}

/// Describes an HDF5 type class for error messages ("it holds strings").
func describe(typeClass: H5T_class_t) -> String {
    switch typeClass {
    case H5T_INTEGER: "integers"
    case H5T_FLOAT: "floating-point numbers"
    case H5T_STRING: "strings"
    case H5T_COMPOUND: "compound (table) records"
    case H5T_ENUM: "enumerated values (e.g. h5py booleans)"
    default: "values of an unsupported type"
    }
}
