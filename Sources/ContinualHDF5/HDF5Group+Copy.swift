import CHDF5

extension HDF5Group {
    /// Copies the object `name` (a group with everything below it, or a dataset) into
    /// `destination` as `newName`, possibly in another file (`H5Ocopy`). Used to merge results
    /// files without decoding them. Dimension scales attached inside a copied group are attached
    /// again in the copy: HDF5 1.10 copies their references verbatim, which breaks them across files.
    public func copy(_ name: String, to destination: HDF5Group, as newName: String? = nil) throws {
        let target = newName ?? name
        let object = "'\(displayPath(joinPath(path, name)))'"
        guard exists(name) else { throw file.failure("copy", object, kind: .notFound, reason: "it does not exist") }
        try refuseIfQuarantined(joinPath(path, name), "copy")
        guard !destination.exists(target) else {
            throw destination.file.failure("copy into", "'\(displayPath(joinPath(destination.path, target)))'",
                                           kind: .alreadyExists, reason: "it already exists")
        }
        try check(H5Ocopy(handle.id, name, destination.handle.id, target, chdf5_H5P_DEFAULT(), chdf5_H5P_DEFAULT()),
                  file.failure("copy", object))
        guard let source = try? openGroup(name) else { return }
        let copied = try destination.openGroup(target)
        // (dataset, dimension, scale) as paths relative to the copied group.
        // Scales are matched by object address, not by name: H5Iget_name may search the whole
        // file for a name and fail on a damaged group elsewhere (then no healthy group could be
        // copied out of a damaged file).
        var attachments: [(String, Int, String)] = []
        let members = try source.datasetPaths()
        var memberAt: [haddr_t: String] = [:]
        for member in members {
            var info = H5O_info_t()
            if H5Oget_info_by_name1(source.handle.id, member, &info, chdf5_H5P_DEFAULT()) >= 0 { memberAt[info.addr] = member }
        }
        for member in members {
            let d = try source.openDataset(member)
            for dim in 0..<(try d.shape.count) where H5DSget_num_scales(d.handle.id, UInt32(dim)) > 0 {
                for address in try d.attachedScaleAddresses(dimension: dim) {
                    guard let scale = memberAt[address] else { continue }  // a scale outside the group: not re-linked
                    attachments.append((member, dim, scale))
                }
            }
        }
        let involved = Set(attachments.map(\.0) + attachments.map(\.2))
        for member in involved {
            let attributes = try copied.openDataset(member).attributes
            for stale in ["DIMENSION_LIST", "REFERENCE_LIST"] where attributes.contains(stale) { try attributes.delete(stale) }
        }
        for (member, dim, scale) in attachments {
            try copied.openDataset(member).attachDimensionScale(try copied.openDataset(scale), toDimension: dim)
        }
    }

    /// Paths (relative to this group) of every dataset below it.
    func datasetPaths() throws -> [String] {
        var out: [String] = []
        for child in try childNames() {
            var info = H5O_info_t()
            guard H5Oget_info_by_name1(handle.id, child, &info, chdf5_H5P_DEFAULT()) >= 0 else { continue }
            if info.type == H5O_TYPE_DATASET { out.append(child) }
            else if info.type == H5O_TYPE_GROUP { out += try openGroup(child).datasetPaths().map { child + "/" + $0 } }
        }
        return out
    }
}

extension HDF5Dataset {
    /// File addresses of the dimension scales attached to `dimension`.
    func attachedScaleAddresses(dimension: Int) throws -> [haddr_t] {
        final class Addresses { var values: [haddr_t] = [] }
        let addresses = Addresses()
        var index: Int32 = 0
        let status = withExtendedLifetime(addresses) {
            H5DSiterate_scales(handle.id, UInt32(dimension), &index, { _, _, scale, data in
                let addresses = Unmanaged<Addresses>.fromOpaque(data!).takeUnretainedValue()
                var info = H5O_info_t()
                guard H5Oget_info1(scale, &info) >= 0 else { return -1 }
                addresses.values.append(info.addr)
                return 0
            }, Unmanaged.passUnretained(addresses).toOpaque())
        }
        try check(status, failure("list the dimension scales of"))
        return addresses.values
    }

    /// Absolute in-file paths of the dimension scales attached to `dimension`.
    public func attachedScalePaths(dimension: Int) throws -> [String] {
        final class Names { var values: [String] = [] }
        let names = Names()
        var index: Int32 = 0
        let status = withExtendedLifetime(names) {
            H5DSiterate_scales(handle.id, UInt32(dimension), &index, { _, _, scale, data in
                let names = Unmanaged<Names>.fromOpaque(data!).takeUnretainedValue()
                let length = H5Iget_name(scale, nil, 0)
                guard length > 0 else { return -1 }
                var buffer = [CChar](repeating: 0, count: length + 1)
                H5Iget_name(scale, &buffer, buffer.count)
                names.values.append(String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self))
                return 0
            }, Unmanaged.passUnretained(names).toOpaque())
        }
        try check(status, failure("list the dimension scales of"))
        return names.values
    }
}
