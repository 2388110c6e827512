/// Fixed-width integers (the bit patterns of `Float`/`Double`) to and from little-endian bytes,
/// independent of the host's byte order, so values cross ranks and machines bit-exactly
/// (NaN payloads, signed zeros and subnormals included).
enum LittleEndianBits {
    /// The values' bytes, least significant first.
    static func encode<T: FixedWidthInteger>(_ values: [T]) -> [UInt8] {
        let width = MemoryLayout<T>.size
        return [UInt8](unsafeUninitializedCapacity: values.count * width) { buffer, count in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            for (i, value) in values.enumerated() {
                raw.storeBytes(of: value.littleEndian, toByteOffset: i * width, as: T.self)
            }
            count = values.count * width
        }
    }

    /// The values of `bytes`; nil when the count is not a multiple of the width.
    static func decode<T: FixedWidthInteger>(_ bytes: [UInt8], as type: T.Type) -> [T]? {
        let width = MemoryLayout<T>.size
        guard bytes.count % width == 0 else { return nil }
        return bytes.withUnsafeBytes { raw in
            (0..<(bytes.count / width)).map { T(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * width, as: T.self)) }
        }
    }
}
