import CHDF5

/// A group (directory-like container) in an open HDF5 file, addressed by slash-separated paths.
/// Member paths may be nested ("runs/abc/loss"); missing intermediate groups are created on write.
public struct HDF5Group {
    /// The file this group belongs to (kept alive by the group).
    public let file: HDF5File
    /// Absolute path inside the file, "/" for the root group.
    public let path: String
    let handle: HDF5Handle

    init(file: HDF5File, handle: HDF5Handle, path: String) {
        self.file = file
        self.handle = handle
        self.path = path
    }

    /// The last path component ("/" for the root group).
    public var name: String { path == "/" ? "/" : String(path.split(separator: "/").last ?? "") }

    /// The attributes attached to this group.
    public var attributes: HDF5Attributes {
        HDF5Attributes(file: file, handle: handle, owner: "group '\(displayPath(path))'")
    }

    /// Creates a group (and any missing intermediate groups); throws if `name` already exists.
    @discardableResult
    public func createGroup(_ name: String) throws -> HDF5Group {
        let full = joinPath(path, name)
        let object = "group '\(displayPath(full))'"
        guard !name.isEmpty else { throw file.failure("create", object, kind: .invalidArgument, reason: "empty name") }
        guard !exists(name) else { throw file.failure("create", object, kind: .alreadyExists, reason: "it already exists") }
        let links = try HDF5Group.intermediateGroupsList(file.failure("create", object))
        defer { H5Pclose(links) }
        let id = try check(
            H5Gcreate2(handle.id, name, links, chdf5_H5P_DEFAULT(), chdf5_H5P_DEFAULT()),
            file.failure("create", object))
        return HDF5Group(file: file, handle: HDF5Handle(id, release: H5Gclose), path: full)
    }

    /// Opens an existing group; the error names the full path when it is missing.
    public func openGroup(_ path: String) throws -> HDF5Group {
        let (handle, full) = try openObject(path, kind: "group", type: H5I_GROUP)
        return HDF5Group(file: file, handle: handle, path: full)
    }

    /// Opens the group at `path`, creating it (and its parents) if it does not exist yet.
    public func requireGroup(_ path: String) throws -> HDF5Group {
        exists(path) ? try openGroup(path) : try createGroup(path)
    }

    /// Opens an existing dataset; the error names the full path when it is missing.
    public func openDataset(_ path: String) throws -> HDF5Dataset {
        let (handle, full) = try openObject(path, kind: "dataset", type: H5I_DATASET)
        return HDF5Dataset(file: file, handle: handle, path: full)
    }

    /// Whether a link exists at `path`, checked one component at a time (HDF5 requires that).
    public func exists(_ path: String) -> Bool {
        guard handle.isValid else { return false }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += prefix.isEmpty || prefix.hasSuffix("/") ? String(component) : "/" + component
            guard H5Lexists(handle.id, prefix, chdf5_H5P_DEFAULT()) > 0 else { return false }
        }
        return true
    }

    /// Names of the direct members (groups, datasets, links), sorted.
    public func childNames() throws -> [String] {
        let object = "group '\(displayPath(path))'"
        var info = H5G_info_t()
        try check(H5Gget_info(handle.id, &info), file.failure("list", object))
        var names: [String] = []
        names.reserveCapacity(Int(info.nlinks))
        for index in 0..<info.nlinks {
            let length = H5Lget_name_by_idx(
                handle.id, ".", H5_INDEX_NAME, H5_ITER_INC, index, nil, 0, chdf5_H5P_DEFAULT())
            guard length >= 0 else { throw file.failure("list", object) }
            var buffer = [CChar](repeating: 0, count: length + 1)
            let written = H5Lget_name_by_idx(
                handle.id, ".", H5_INDEX_NAME, H5_ITER_INC, index, &buffer, buffer.count, chdf5_H5P_DEFAULT())
            guard written >= 0 else { throw file.failure("list", object) }
            names.append(String(decoding: buffer.prefix(Int(written)).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return names.sorted()
    }

    /// Removes the link `name` (HDF5 does not reclaim the space until the file is repacked).
    public func delete(_ name: String) throws {
        let object = "'\(displayPath(joinPath(path, name)))'"
        guard exists(name) else { throw file.failure("delete", object, kind: .notFound, reason: "it does not exist") }
        try check(H5Ldelete(handle.id, name, chdf5_H5P_DEFAULT()), file.failure("delete", object))
    }

    /// Opens the object at `path` and checks that it has the expected HDF5 identifier type.
    private func openObject(_ path: String, kind: String, type: H5I_type_t) throws -> (HDF5Handle, String) {
        let full = joinPath(self.path, path)
        guard file.isOpen else { throw file.failure("open", "\(kind) '\(displayPath(full))'") }
        guard exists(path) else {
            throw HDF5Error(.notFound, "no \(kind) '\(displayPath(full))' in \(file.path)")
        }
        try refuseIfQuarantined(full, "open")
        // Links HDF5 would follow into trouble, named plainly (its own error is "unknown").
        var link = H5L_info_t()
        if H5Lget_info(handle.id, path, &link, chdf5_H5P_DEFAULT()) >= 0 {
            if link.type == H5L_TYPE_EXTERNAL {
                throw HDF5Error(.invalidArgument, "cannot open \(kind) '\(displayPath(full))' in \(file.path): it is an external link "
                    + "to another file (not followed: results files contain none)")
            }
            if link.type == H5L_TYPE_SOFT, H5Oexists_by_name(handle.id, path, chdf5_H5P_DEFAULT()) <= 0 {
                var target = [CChar](repeating: 0, count: 512)
                _ = H5Lget_val(handle.id, path, &target, target.count - 1, chdf5_H5P_DEFAULT())
                let to = String(decoding: target.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                H5Eclear2(chdf5_H5E_DEFAULT())
                throw HDF5Error(.notFound, "cannot open \(kind) '\(displayPath(full))' in \(file.path): it is a soft link to '\(to)' "
                    + "that leads to no object (a soft-link loop or a dangling link)")
            }
        }
        let id = try check(
            H5Oopen(handle.id, path, chdf5_H5P_DEFAULT()), file.failure("open", "\(kind) '\(displayPath(full))'"))
        let object = HDF5Handle(id, release: H5Oclose)
        let actual = H5Iget_type(id)
        guard actual == type else {
            let found = actual == H5I_GROUP ? "a group" : actual == H5I_DATASET ? "a dataset" : "a named type"
            throw HDF5Error(.typeMismatch, "'\(displayPath(full))' in \(file.path) is \(found), not a \(kind)")
        }
        return (object, full)
    }

    /// Throws for an object in (or below) one the read-check process saw libhdf5 fail on
    /// (`HDF5Quarantine`): reading it again here is where a damaged file crashes libhdf5.
    func refuseIfQuarantined(_ full: String, _ verb: String) throws {
        if file.mode == .readOnly, let observe = HDF5Quarantine.openObserver { observe(file.path, full) }
        guard let group = HDF5Quarantine.cover(full, in: file.quarantined) else { return }
        throw HDF5Error(.library, "cannot \(verb) '\(displayPath(full))' in \(file.path): the HDF5 library failed reading "
            + "'\(displayPath(group))' in a separate process (the file is damaged there), so it is not read in this one")
    }

    /// Link-creation properties that create missing intermediate groups. Caller closes.
    static func intermediateGroupsList(_ error: @autoclosure () -> HDF5Error) throws -> hid_t {
        let list = try check(H5Pcreate(chdf5_H5P_LINK_CREATE()), error())
        guard H5Pset_create_intermediate_group(list, 1) >= 0 else {
            let failure = error()
            H5Pclose(list)
            throw failure
        }
        return list
    }
}
