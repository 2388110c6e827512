import CHDF5

/// The kind of values an attribute or dataset stores, so a generic reader (e.g. a content digest)
/// can pick the matching typed read; `other` covers references and variable-length sequences
/// (dimension-scale bookkeeping), whose values are file addresses rather than content.
public enum HDF5ValueClass: Sendable, Equatable {
    case integer, float, string, compound, other

    init(_ type: hid_t) {
        switch H5Tget_class(type) {
        case H5T_INTEGER: self = .integer
        case H5T_FLOAT: self = .float
        case H5T_STRING: self = .string
        case H5T_COMPOUND: self = .compound
        default: self = .other
        }
    }
}

extension HDF5Attributes {
    /// The value class of attribute `name`, nil if there is none.
    public func valueClass(of name: String) throws -> HDF5ValueClass? {
        guard contains(name) else { return nil }
        let attribute = try check(H5Aopen(handle.id, name, chdf5_H5P_DEFAULT()),
                                  file.failure("open", "attribute '\(name)' of \(owner)"))
        defer { H5Aclose(attribute) }
        let type = try check(H5Aget_type(attribute), file.failure("read", "attribute '\(name)' of \(owner)"))
        defer { H5Tclose(type) }
        return HDF5ValueClass(type)
    }
}

extension HDF5Dataset {
    /// The class of the values this dataset stores.
    public var valueClass: HDF5ValueClass {
        get throws {
            let type = try check(H5Dget_type(handle.id), failure("inspect"))
            defer { H5Tclose(type) }
            return HDF5ValueClass(type)
        }
    }
}
