import CHDF5

extension HDF5Dataset {
    /// Labels every dimension (HDF5 dimension-scale labels, e.g. `["task_trained", "task_evaluated"]`).
    /// Labels are metadata only; xarray/h5netcdf name dimensions after *attached scales*, not labels.
    public func setDimensionLabels(_ labels: [String]) throws {
        let rank = try shape.count
        guard labels.count == rank else {
            throw failure("label", kind: .invalidArgument, reason: "\(labels.count) labels for \(rank) dimensions")
        }
        for (index, label) in labels.enumerated() {
            try check(H5DSset_label(handle.id, UInt32(index), label), failure("label"))
        }
    }

    /// The label of each dimension, nil where none is set.
    public func dimensionLabels() throws -> [String?] {
        try (0..<shape.count).map { index -> String? in
            let length = H5DSget_label(handle.id, UInt32(index), nil, 0)
            guard length >= 0 else { throw failure("read labels of") }
            guard length > 0 else { return nil }
            var buffer = [CChar](repeating: 0, count: length + 1)
            guard H5DSget_label(handle.id, UInt32(index), &buffer, buffer.count) >= 0 else {
                throw failure("read labels of")
            }
            return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Whether this dataset is a dimension scale (a coordinate axis other datasets can attach).
    public var isDimensionScale: Bool { handle.isValid && H5DSis_scale(handle.id) > 0 }

    /// Turns this 1-D dataset into a dimension scale (`CLASS="DIMENSION_SCALE"`, `NAME` = `name` or the
    /// dataset's own name). h5netcdf/xarray then treat it as a coordinate whose dimension is named after the dataset.
    public func makeDimensionScale(name: String? = nil) throws {
        let rank = try shape.count
        guard rank == 1 else {
            throw failure("make a dimension scale of", kind: .invalidArgument, reason: "it has rank \(rank), not 1")
        }
        try check(H5DSset_scale(handle.id, name ?? self.name), failure("make a dimension scale of"))
    }

    /// Attaches `scale` (made a scale first if needed) to `dimension` of this dataset;
    /// the scale's length must equal that dimension's length.
    public func attachDimensionScale(_ scale: HDF5Dataset, toDimension dimension: Int) throws {
        let verb = "attach \(scale.object) to"
        let dims = try shape
        guard dims.indices.contains(dimension) else {
            throw failure(verb, kind: .invalidArgument, reason: "no dimension \(dimension) in shape \(dims)")
        }
        let scaleShape = try scale.shape
        guard scaleShape == [dims[dimension]] else {
            throw failure(verb, kind: .invalidArgument,
                          reason: "scale shape \(scaleShape) does not match dimension \(dimension) of length \(dims[dimension])")
        }
        if !scale.isDimensionScale { try scale.makeDimensionScale() }
        try check(H5DSattach_scale(handle.id, scale.handle.id, UInt32(dimension)), failure(verb))
    }
}
