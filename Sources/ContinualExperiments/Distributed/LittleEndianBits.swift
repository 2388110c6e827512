/// Plain values (`Float`, `Double`, fixed-width integers) to and from their little-endian bytes,
/// whatever the host's byte order, so values cross ranks and machines bit-exactly (NaN payloads,
/// signed zeros and subnormals included: nothing is converted, only bytes are copied).
///
/// On little-endian hosts both directions are one memory copy; big-endian hosts also reverse
/// each value's bytes.
enum LittleEndianBits {
    /// The values' bytes, least significant byte of each value first.
    static func encode<T: BitwiseCopyable>(_ values: [T]) -> [UInt8] {
        var bytes = values.withUnsafeBytes(copy)
        reverseEachValueOnBigEndian(&bytes, width: MemoryLayout<T>.stride)
        return bytes
    }

    /// The values of `bytes`; nil when the count is not a multiple of the value's size.
    static func decode<T: BitwiseCopyable>(_ bytes: [UInt8], as type: T.Type) -> [T]? {
        let width = MemoryLayout<T>.stride
        guard MemoryLayout<T>.size == width, bytes.count % width == 0 else { return nil }
        var ordered = bytes
        reverseEachValueOnBigEndian(&ordered, width: width)
        return [T](unsafeUninitializedCapacity: bytes.count / width) { buffer, count in
            ordered.withUnsafeBytes { UnsafeMutableRawBufferPointer(buffer).copyMemory(from: $0) }
            count = bytes.count / width
        }
    }

    /// A copy of `source` (one `memcpy`, also in debug builds, where the generic
    /// `Array(sequence)` copies byte by byte).
    static func copy(_ source: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: source.count) { buffer, count in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(from: source)
            count = source.count
        }
    }

    private static func reverseEachValueOnBigEndian(_ bytes: inout [UInt8], width: Int) {
        #if _endian(big)
        for start in stride(from: 0, to: bytes.count, by: width) {
            bytes[start..<(start + width)].reverse()
        }
        #endif
    }
}
