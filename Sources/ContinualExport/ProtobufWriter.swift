/// A minimal Protocol Buffers encoder (proto3 wire format) for the few messages the exporters
/// write: varints, length-delimited fields (strings, bytes, nested messages, packed repeated
/// scalars) and little-endian fixed32/fixed64 floats.
///
/// Why hand-written rather than swift-protobuf: the exporters need about twenty fields of ONNX's
/// and Core ML's schemas, write-only (plus a reader for our own warm starts and tests). Generated
/// code for `onnx.proto` and the Core ML format would add thousands of lines and a runtime
/// dependency to every client of this target for that; the wire format itself is small and
/// stable (https://protobuf.dev/programming-guides/encoding/), and each exporter cites the field
/// numbers it writes from the upstream `.proto` files.
public struct ProtobufWriter: Sendable {
    /// Wire types of the encoding.
    public enum WireType: UInt64, Sendable {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, fixed32 = 5
    }

    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []

    /// An empty message.
    public init() {}

    mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func tag(_ field: Int, _ wire: WireType) {
        precondition(field >= 1 && field < (1 << 29), "protobuf field numbers are 1..<2^29")
        appendVarint(UInt64(field) << 3 | wire.rawValue)
    }

    /// An `int32`/`int64`/`uint64`/`enum` field (negative values take ten bytes, as protobuf
    /// specifies for int64).
    public mutating func int(_ field: Int, _ value: Int64) {
        tag(field, .varint)
        appendVarint(UInt64(bitPattern: value))
    }

    /// A `bool` field.
    public mutating func bool(_ field: Int, _ value: Bool) {
        tag(field, .varint)
        appendVarint(value ? 1 : 0)
    }

    /// A `float` field (fixed32, little-endian IEEE 754).
    public mutating func float(_ field: Int, _ value: Float) {
        tag(field, .fixed32)
        appendFixed32(value.bitPattern)
    }

    /// A `double` field (fixed64, little-endian IEEE 754).
    public mutating func double(_ field: Int, _ value: Double) {
        tag(field, .fixed64)
        let b = value.bitPattern
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: b >> (8 * UInt64(i)))) }
    }

    /// A `string` field (UTF-8).
    public mutating func string(_ field: Int, _ value: String) {
        data(field, Array(value.utf8))
    }

    /// A `bytes` field.
    public mutating func data(_ field: Int, _ value: [UInt8]) {
        tag(field, .lengthDelimited)
        appendVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A nested message field, built by `body`.
    public mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        var inner = ProtobufWriter()
        body(&inner)
        data(field, inner.bytes)
    }

    /// A packed `repeated float` field (length-delimited run of fixed32 values).
    public mutating func packedFloats(_ field: Int, _ values: [Float]) {
        tag(field, .lengthDelimited)
        appendVarint(UInt64(values.count * 4))
        bytes.reserveCapacity(bytes.count + values.count * 4)
        for v in values { appendFixed32(v.bitPattern) }
    }

    /// A packed `repeated int64` field (length-delimited run of varints).
    public mutating func packedInts(_ field: Int, _ values: [Int64]) {
        var inner = ProtobufWriter()
        for v in values { inner.appendVarint(UInt64(bitPattern: v)) }
        data(field, inner.bytes)
    }

    mutating func appendFixed32(_ b: UInt32) {
        bytes.append(UInt8(truncatingIfNeeded: b))
        bytes.append(UInt8(truncatingIfNeeded: b >> 8))
        bytes.append(UInt8(truncatingIfNeeded: b >> 16))
        bytes.append(UInt8(truncatingIfNeeded: b >> 24))
    }
}
