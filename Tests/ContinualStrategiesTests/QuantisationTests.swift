import ContinualCore
@testable import ContinualStrategies
import Testing

@Suite("Replay storage precision")
struct QuantisationTests {
    @Test("int8 round trip: error ≤ s_f/2 since the last range change, < s_f in general (ranges grow)")
    func int8RoundTrip() {
        let d = 6, n = 400
        var memory = ReplayTestSupport.memory(dimension: d, capacity: n, precision: .int8)
        var rng = RandomSource(seed: 8)
        var originals: [[Float]] = []
        var rangeAtStore: [[Float]] = []
        for i in 0..<n {
            // Magnitudes grow along the stream (forcing re-quantisation); feature 5 is always 0.
            let growth = 1 + Double(i / 50) * 1.7
            var row = (0..<(d - 1)).map { f in Float(rng.normal() * growth * Double(f + 1)) }
            row.append(0)
            if i % 3 == 0 {
                memory.append(features: row, label: 0, route: 0, origin: SampleOrigin(experience: 0, position: i))
                originals.append(row)
                rangeAtStore.append(memory.ranges)
            } else if !memory.isEmpty {
                let slot = rng.uniformInt(below: memory.count)
                memory.replace(slot: slot, features: row, label: 0, route: 0, origin: SampleOrigin(experience: 0, position: i))
                originals[slot] = row
                rangeAtStore[slot] = memory.ranges
            }
        }
        var grew = 0
        var worstRatio = 0.0
        for s in 0..<memory.count {
            let decoded = memory.features(s)
            for f in 0..<d {
                let err = abs(decoded[f] - originals[s][f])
                let step = memory.scale(f)
                if f == d - 1 { #expect(decoded[f] == 0 && step == 0); continue }
                #expect(abs(decoded[f]) <= memory.ranges[f] * 1.000001)
                if rangeAtStore[s][f] == memory.ranges[f] {
                    #expect(err <= step * 0.5 * 1.0001, "fresh slot \(s) feature \(f): error \(err), step \(step)")
                } else {
                    grew += 1
                    #expect(err < step * 1.0001, "re-quantised slot \(s) feature \(f): error \(err), step \(step)")
                }
                worstRatio = max(worstRatio, Double(err / step))
            }
        }
        #expect(grew > 0, "the test must exercise re-quantisation")
        #expect(worstRatio > 0.25, "the bound is not vacuous")
    }

    @Test("hand-written float16 conversion: exact on every half value, round trip within max(|x|·2⁻¹¹, 2⁻²⁵)")
    func float16RoundTrip() {
        // (Failures are collected and checked once: 165 000 separate #expects are slow in debug.)
        var inexact: [UInt16] = []
        for bits in UInt16(0)...UInt16.max where (bits >> 10) & 0x1F != 0x1F {
            if HalfPrecision.encode(HalfPrecision.decode(bits)) != bits { inexact.append(bits) }
        }
        #expect(inexact.isEmpty, "patterns that do not survive decode → encode: \(inexact.prefix(5))")
        var rng = RandomSource(seed: 21)
        var outside: [Float] = []
        var checked = 0
        for _ in 0..<100_000 {
            let exponent = rng.uniform(-30, 16)
            let x = Float((rng.bernoulli(0.5) ? -1.0 : 1.0) * _exp(exponent * 0.6931471805599453)) // ±2^e
            guard abs(x) <= HalfPrecision.maxFinite else { continue }
            checked += 1
            let y = HalfPrecision.decode(HalfPrecision.encode(x))
            if !(abs(x - y) <= HalfPrecision.errorBound(x)) { outside.append(x) }
        }
        #expect(checked > 90_000)
        #expect(outside.isEmpty, "values outside the bound: \(outside.prefix(5))")
        // Ties to even, subnormals, clamping.
        #expect(HalfPrecision.decode(HalfPrecision.encode(1 + 0x1p-11)) == 1)
        #expect(HalfPrecision.decode(HalfPrecision.encode(1 + 3 * 0x1p-11)) == 1 + 0x1p-9)
        #expect(HalfPrecision.decode(HalfPrecision.encode(0x1p-25)) == 0)
        #expect(HalfPrecision.decode(HalfPrecision.encode(0x1.8p-25)) == 0x1p-24)
        #expect(HalfPrecision.decode(HalfPrecision.encode(1e9)) == 65504)
        #expect(HalfPrecision.decode(HalfPrecision.encode(-.infinity)) == -65504)
    }

    #if !(os(macOS) && arch(x86_64))
    @Test("hand-written float16 conversion agrees with Swift's Float16 where it exists")
    func float16MatchesSwift() {
        var rng = RandomSource(seed: 5)
        var mismatches: [Float] = []
        var checked = 0
        for _ in 0..<400_000 {
            // Random bit patterns cover every exponent; keep the finite ones within ±65504.
            let x = Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()))
            guard x.isFinite, abs(x) <= 65504 else { continue }
            checked += 1
            if HalfPrecision.encode(x) != Float16(x).bitPattern { mismatches.append(x) }
        }
        for x: Float in [0, -0.0, 1, 65504, 65519.99, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-14, 0x1.ffcp-15, 1 + 0x1p-11] {
            checked += 1
            if HalfPrecision.encode(x) != Float16(x).bitPattern { mismatches.append(x) }
        }
        #expect(checked > 100_000)
        #expect(mismatches.isEmpty, "differs from Float16 for \(mismatches.prefix(5))")
    }
    #endif

    @Test("float16 memory round trip within the bound")
    func float16Memory() {
        let d = 4
        var memory = ReplayTestSupport.memory(dimension: d, capacity: 50, precision: .float16)
        let rows = ReplayTestSupport.gaussian(count: 50, dimension: d, seed: 3, scales: [1, 100, 0.001, 10])
        for i in 0..<50 {
            memory.append(features: rows[(i * d)..<((i + 1) * d)], label: 1, route: 0, origin: SampleOrigin(experience: 0, position: i))
        }
        for s in 0..<50 {
            let decoded = memory.features(s)
            for f in 0..<d {
                let x = rows[s * d + f]
                #expect(abs(decoded[f] - x) <= HalfPrecision.errorBound(x))
            }
        }
    }
}
