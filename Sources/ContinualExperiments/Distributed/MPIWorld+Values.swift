/// Floating-point values through the byte transport, bit-exactly: each value travels as its IEEE
/// bit pattern in little-endian order, so what a rank receives is the sender's value to the bit
/// (NaN payloads and −0 included), whatever the hosts' byte order.
extension MPIWorld {
    /// Every rank's `Float` values, on every rank (element `r` from rank `r`; lengths may differ).
    ///
    /// - Throws: ``MPIError/malformedValues(rank:byteCount:width:)`` if a rank sent another type.
    public func allGather(floats values: [Float]) throws -> [[Float]] {
        try decode(allGather(LittleEndianBits.encode(values)), as: Float.self)
    }

    /// Every rank's `Double` values, on every rank (element `r` from rank `r`; lengths may differ).
    ///
    /// - Throws: ``MPIError/malformedValues(rank:byteCount:width:)`` if a rank sent another type.
    public func allGather(doubles values: [Double]) throws -> [[Double]] {
        try decode(allGather(LittleEndianBits.encode(values)), as: Double.self)
    }

    /// Rank `root`'s `Float` values, on every rank; other ranks' `values` are ignored.
    public func broadcast(floats values: [Float], from root: Int) throws -> [Float] {
        try decode([broadcast(LittleEndianBits.encode(values), from: root)], as: Float.self, firstRank: root)[0]
    }

    /// Rank `root`'s `Double` values, on every rank; other ranks' `values` are ignored.
    public func broadcast(doubles values: [Double], from root: Int) throws -> [Double] {
        try decode([broadcast(LittleEndianBits.encode(values), from: root)], as: Double.self, firstRank: root)[0]
    }

    /// Decodes each rank's bytes (the first from rank `firstRank`, the next from the one after).
    private func decode<T: BitwiseCopyable>(_ parts: [[UInt8]], as type: T.Type, firstRank: Int = 0) throws -> [[T]] {
        try parts.enumerated().map { offset, bytes in
            guard let values = LittleEndianBits.decode(bytes, as: type) else {
                throw MPIError.malformedValues(rank: firstRank + offset, byteCount: bytes.count, width: MemoryLayout<T>.size)
            }
            return values
        }
    }
}
