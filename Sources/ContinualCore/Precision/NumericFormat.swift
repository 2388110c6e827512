/// A floating-point storage format that training can emulate on top of float32 arithmetic:
/// `round(_:)` maps a float32 value to the nearest value of the format (round to nearest, ties
/// to even), returned as the float32 that holds it exactly.
///
/// - `float32`: the identity (the toolkit's own arithmetic).
/// - `bfloat16` (Google Brain float): 8 exponent bits like float32, 7 stored mantissa bits.
///   Float32 values round to 8 significant bits; the range is float32's (largest finite
///   (2 − 2⁻⁷)·2¹²⁷; values from (2 − 2⁻⁸)·2¹²⁷ up round to ∞), subnormals down to 2⁻¹³³.
/// - `float16` (IEEE 754 binary16): 5 exponent bits, 10 stored mantissa bits. Largest finite
///   65504; values of magnitude ≥ 65520 (the midpoint to 2¹⁶) round to ∞; normal down to
///   2⁻¹⁴, subnormal steps of 2⁻²⁴ below that (smaller than 2⁻²⁵ in magnitude → ±0; exactly
///   2⁻²⁵ is a tie and goes to the even 0).
///
/// NaN stays NaN (quiet), ±∞ stays ±∞, the sign of zero is kept.
public enum NumericFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case float32, bfloat16, float16

    /// Bytes of one stored value.
    public var bytes: Int { self == .float32 ? 4 : 2 }

    /// `x` rounded to the format (see the type's description).
    @inline(__always)
    public func round(_ x: Float) -> Float {
        switch self {
        case .float32: return x
        case .bfloat16: return NumericFormat.bfloat16Round(x)
        case .float16: return NumericFormat.float16Round(x)
        }
    }

    /// Rounds `count` values in place (nothing for `float32`).
    public func round(_ p: UnsafeMutablePointer<Float>, count: Int) {
        switch self {
        case .float32: return
        case .bfloat16: for i in 0..<count { p[i] = NumericFormat.bfloat16Round(p[i]) }
        case .float16: for i in 0..<count { p[i] = NumericFormat.float16Round(p[i]) }
        }
    }

    /// Round to nearest even on the bit pattern: add 0x7FFF plus the lowest kept bit, clear the
    /// 16 low bits. A carry out of the mantissa moves to the next binade (and from the largest
    /// finite binade to the ∞ pattern, 0x7F80_0000), which is exactly IEEE rounding.
    @inline(__always)
    static func bfloat16Round(_ x: Float) -> Float {
        let bits = x.bitPattern
        if x.isNaN { return Float(bitPattern: (bits | 0x0040_0000) & 0xFFFF_0000) }
        let lsb = (bits >> 16) & 1
        return Float(bitPattern: (bits &+ 0x7FFF &+ lsb) & 0xFFFF_0000)
    }

    /// Binary16 rounding by exact scaling: within a binade of exponent e (clamped below at −14,
    /// where the subnormals start) the format's spacing is 2^(e−10); |x| / spacing is exact in
    /// float32 (a power-of-two scale), so rounding it to an integer (ties to even) and scaling back
    /// gives the nearest binary16 value. Rounding up out of a binade lands on the next power of two,
    /// which is representable — except above 65504, where it is ∞.
    @inline(__always)
    static func float16Round(_ x: Float) -> Float {
        if !x.isFinite { return x.isNaN ? .nan : x }
        let a = abs(x)
        if a >= 65520 { return x < 0 ? -.infinity : .infinity }
        if a == 0 { return x }
        let e = max(Int(a.exponent), -14)
        let spacing = Float(sign: .plus, exponent: e - 10, significand: 1)
        let r = (a / spacing).rounded(.toNearestOrEven) * spacing
        return x < 0 ? -r : r
    }
}
