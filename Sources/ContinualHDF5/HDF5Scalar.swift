import CHDF5

/// A fixed-size number HDF5 can store natively; reads convert between kinds inside HDF5.
/// Conformances: `Double`, `Float`, `Int8`…`Int64`, `UInt8`…`UInt64` and `Int` (stored as 64-bit).
public protocol HDF5Scalar: BitwiseCopyable, Sendable {
    /// The HDF5 native type this Swift type is stored and read as.
    static var hdf5Kind: HDF5ScalarKind { get }
}

/// The native HDF5 number types a `HDF5Scalar` can map to.
/// Kept as a Swift enum so the public API never exposes the C library's `hid_t`.
public enum HDF5ScalarKind: Sendable, Equatable {
    case int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64

    /// The predefined HDF5 native type (owned by the library: never close it).
    var nativeType: hid_t {
        switch self {
        case .int8: chdf5_H5T_NATIVE_INT8()
        case .uint8: chdf5_H5T_NATIVE_UINT8()
        case .int16: chdf5_H5T_NATIVE_INT16()
        case .uint16: chdf5_H5T_NATIVE_UINT16()
        case .int32: chdf5_H5T_NATIVE_INT32()
        case .uint32: chdf5_H5T_NATIVE_UINT32()
        case .int64: chdf5_H5T_NATIVE_INT64()
        case .uint64: chdf5_H5T_NATIVE_UINT64()
        case .float32: chdf5_H5T_NATIVE_FLOAT()
        case .float64: chdf5_H5T_NATIVE_DOUBLE()
        }
    }
}

extension HDF5Scalar {
    /// The native type id, after checking the conformance's memory size matches it.
    static var nativeType: hid_t {
        let type = hdf5Kind.nativeType
        precondition(H5Tget_size(type) == MemoryLayout<Self>.size, "\(Self.self) does not match \(hdf5Kind)")
        return type
    }
}

extension Double: HDF5Scalar { public static var hdf5Kind: HDF5ScalarKind { .float64 } }
extension Float: HDF5Scalar { public static var hdf5Kind: HDF5ScalarKind { .float32 } }
extension Int8: HDF5Scalar { public static var hdf5Kind: HDF5ScalarKind { .int8 } }
extension UInt8: HDF5Scalar { public static var hdf5Kind: HDF5ScalarKind { .uint8 } }
extension Int16: HDF5Scalar { public static var hdf5Kind: HDF5ScalarKind { .int16 } }
extension UInt16: HDF5Scalar { public static var hdf5Kind: HDF5ScalarKind { .uint16 } }
extension Int32: HDF5Scalar { public static var hdf5Kind: HDF5ScalarKind { .int32 } }
extension UInt32: HDF5Scalar { public static var hdf5Kind: HDF5ScalarKind { .uint32 } }
extension Int64: HDF5Scalar { public static var hdf5Kind: HDF5ScalarKind { .int64 } }
extension UInt64: HDF5Scalar { public static var hdf5Kind: HDF5ScalarKind { .uint64 } }
extension Int: HDF5Scalar {
    public static var hdf5Kind: HDF5ScalarKind { MemoryLayout<Int>.size == 8 ? .int64 : .int32 }
}
