import CHDF5

/// The attributes (small named metadata values) of one group or dataset.
/// Setting an existing name replaces it; getters return nil when absent and throw on a type mismatch.
public struct HDF5Attributes {
    let file: HDF5File
    let handle: HDF5Handle
    /// The owning object for messages, e.g. "group 'runs/abc'".
    let owner: String

    /// Sets a variable-length UTF-8 string (h5py returns it as `str`).
    public func set(_ name: String, _ value: String) throws {
        try set(name, [value], shape: nil)
    }

    /// Sets a 1-D array of variable-length UTF-8 strings.
    public func set(_ name: String, _ values: [String]) throws {
        try set(name, values, shape: [values.count])
    }

    /// Sets a scalar number stored with `T`'s native HDF5 type (e.g. `Double`, `Int64`).
    public func set<T: HDF5Scalar>(_ name: String, _ value: T) throws {
        try set(name, [value], shape: nil)
    }

    /// Sets a 1-D array of numbers (empty arrays allowed).
    public func set<T: HDF5Scalar>(_ name: String, _ values: [T]) throws {
        try set(name, values, shape: [values.count])
    }

    /// The string attribute `name`, or nil if there is none.
    public func string(_ name: String) throws -> String? {
        try strings(name, expectingOne: true)?.first
    }

    /// The string-array attribute `name` (any shape, flattened), or nil if there is none.
    public func strings(_ name: String) throws -> [String]? {
        try strings(name, expectingOne: false)
    }

    /// The scalar numeric attribute `name` converted by HDF5 to `T`, or nil if there is none.
    public func scalar<T: HDF5Scalar>(_ name: String, as type: T.Type = T.self) throws -> T? {
        try numbers(name, as: T.self, expectingOne: true)?.first
    }

    /// The numeric array attribute `name` (any shape, flattened) converted to `T`, or nil if there is none.
    public func array<T: HDF5Scalar>(_ name: String, as type: T.Type = T.self) throws -> [T]? {
        try numbers(name, as: T.self, expectingOne: false)
    }

    /// Whether an attribute called `name` exists.
    public func contains(_ name: String) -> Bool {
        handle.isValid && H5Aexists(handle.id, name) > 0
    }

    /// Removes attribute `name`; throws if it does not exist.
    public func delete(_ name: String) throws {
        guard contains(name) else {
            throw file.failure("delete", object(name), kind: .notFound, reason: "it does not exist")
        }
        try check(H5Adelete(handle.id, name), file.failure("delete", object(name)))
    }

    /// The attribute names, sorted.
    public func names() throws -> [String] {
        var names: [String] = []
        let status = withUnsafeMutablePointer(to: &names) { pointer in
            H5Aiterate2(handle.id, H5_INDEX_NAME, H5_ITER_INC, nil, { _, name, _, context in
                if let name { context?.assumingMemoryBound(to: [String].self).pointee.append(String(cString: name)) }
                return 0
            }, pointer)
        }
        try check(status, file.failure("list attributes of", owner))
        return names.sorted()
    }

    private func object(_ name: String) -> String { "attribute '\(name)' of \(owner)" }

    private func set<T: HDF5Scalar>(_ name: String, _ values: [T], shape: [Int]?) throws {
        try write(name, type: T.nativeType, shape: shape) { attribute in
            values.withUnsafeBytes { H5Awrite(attribute, T.nativeType, $0.baseAddress) }
        }
    }

    private func set(_ name: String, _ values: [String], shape: [Int]?) throws {
        let type = try check(HDF5Strings.variableType(), file.failure("write", object(name)))
        defer { H5Tclose(type) }
        try HDF5Strings.withCStrings(values) { pointers in
            try write(name, type: type, shape: shape) { attribute in
                pointers.withUnsafeBytes { H5Awrite(attribute, type, $0.baseAddress) }
            }
        }
    }

    /// Replaces attribute `name` with a new one of `type` and `shape` (nil: scalar), filled by `body`.
    private func write(_ name: String, type: hid_t, shape: [Int]?, body: (hid_t) -> herr_t) throws {
        let object = object(name)
        if contains(name) { try check(H5Adelete(handle.id, name), file.failure("replace", object)) }
        let space = try check(HDF5Dataspace.make(shape), file.failure("write", object))
        defer { H5Sclose(space) }
        let attribute = try check(
            H5Acreate2(handle.id, name, type, space, chdf5_H5P_DEFAULT(), chdf5_H5P_DEFAULT()),
            file.failure("create", object))
        defer { H5Aclose(attribute) }
        try check(body(attribute), file.failure("write", object))
    }

    /// Opens attribute `name` (nil if absent) and passes its id, file type, space and element count to `body`.
    private func read<R>(_ name: String, body: (hid_t, hid_t, hid_t, Int) throws -> R) throws -> R? {
        let object = object(name)
        let found = H5Aexists(handle.id, name)
        try check(found, file.failure("read", object))
        guard found > 0 else { return nil }
        let attribute = try check(H5Aopen(handle.id, name, chdf5_H5P_DEFAULT()), file.failure("open", object))
        defer { H5Aclose(attribute) }
        let type = try check(H5Aget_type(attribute), file.failure("read", object))
        defer { H5Tclose(type) }
        let space = try check(H5Aget_space(attribute), file.failure("read", object))
        defer { H5Sclose(space) }
        guard let count = HDF5Dataspace.count(of: space) else { throw file.failure("read", object) }
        if let reason = HDF5ReadLimits.bytes(count: count, elementSize: max(H5Tget_size(type), 16)).reason {
            throw file.failure("read", object, kind: .invalidArgument, reason: reason)
        }
        return try body(attribute, type, space, count)
    }

    /// Checks the class and (optionally) that there is exactly one element, naming the mismatch.
    private func expect(_ name: String, as requested: String, type: hid_t, classes: [H5T_class_t], count: Int, one: Bool)
        throws
    {
        let typeClass = H5Tget_class(type)
        guard classes.contains(typeClass) else {
            throw file.failure("read", object(name), kind: .typeMismatch,
                               reason: "it holds \(describe(typeClass: typeClass)), not \(requested)")
        }
        guard !one || count == 1 else {
            throw file.failure("read", object(name), kind: .typeMismatch,
                               reason: "it holds \(count) values, not a single \(requested)")
        }
    }

    private func strings(_ name: String, expectingOne one: Bool) throws -> [String]? {
        try read(name) { attribute, type, space, count in
            try expect(name, as: "String", type: type, classes: [H5T_STRING], count: count, one: one)
            return try HDF5Strings.read(
                fileType: type, space: space, count: count, failure: { file.failure("read", object(name)) }
            ) { memoryType, buffer in H5Aread(attribute, memoryType, buffer) }
        }
    }

    private func numbers<T: HDF5Scalar>(_ name: String, as: T.Type, expectingOne one: Bool) throws -> [T]? {
        try read(name) { attribute, type, _, count in
            try expect(name, as: "\(T.self)", type: type, classes: [H5T_INTEGER, H5T_FLOAT], count: count, one: one)
            return try [T](unsafeUninitializedCapacity: count) { buffer, initialized in
                if count > 0 {
                    try check(H5Aread(attribute, T.nativeType, buffer.baseAddress), file.failure("read", object(name)))
                }
                initialized = count
            }
        }
    }

    /// Reads attribute `name` whatever its type — references, variable-length data, compounds —
    /// into the type's native memory form and discards it (variable-length memory reclaimed).
    /// For the isolated reader (`RunDigest.readAll`): copying an object (`H5Ocopy`, as `merge` and
    /// `repair` do) converts every attribute this way, and a damaged global-heap entry behind a
    /// `DIMENSION_LIST` crashed libhdf5 there while the typed readers never touched it.
    public func readThrough(_ name: String) throws {
        _ = try read(name) { attribute, type, space, count in
            let memoryType = try check(H5Tget_native_type(type, H5T_DIR_ASCEND), file.failure("read", object(name)))
            defer { H5Tclose(memoryType) }
            let size = H5Tget_size(memoryType)
            guard count > 0, size > 0 else { return () }
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: count * size, alignment: 16)
            defer { buffer.deallocate() }
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: count * size)
            try check(H5Aread(attribute, memoryType, buffer), file.failure("read", object(name)))
            if H5Tdetect_class(memoryType, H5T_VLEN) > 0 || H5Tis_variable_str(memoryType) > 0 {
                H5Dvlen_reclaim(memoryType, space, chdf5_H5P_DEFAULT(), buffer)
            }
        }
    }
}

