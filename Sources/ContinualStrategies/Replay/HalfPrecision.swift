/// IEEE 754 binary16 conversion written out by hand (round to nearest, ties to even).
///
/// Swift's `Float16` is missing on macOS x86_64, and the core must build everywhere, so the
/// buffer uses these bit-level conversions. Finite values beyond ±65504 are clamped to ±65504
/// (never infinity), so a stored feature always decodes to a finite number.
public enum HalfPrecision {
    /// Largest finite half value.
    public static let maxFinite: Float = 65504

    /// Nearest binary16 bit pattern of `value` (clamped to ±65504; NaN stays NaN).
    @inline(__always)
    public static func encode(_ value: Float) -> UInt16 {
        let bits = value.bitPattern
        let sign = UInt16(truncatingIfNeeded: (bits >> 16) & 0x8000)
        let exponent = Int((bits >> 23) & 0xFF)
        let mantissa = bits & 0x7F_FFFF
        if exponent == 0xFF {
            return mantissa == 0 ? sign | 0x7BFF : sign | 0x7E00   // ±inf clamps, NaN stays NaN
        }
        let e = exponent - 127 + 15
        if e >= 0x1F { return sign | 0x7BFF }
        if e <= 0 {
            // Subnormal half (or zero): value = h · 2^-24.
            if e < -10 { return sign }
            let m = mantissa | 0x80_0000
            let shift = UInt32(14 - e)
            var half = m >> shift
            let rest = m & ((1 << shift) - 1)
            let halfway = UInt32(1) << (shift - 1)
            if rest > halfway || (rest == halfway && (half & 1) == 1) { half += 1 }
            return sign | UInt16(truncatingIfNeeded: half)
        }
        var half = (UInt32(e) << 10) | (mantissa >> 13)
        let rest = mantissa & 0x1FFF
        if rest > 0x1000 || (rest == 0x1000 && (half & 1) == 1) { half += 1 }  // may carry into the exponent
        if half >= 0x7C00 { half = 0x7BFF }
        return sign | UInt16(truncatingIfNeeded: half)
    }

    /// The float32 value of a binary16 bit pattern (exact).
    @inline(__always)
    public static func decode(_ half: UInt16) -> Float {
        let sign = UInt32(half & 0x8000) << 16
        let exponent = UInt32((half >> 10) & 0x1F)
        let mantissa = UInt32(half & 0x3FF)
        if exponent == 0 {
            let v = Float(mantissa) * 0x1p-24
            return sign != 0 ? -v : v
        }
        if exponent == 0x1F { return Float(bitPattern: sign | 0x7F80_0000 | (mantissa << 13)) }
        return Float(bitPattern: sign | ((exponent + 112) << 23) | (mantissa << 13))
    }

    /// Error bound of one round trip: |x − decode(encode(x))| ≤ max(|x|·2⁻¹¹, 2⁻²⁵) for |x| ≤ 65504.
    public static func errorBound(_ x: Float) -> Float {
        max(abs(x) * 0x1p-11, 0x1p-25)
    }
}
