/// How a client's update travels to the server, and what the server receives.
///
/// `encode` returns the update as the server decodes it and the bytes on the wire, so a
/// simulation can charge communication and train on exactly what arrived:
/// - `float32`: 4 bytes per entry, exact.
/// - `float16`: 2 bytes per entry, IEEE 754 binary16 with round-to-nearest-even (subnormals kept,
///   overflow to ±∞ like a hardware conversion; relative error ≤ 2⁻¹¹ in the normal range).
/// - `int8`: symmetric linear quantisation with one `Float` scale per update,
///   s = max|Δ| / 127, q = round(Δ / s) ∈ [−127, 127]; n + 4 bytes; absolute error ≤ s / 2.
/// - `topK(fraction:)`: the k = ⌈fraction · n⌉ entries of largest magnitude (ties: the lower
///   index), sent as (UInt32 index, Float32 value) pairs; the rest arrive as 0. No error feedback
///   (residual accumulation) is applied here: the client keeps nothing of what it did not send.
///
/// Non-finite entries are the caller's to refuse (aggregation does); encodings do not check them.
public enum UpdateEncoding: Sendable, Equatable, Hashable {
    case float32
    case float16
    case int8
    case topK(fraction: Double)

    public var name: String {
        switch self {
        case .float32: return "float32"
        case .float16: return "float16"
        case .int8: return "int8"
        case .topK: return "top_k"
        }
    }

    /// The update as decoded by the server, and its size in bytes.
    public func encode(_ delta: [Float]) -> (decoded: [Float], bytes: Int) {
        let n = delta.count
        switch self {
        case .float32:
            return (delta, 4 * n)
        case .float16:
            return (delta.map { Half.decode(Half.encode($0)) }, 2 * n)
        case .int8:
            let maxAbs = delta.reduce(Float(0)) { max($0, abs($1)) }
            guard maxAbs > 0 else { return ([Float](repeating: 0, count: n), n + 4) }
            let scale = maxAbs / 127
            let decoded = delta.map { v -> Float in
                let q = min(127, max(-127, (v / scale).rounded(.toNearestOrEven)))
                return q * scale
            }
            return (decoded, n + 4)
        case .topK(let fraction):
            precondition(fraction > 0 && fraction <= 1, "top-k fraction must be in (0, 1], got \(fraction)")
            guard n > 0 else { return ([], 0) }
            let k = min(n, max(1, Int((fraction * Double(n)).rounded(.up))))
            let order = delta.indices.sorted { (abs(delta[$0]), -$0) > (abs(delta[$1]), -$1) }
            var decoded = [Float](repeating: 0, count: n)
            for i in order.prefix(k) { decoded[i] = delta[i] }
            return (decoded, 8 * k)
        }
    }
}

/// IEEE 754 binary16 conversion written out in integer arithmetic, so it is the same on every
/// platform (Swift's `Float16` is unavailable on Intel Macs).
public enum Half {
    /// The binary16 bit pattern nearest to `value` (ties to even).
    public static func encode(_ value: Float) -> UInt16 {
        let x = value.bitPattern
        let sign = UInt16((x >> 16) & 0x8000)
        let exponent = Int((x >> 23) & 0xff)
        var mantissa = x & 0x7f_ffff
        if exponent == 0xff { return sign | 0x7c00 | (mantissa != 0 ? 0x200 : 0) }   // ±∞, NaN
        let e = exponent - 127 + 15
        if e >= 0x1f { return sign | 0x7c00 }                                          // overflow
        if e <= 0 {                                                                     // subnormal
            if e < -10 { return sign }
            mantissa |= 0x80_0000
            let shift = UInt32(14 - e)
            var half = mantissa >> shift
            let rest = mantissa & ((1 << shift) - 1), halfway = UInt32(1) << (shift - 1)
            if rest > halfway || (rest == halfway && half & 1 == 1) { half += 1 }
            return sign | UInt16(half)
        }
        var half = UInt32(e) << 10 | (mantissa >> 13)
        let rest = mantissa & 0x1fff
        if rest > 0x1000 || (rest == 0x1000 && half & 1 == 1) { half += 1 }   // a carry rounds up to ∞ correctly
        return sign | UInt16(half)
    }

    /// The `Float` value of a binary16 bit pattern (exact).
    public static func decode(_ bits: UInt16) -> Float {
        let sign = UInt32(bits & 0x8000) << 16
        let exponent = Int((bits >> 10) & 0x1f), mantissa = UInt32(bits & 0x3ff)
        if exponent == 0 {
            let magnitude = Float(mantissa) * 0x1p-24
            return sign != 0 ? -magnitude : magnitude
        }
        if exponent == 0x1f { return Float(bitPattern: sign | 0x7f80_0000 | (mantissa << 13)) }
        return Float(bitPattern: sign | UInt32(exponent - 15 + 127) << 23 | (mantissa << 13))
    }
}
