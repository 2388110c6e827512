import CContinualKernels
@testable import ContinualCore
import Foundation
import Testing

/// The binary head's loss (numerics version 3): its log1p is the toolkit's own, correctly rounded
/// against float64 log1p, the same on every kernel path, and its gradient is the formula's with
/// libm's expf, bit for bit (the weights of every run are version 2's).
@Suite struct BinaryLossTests {
    /// float64 log1p rounded once to float32: the correctly rounded value but for double rounding.
    static func reference(_ x: Float) -> Float { Float(Foundation.log1p(Double(x))) }

    /// The loss and gradient as the formula states them, one row at a time: the gradient with
    /// libm's expf, the loss with `reference` in place of a C library's log1pf.
    static func formula(_ logits: [Float], _ labels: [Int32], scale: Float) -> (Double, [Float]) {
        var total = 0.0
        var g = logits
        for i in logits.indices {
            guard labels[i] >= 0 else { g[i] = 0; continue }
            let z = logits[i], y: Float = labels[i] == 0 ? 0 : 1
            let e = Foundation.expf(-abs(z))
            total += Double(max(z, 0) - y * z + reference(e))
            let sigma = z >= 0 ? 1 / (1 + e) : e / (1 + e)
            g[i] = (sigma - y) * scale
        }
        return (total, g)
    }

    /// `ck_exp_nonpositive` on `x`, on the thread's kernel path, as the loss calls it.
    static func exp(_ x: [Float]) -> [Float] {
        var y = [Float](repeating: 0, count: x.count)
        ck_exp_nonpositive(x, &y, x.count)
        return y
    }

    static func binary(_ logits: [Float], _ labels: [Int32], scale: Float) -> (Double, [Float]) {
        var z = logits
        let l = z.withUnsafeMutableBufferPointer { zp in
            labels.withUnsafeBufferPointer { y in
                Loss.lossAndLogitGradient(head: .binary, logits: zp.baseAddress!, labels: y.baseAddress!,
                                          count: labels.count, scale: scale)
            }
        }
        return (l, z)
    }

    /// Every 127th float in [0, 1] (8.4 million, every exponent): at most one differs from the
    /// reference (an exhaustive run over all 1,065,353,217 found one), and none by more than an ulp.
    @Test func log1pIsCorrectlyRoundedOnTheUnitInterval() {
        var differing = 0
        var x: UInt32 = 0
        let one = Float(1).bitPattern
        while x <= one {
            let v = Float(bitPattern: x)
            let (mine, ref) = (Loss.log1pUnit(v), Self.reference(v))
            if mine != ref {
                differing += 1
                #expect(mine == ref.nextUp || mine == ref.nextDown, "log1p(\(v)): \(mine), reference \(ref)")
            }
            x += 127
        }
        #expect(differing <= 1)
    }

    /// Numerics version 3's log1p as first written: the series in Horner's order, two divisions.
    static func version3(_ x: Float) -> Float {
        let x = Double(x), upper = x > 0.41421356237309503
        let s = upper ? (x - 1) / (x + 3) : x / (2 + x)
        let t = s * s
        var p = 1.0 / 21
        for d in stride(from: 19.0, through: 1, by: -2) { p = p * t + 1 / d }
        return Float((upper ? 0.6931471805599453 : 0) + (2 * s) * p)
    }

    /// The polynomial now runs its small terms in Estrin's order (a shorter chain) and keeps the
    /// bits: every 1,021st float in [0, 1] against version 3's formula, on every kernel path
    /// (Experiments/tools/loss_exhaustive.c checks all 1,065,353,217).
    @Test func log1pKeepsVersion3sBits() {
        var inputs: [Float] = []
        var x: UInt32 = 0
        while x <= Float(1).bitPattern { inputs.append(Float(bitPattern: x)); x += 1021 }
        inputs += [Float(bitPattern: 0x3efd_81ad), Float(bitPattern: 0x3ebe_9143)]  // the one float off the reference; one Estrin alone rounds the other way
        let expected = inputs.map { Self.version3($0).bitPattern }
        for path in Kernels.availablePaths {
            var got = [Float](repeating: 0, count: inputs.count)
            Kernels.withPath(path) { ck_log1p_unit(inputs, &got, inputs.count) }
            let differing = zip(inputs, zip(got, expected)).filter { $0.1.0.bitPattern != $0.1.1 }
            #expect(differing.isEmpty, "\(path): \(differing.count) differ, first \(differing.first.map { "\($0.0)" } ?? "")")
        }
    }

    @Test func log1pEdgeCases() {
        #expect(Loss.log1pUnit(0) == 0)
        #expect(Loss.log1pUnit(1) == Float(M_LN2))
        #expect(Loss.log1pUnit(.leastNonzeroMagnitude) == .leastNonzeroMagnitude)   // log1p(x) = x below ulp
        #expect(Loss.log1pUnit(.leastNormalMagnitude) == .leastNormalMagnitude)
        #expect(Loss.log1pUnit(.nan).isNaN)
        // Both sides of the switch at √2 − 1, where the reduction changes.
        let edge = Float(0.41421356237309503)
        for v in [edge.nextDown, edge, edge.nextUp, edge.nextUp.nextUp] { #expect(Loss.log1pUnit(v) == Self.reference(v)) }
    }

    /// Every 1,021st float in [−88, −0] (1.1 million, every exponent) in chunks of 37 (vector
    /// bodies and scalar tails), then the special cases, on every kernel path: glibc's expf, bit
    /// for bit (Experiments/tools/loss_exhaustive.c runs all 1,118,830,593 on every path), so trajectories are unchanged
    /// where libm is glibc's FMA build (x86-64 with FMA, every machine this project runs on).
    @Test func expIsGlibcsExpfOnEveryPath() {
        #if canImport(Glibc)
        let fma = Kernels.availablePaths.contains { $0 != "generic" }
        #else
        let fma = false
        #endif
        guard fma else {
            print("BinaryLossTests expIsGlibcsExpfOnEveryPath: skipped: the C library's expf is not glibc's FMA build here")
            return
        }
        let stop = Float(-88).bitPattern
        var x = (-Float(0)).bitPattern
        var inputs: [Float] = []
        while x <= stop { inputs.append(Float(bitPattern: x)); x += 1021 }
        inputs += [-88, Float(-88).nextUp, Float(-88).nextDown, -103.97, -104, -150, -.infinity, .nan,
                   -.leastNonzeroMagnitude, Float(bitPattern: 0xc27c_65d9)]  // the last: r's product fused
        let expected = inputs.map { Foundation.expf($0).bitPattern }
        for path in Kernels.availablePaths {
            let got = Kernels.withPath(path) {
                stride(from: 0, to: inputs.count, by: 37).flatMap { Self.exp(Array(inputs[$0..<min($0 + 37, inputs.count)])) }
            }
            let differing = zip(got, expected).filter { $0.0.bitPattern != $0.1 && !($0.0.isNaN && Float(bitPattern: $0.1).isNaN) }
            #expect(differing.isEmpty, "\(path): \(differing.count) of \(inputs.count) differ, first \(differing.first.map { "\($0)" } ?? "")")
        }
    }

    /// glibc's values (its FMA build, recorded), checked on any C library and CPU: e^−1, e^−0.1,
    /// e^−10, a result at the smallest normal, the value where an unfused r = x·32/ln 2 − k
    /// differs, and the special cases.
    @Test func expGivesGlibcsRecordedValues() {
        let cases: [(UInt32, UInt32)] = [(0xbf80_0000, 0x3ebc_5ab2), (0xbdcc_cccd, 0x3f67_a36d), (0xc120_0000, 0x383e_6bce),
                                         (0xc2ae_ac50, 0x007f_ffe6), (0xc27c_65d9, 0x11fa_2993), (0x8000_0000, 0x3f80_0000)]
        for path in Kernels.availablePaths {
            let got = Kernels.withPath(path) { Self.exp(cases.map { Float(bitPattern: $0.0) }) }
            #expect(got.map(\.bitPattern) == cases.map(\.1), "\(path)")
            let special = Kernels.withPath(path) { Self.exp([-.infinity, -150, .nan]) }
            #expect(special[0] == 0 && special[1] == 0 && special[2].isNaN, "\(path)")
        }
    }

    /// The exponential within 0.502 ulp of e^x computed in float64 (glibc's bound), a property
    /// that holds whatever the C library: every 4,099th float in [−87, −0].
    @Test func expIsWithinGlibcsBound() {
        var x = (-Float(0)).bitPattern
        var inputs: [Float] = []
        while x <= Float(-87).bitPattern { inputs.append(Float(bitPattern: x)); x += 4099 }
        for (v, e) in zip(inputs, Self.exp(inputs)) {
            let exact = Foundation.exp(Double(v)), ulp = Double(Float(exact).ulp)
            #expect(abs(Double(e) - exact) <= 0.502 * ulp, "exp(\(v)) = \(e), float64 \(exact)")
        }
    }

    /// The kernel against the formula on logits from 0 to ±∞ and NaN, labels −1/0/1, counts
    /// around the 64-row chunk: the gradient's bits and the loss's float64 sum, exactly.
    /// (A NaN sum is the one quiet NaN `Double.nan`, whatever NaN the adds made.)
    @Test(arguments: Kernels.availablePaths)
    func lossAndGradientAreTheFormulasBits(_ path: String) {
        var rng = RandomSource(seed: 45)
        let special: [Float] = [0, -0.0, 1e-30, -1e-30, 17, -17, 88, -88, 104, -104, 1e30, -1e30, .infinity, -.infinity]
        for count in [0, 1, 7, 32, 63, 64, 65, 200] {
            var z = (0..<count).map { _ in Float(Double(rng.next() % 2_000_001) / 100_000 - 10) }
            for (i, s) in special.enumerated() where i < count { z[i] = s }
            let y = (0..<count).map { _ in Int32(rng.next() % 3) - 1 }
            let (l, g) = Kernels.withPath(path) { Self.binary(z, y, scale: 0.25) }
            let (lr, gr) = Self.formula(z, y, scale: 0.25)
            #expect(l.bitPattern == lr.bitPattern || (l.isNaN && lr.isNaN), "\(path) count \(count): \(l) vs \(lr)")
            #expect(!l.isNaN || l.bitPattern == Double.nan.bitPattern, "\(path): the one NaN")
            #expect(g.map(\.bitPattern) == gr.map(\.bitPattern), "\(path) count \(count)")
        }
        let (l, g) = Self.binary([.nan, 1], [1, 0], scale: 1)
        #expect(l.isNaN && g[0].isNaN && !g[1].isNaN)
    }

    /// The same bits under every kernel path this machine runs: the log1p's clone follows the
    /// thread's path, so this runs each clone the CPU has (base, AVX2, AVX-512).
    @Test func everyPathGivesTheSameBits() {
        var rng = RandomSource(seed: 7)
        let z = (0..<300).map { _ in Float(Double(rng.next() % 4_000_001) / 100_000 - 20) }
        let y = (0..<300).map { _ in Int32(rng.next() % 2) }
        let runs = Kernels.availablePaths.map { path in Kernels.withPath(path) { Self.binary(z, y, scale: 1) } }
        for r in runs.dropFirst() {
            #expect(r.0.bitPattern == runs[0].0.bitPattern)
            #expect(r.1.map(\.bitPattern) == runs[0].1.map(\.bitPattern))
        }
    }
}
