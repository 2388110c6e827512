import CHDF5
import Foundation

/// Conversions between Swift strings and HDF5 string types (variable-length and fixed-length).
/// Variable-length UTF-8 is what we write, because h5py then returns `str` rather than `bytes`.
enum HDF5Strings {
    /// A new variable-length string type with the given character set; caller closes it. Negative on failure.
    static func variableType(cset: H5T_cset_t = H5T_CSET_UTF8) -> hid_t {
        let type = H5Tcopy(chdf5_H5T_C_S1())
        guard type >= 0 else { return type }
        guard H5Tset_size(type, chdf5_H5T_VARIABLE()) >= 0, H5Tset_cset(type, cset) >= 0 else {
            H5Tclose(type)
            return -1
        }
        return type
    }

    /// Calls `body` with `malloc`ed C copies of `strings`, freed afterwards.
    /// A string containing NUL is cut there, as in any C string.
    static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) throws -> R) rethrows -> R {
        let pointers = strings.map { strdup($0) }
        defer { pointers.forEach { free($0) } }
        return try body(pointers)
    }

    /// Decodes one fixed-length string element: up to the first NUL, trailing spaces dropped if space-padded.
    static func decodeFixed(_ bytes: UnsafeRawBufferPointer, spacePadded: Bool) -> String {
        var end = bytes.firstIndex(of: 0) ?? bytes.count
        if spacePadded { while end > 0, bytes[end - 1] == 0x20 { end -= 1 } }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<end]), as: UTF8.self)
    }

    /// Reads `count` strings of file type `fileType` through `reader(memoryType, buffer)`
    /// (an `H5Dread` or `H5Aread` call), reclaiming HDF5's variable-length memory afterwards.
    static func read(
        fileType: hid_t, space: hid_t, count: Int, failure: () -> HDF5Error,
        reader: (hid_t, UnsafeMutableRawPointer) -> herr_t
    ) throws -> [String] {
        guard count > 0 else { return [] }
        if H5Tis_variable_str(fileType) > 0 {
            let memoryType = try check(variableType(cset: H5Tget_cset(fileType)), failure())
            defer { H5Tclose(memoryType) }
            var pointers = [UnsafeMutablePointer<CChar>?](repeating: nil, count: count)
            return try pointers.withUnsafeMutableBufferPointer { typed in
                let buffer = UnsafeMutableRawPointer(typed.baseAddress!)
                defer { H5Dvlen_reclaim(memoryType, space, chdf5_H5P_DEFAULT(), buffer) }
                try check(reader(memoryType, buffer), failure())
                return typed.map { $0.map { String(cString: $0) } ?? "" }
            }
        }
        let memoryType = try check(H5Tcopy(fileType), failure())
        defer { H5Tclose(memoryType) }
        let size = H5Tget_size(memoryType)
        let spacePadded = H5Tget_strpad(memoryType) == H5T_STR_SPACEPAD
        var bytes = [UInt8](repeating: 0, count: size * count)
        return try bytes.withUnsafeMutableBytes { buffer in
            try check(reader(memoryType, buffer.baseAddress!), failure())
            return (0..<count).map { index in
                decodeFixed(UnsafeRawBufferPointer(rebasing: buffer[(index * size)..<((index + 1) * size)]), spacePadded: spacePadded)
            }
        }
    }
}
