import Testing
@testable import ContinualCore

/// bfloat16 and float16 rounding (`NumericFormat.round`) against references written
/// independently here: bfloat16 by choosing between the two neighbouring bfloat16 values in
/// float64 (nearest, ties to the even mantissa); float16 against Swift's own `Float16`
/// conversion (the compiler runtime's / F16C's IEEE rounding).
@Suite struct NumericFormatTests {
    /// Nearest bfloat16 of `x`, from first principles: the value truncated to 7 mantissa bits and
    /// the next bfloat16 up (in magnitude), compared in float64; ties go to the even mantissa;
    /// anything at or past the midpoint above the largest finite value is ∞.
    static func bfloat16Reference(_ x: Float) -> Float {
        if x.isNaN { return .nan }
        if x.isInfinite || x == 0 { return x }
        let bits = x.bitPattern
        let down = Float(bitPattern: bits & 0xFFFF_0000)
        let upBits = (bits & 0xFFFF_0000) &+ 0x1_0000
        let up = Float(bitPattern: upBits)   // may be ±∞ (exponent field all ones, mantissa 0)
        let exact = Double(x)
        let dDown = abs(exact - Double(down))
        // The next value's distance: for ∞ use the would-be 2^128 (the midpoint rule of IEEE).
        let upValue = up.isInfinite ? (x < 0 ? -0x1p128 : 0x1p128) : Double(up)
        let dUp = abs(upValue - exact)
        if dDown < dUp { return down }
        if dUp < dDown { return up }
        return (bits >> 16) & 1 == 0 ? down : up
    }

    static func same(_ a: Float, _ b: Float) -> Bool {
        (a.isNaN && b.isNaN) || a.bitPattern == b.bitPattern
    }

    /// Every class of input: zeros, ±∞, NaN, subnormals, the largest finite values, and bit
    /// patterns just below, at and above every rounding midpoint of every binade.
    static var specialInputs: [Float] {
        var xs: [Float] = [0, -0, .infinity, -.infinity, .nan, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
                           .leastNonzeroMagnitude, .leastNormalMagnitude, 1, -1, 65504, 65519.996, 65520, 65536, 1e-8, 5.96e-8]
        for exponentField in UInt32(0)...255 {
            for sign in [UInt32(0), 0x8000_0000] {
                for low: UInt32 in [0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF] {
                    for lsb: UInt32 in [0, 1] {
                        xs.append(Float(bitPattern: sign | exponentField << 23 | lsb << 16 | 0x2A << 17 | low))
                        xs.append(Float(bitPattern: sign | exponentField << 23 | lsb << 16 | low))
                        // float16's rounding point (13 dropped bits) in the same binade.
                        xs.append(Float(bitPattern: sign | exponentField << 23 | lsb << 13 | (low & 0x1FFF)))
                        xs.append(Float(bitPattern: sign | exponentField << 23 | lsb << 13 | 0x1000))
                    }
                }
            }
        }
        return xs
    }

    /// A strided sweep over all 2³² bit patterns (a prime stride hits every exponent and many
    /// mantissa tails).
    static var sweep: [Float] { stride(from: UInt64(0), to: 1 << 32, by: 4099).map { Float(bitPattern: UInt32($0)) } }

    @Test func bfloat16MatchesTheReferenceOnEveryKindOfValue() {
        for x in Self.specialInputs + Self.sweep {
            let got = NumericFormat.bfloat16.round(x)
            #expect(Self.same(got, Self.bfloat16Reference(x)), "x = \(x) (0x\(String(x.bitPattern, radix: 16)))")
        }
    }

    @Test func bfloat16HandValues() {
        let f = NumericFormat.bfloat16
        #expect(f.round(1 + 0x1p-8) == 1)                 // tie, 1 is even
        #expect(f.round(1 + 3 * 0x1p-8) == 1 + 0x1p-6)    // tie, rounds up to the even mantissa
        #expect(f.round(1 + 0x1p-8 + 0x1p-20) == 1 + 0x1p-7)
        #expect(f.round(0x1.FEp127) == 0x1.FEp127)          // largest finite bfloat16
        #expect(f.round(0x1.FFp127) == .infinity)           // the midpoint to 2^128 rounds to ∞ (even)
        #expect(f.round(Float(bitPattern: 0x7F7F_7FFF)) == 0x1.FEp127)
        #expect(f.round(0x1p-133) == 0x1p-133)              // smallest bfloat16 subnormal
        #expect(f.round(0x1p-134) == 0)                     // tie between 0 and 2^-133: 0
        #expect(f.round(3 * 0x1p-134) == 0x1p-132)          // tie: the even neighbour
        #expect(f.round(-0.0).sign == .minus)
        #expect(f.round(.nan).isNaN && f.round(-.infinity) == -.infinity)
        #expect(NumericFormat.float32.round(0.1) == 0.1 && NumericFormat.bfloat16.bytes == 2 && NumericFormat.float32.bytes == 4)
    }

    #if !(os(macOS) && arch(x86_64))
    @Test func float16MatchesSwiftsFloat16Conversion() {
        for x in Self.specialInputs + Self.sweep {
            let got = NumericFormat.float16.round(x)
            #expect(Self.same(got, Float(Float16(x))), "x = \(x) (0x\(String(x.bitPattern, radix: 16)))")
        }
    }
    #endif

    @Test func float16HandValues() {
        let f = NumericFormat.float16
        #expect(f.round(65504) == 65504)
        #expect(f.round(65519.996) == 65504)
        #expect(f.round(65520) == .infinity && f.round(-65520) == -.infinity)   // midpoint to 2^16: ∞
        #expect(f.round(1e6) == .infinity)
        #expect(f.round(1 + 0x1p-11) == 1)                // tie, 1 is even
        #expect(f.round(1 + 3 * 0x1p-11) == 1 + 0x1p-9)   // tie, up to the even mantissa
        #expect(f.round(0x1p-14) == 0x1p-14)                // smallest normal
        #expect(f.round(0x1p-24) == 0x1p-24)                // smallest subnormal
        #expect(f.round(0x1p-25) == 0)                      // tie between 0 and 2^-24: 0
        #expect(f.round(3 * 0x1p-26) == 0x1p-24)
        #expect(f.round(3 * 0x1p-25) == 0x1p-23)            // tie between 2^-24 and 2·2^-24: even
        #expect(f.round(0x1.8p-20) == 0x1.8p-20)            // a subnormal float16 with a mantissa
        #expect(f.round(-1e-9).sign == .minus && f.round(-1e-9) == 0)
        #expect(f.round(.nan).isNaN && f.round(.infinity) == .infinity)
        #expect(f.round(0.1) == 0.0999755859375)
    }
}
