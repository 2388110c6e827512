/// A minimal Protocol Buffers decoder: splits a message into its fields, without a schema.
/// Used to read ONNX models back (warm starts) and by the tests; malformed input throws
/// `ProtobufReader.Failure`, never traps.
public struct ProtobufReader: Sendable {
    /// A decoding error: where and what.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What is wrong, and where.
        public var description: String
    }

    /// One field of a message.
    public struct Field: Sendable {
        /// The field number.
        public var number: Int
        /// How the value is encoded.
        public var wireType: ProtobufWriter.WireType
        /// The value of varint, fixed32 and fixed64 fields (raw bits for the fixed types).
        public var scalar: UInt64
        /// The payload of a length-delimited field (string, bytes, message, packed values).
        public var payload: ArraySlice<UInt8>

        /// The field's payload as UTF-8 text.
        public var string: String { String(decoding: payload, as: UTF8.self) }
        /// A fixed32 field as a float.
        public var float: Float { Float(bitPattern: UInt32(truncatingIfNeeded: scalar)) }
        /// A varint field as a signed 64-bit integer.
        public var int: Int64 { Int64(bitPattern: scalar) }
        /// The payload decoded as a nested message.
        public func message() throws -> [Field] { try ProtobufReader.fields(of: payload) }

        /// A packed repeated float (or a single fixed32 field, unpacked) as floats.
        public func floats() throws -> [Float] {
            if wireType == .fixed32 { return [float] }
            guard wireType == .lengthDelimited, payload.count % 4 == 0 else {
                throw Failure(description: "field \(number): not a packed float array")
            }
            return ProtobufReader.littleEndianFloats(payload)
        }

        /// A packed repeated varint (or a single varint field) as integers.
        public func ints() throws -> [Int64] {
            if wireType == .varint { return [int] }
            guard wireType == .lengthDelimited else { throw Failure(description: "field \(number): not a packed integer array") }
            var out: [Int64] = []
            var i = payload.startIndex
            while i < payload.endIndex { out.append(Int64(bitPattern: try ProtobufReader.varint(payload, &i))) }
            return out
        }
    }

    /// The little-endian float32 values in `bytes` (a whole number of 4-byte words): packed
    /// `float` fields and ONNX `raw_data`.
    static func littleEndianFloats(_ bytes: ArraySlice<UInt8>) -> [Float] {
        var out: [Float] = []
        out.reserveCapacity(bytes.count / 4)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            var b: UInt32 = 0
            for k in 0..<4 { b |= UInt32(bytes[i + k]) << (8 * UInt32(k)) }
            out.append(Float(bitPattern: b))
            i += 4
        }
        return out
    }

    static func varint(_ b: ArraySlice<UInt8>, _ i: inout Int) throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard i < b.endIndex else { throw Failure(description: "truncated varint at byte \(i)") }
            guard shift < 64 else { throw Failure(description: "varint longer than 10 bytes at byte \(i)") }
            let byte = b[i]
            i += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// The fields of one message, in order.
    public static func fields(of bytes: ArraySlice<UInt8>) throws -> [Field] {
        var fields: [Field] = []
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let key = try varint(bytes, &i)
            let number = Int(truncatingIfNeeded: key >> 3)
            guard number >= 1 else { throw Failure(description: "field number 0 at byte \(i)") }
            guard let wire = ProtobufWriter.WireType(rawValue: key & 7) else {
                throw Failure(description: "field \(number): unsupported wire type \(key & 7)")
            }
            switch wire {
            case .varint:
                fields.append(Field(number: number, wireType: wire, scalar: try varint(bytes, &i), payload: []))
            case .fixed32, .fixed64:
                let n = wire == .fixed32 ? 4 : 8
                guard bytes.endIndex - i >= n else { throw Failure(description: "field \(number): truncated fixed\(n * 8)") }
                var v: UInt64 = 0
                for k in 0..<n { v |= UInt64(bytes[i + k]) << (8 * UInt64(k)) }
                i += n
                fields.append(Field(number: number, wireType: wire, scalar: v, payload: []))
            case .lengthDelimited:
                let length = try varint(bytes, &i)
                guard length <= UInt64(bytes.endIndex - i) else {
                    throw Failure(description: "field \(number): length \(length) runs past the end of the message")
                }
                let end = i + Int(length)
                fields.append(Field(number: number, wireType: wire, scalar: 0, payload: bytes[i..<end]))
                i = end
            }
        }
        return fields
    }

    /// The fields of one message held in `bytes`.
    public static func fields(of bytes: [UInt8]) throws -> [Field] { try fields(of: bytes[...]) }
}
