import Testing
@testable import ContinualCore

/// 8-bit Adam (Dettmers et al. 2022): the dynamic quantisation map by hand, nearest-code search
/// by brute force, and the optimizer against a float64 implementation written here.
@Suite struct Adam8bitTests {
    func start() -> [Float] { (0..<26).map { Float(_sin(Double($0) * 1.3)) * 0.5 } }
    func gradient(_ step: Int) -> [Float] {
        (0..<26).map { i in Float(_cos(Double(i * 5 + step * 11) * 0.7)) * (i % 4 == 0 ? 1 : 0.01) }
    }

    @Test func theDynamicMapsByHand() {
        for signed in [true, false] {
            let map = DynamicQuantizationMap.values(signed: signed)
            #expect(map.count == 256)
            #expect(zip(map, map.dropFirst()).allSatisfy { $0 < $1 }, "strictly ascending")
            #expect(map.contains(0) && map.last == 1)
        }
        let s = DynamicQuantizationMap.signed, u = DynamicQuantizationMap.unsigned
        // Largest below 1: the top decade split into 64 (signed) or 128 (unsigned) parts of [0.1, 1].
        #expect(s[254] == Float(0.1 + 0.9 * 63.5 / 64) && s[0] == -s[254])
        #expect(u[254] == Float(0.1 + 0.9 * 127.5 / 128))
        // Smallest magnitudes: 10⁻⁶ · the midpoint of [0.1, 1] (signed, one part) or of its halves.
        #expect(s[128] == Float(1e-6 * 0.55) && s[127] == 0)
        #expect(u[1] == Float(1e-6 * 0.325) && u[0] == 0)
        // Symmetric around 0 apart from the +1.
        for k in 0..<127 { #expect(s[k] == -s[254 - k]) }
        #expect(u.allSatisfy { $0 >= 0 })
    }

    @Test func codesAreTheNearestMapValue() {
        let map = DynamicQuantizationMap.signed
        var x: Float = -1.2
        map.withUnsafeBufferPointer { mp in
            while x < 1.2 {
                let c = Int(DynamicQuantizationMap.code(of: x, in: mp))
                let best = map.indices.min { abs(map[$0] - x) < abs(map[$1] - x) }!
                #expect(abs(map[c] - x) == abs(map[best] - x), "x = \(x)")
                x += 0.00731
            }
        }
    }

    /// The same algorithm in float64 with the float32 map values (block size `B`).
    func reference(_ o: Adam8bitOptions, steps: Int) -> (p: [Double], m: [Double], v: [Double]) {
        let s = DynamicQuantizationMap.signed.map(Double.init), u = DynamicQuantizationMap.unsigned.map(Double.init)
        func nearest(_ x: Double, _ map: [Double]) -> Int {
            var best = 0
            for k in map.indices where abs(map[k] - x) < abs(map[best] - x) { best = k }
            return best
        }
        var p = start().map(Double.init)
        let n = p.count, B = o.blockSize
        var cm = [Int](repeating: 127, count: n), cv = [Int](repeating: 0, count: n)
        let blockCount = (n + B - 1) / B   // one tensor: blocks of B from 0
        var sm = [Double](repeating: 0, count: blockCount), sv = sm
        let b1 = Double(o.beta1), b2 = Double(o.beta2), lr = Double(o.learningRate)
        for t in 1...steps {
            let g = gradient(t).map(Double.init)
            let c1 = 1 - _exp(Double(t) * _log(b1)), c2 = 1 - _exp(Double(t) * _log(b2))
            for b in 0..<blockCount {
                let r = (b * B)..<min(n, b * B + B)
                var m = r.map { s[cm[$0]] * sm[b] }, v = r.map { u[cv[$0]] * sv[b] }
                for (k, i) in r.enumerated() {
                    p[i] *= 1 - lr * Double(o.weightDecay)
                    m[k] = b1 * m[k] + (1 - b1) * g[i]
                    v[k] = b2 * v[k] + (1 - b2) * g[i] * g[i]
                    p[i] -= lr * (m[k] / c1) / ((v[k] / c2).squareRoot() + Double(o.epsilon))
                }
                sm[b] = m.map(abs).max()!
                sv[b] = v.max()!
                for (k, i) in r.enumerated() {
                    cm[i] = sm[b] > 0 ? nearest(m[k] / sm[b], s) : 127
                    cv[i] = sv[b] > 0 ? nearest(v[k] / sv[b], u) : 0
                }
            }
        }
        return (p, (0..<n).map { s[cm[$0]] * sm[$0 / B] }, (0..<n).map { u[cv[$0]] * sv[$0 / B] })
    }

    func run(_ o: Adam8bitOptions, steps: Int, mask: [Bool]? = nil) -> ([Float], Optimizer) {
        var p = start()
        var opt = Optimizer(spec: .adam8bit(o), parameterCount: 26)
        for t in 1...steps { opt.step(parameters: &p, gradient: gradient(t), trainable: mask) }
        return (p, opt)
    }

    @Test func firstStepIsExactlyAdamBecauseTheUpdateUsesTheFloatMoments() {
        var p = start()
        var adam = Optimizer(spec: .adam(learningRate: 0.01), parameterCount: 26)
        adam.step(parameters: &p, gradient: gradient(1), trainable: nil)
        let (q, _) = run(Adam8bitOptions(learningRate: 0.01, minQuantizedSize: 0), steps: 1)
        #expect(p == q)
    }

    @Test func storedMomentsAreWithinHalfAMapGapOfTheExactOnes() {
        let (_, opt) = run(Adam8bitOptions(learningRate: 0.01, minQuantizedSize: 0), steps: 1)
        let g = gradient(1).map(Double.init)
        let exactM = g.map { 0.1 * $0 }, exactV = g.map { 0.001 * $0 * $0 }
        let (m, v) = opt.dequantizedMoments
        let absmaxM = exactM.map(abs).max()!, absmaxV = exactV.max()!
        #expect(abs(Double(opt.first[0]) - absmaxM) <= 1e-6 * absmaxM)
        for (stored, exact, scale, map) in [(m, exactM, absmaxM, DynamicQuantizationMap.signed),
                                            (v, exactV, absmaxV, DynamicQuantizationMap.unsigned)] {
            for (a, e) in zip(stored, exact) {
                // The half gap between the two map values around e/scale bounds the error.
                let x = e / scale
                let hi = map.firstIndex { Double($0) >= x } ?? 255
                let lo = max(hi - 1, 0)
                // Below the map's lowest value (−0.993 when the block's absmax is negative) the
                // error is the distance to it.
                let bound = x < Double(map[0]) ? (Double(map[0]) - x) * scale
                                               : (Double(map[hi]) - Double(map[lo])) / 2 * scale
                #expect(abs(Double(a) - e) <= bound + 1e-6 * scale, "\(a) vs \(e)")
            }
        }
    }

    @Test func fiveStepsMatchTheFloat64ReferenceWithSmallBlocks() {
        let o = Adam8bitOptions(learningRate: 0.01, weightDecay: 0.05, blockSize: 8, minQuantizedSize: 0)
        let (p, opt) = run(o, steps: 5)
        let ref = reference(o, steps: 5)
        for (a, b) in zip(p, ref.p) { #expect(abs(Double(a) - b) <= 1e-6, "\(a) vs \(b)") }
        let (m, v) = opt.dequantizedMoments
        for (a, b) in zip(m, ref.m) { #expect(abs(Double(a) - b) <= 1e-6 * max(abs(b), 1e-3)) }
        for (a, b) in zip(v, ref.v) { #expect(abs(Double(a) - b) <= 1e-5 * max(abs(b), 1e-6)) }
        #expect(opt.first.count == 4 && opt.codes.count == 52)
    }

    @Test func frozenParametersStayAndAFullyFrozenBlockKeepsItsState() {
        var mask = [Bool](repeating: true, count: 26)
        for i in 8..<16 { mask[i] = false }   // block 1 of size 8
        mask[3] = false
        let o = Adam8bitOptions(learningRate: 0.01, blockSize: 8, minQuantizedSize: 0)
        let (p, opt) = run(o, steps: 3, mask: mask)
        for i in 8..<16 { #expect(p[i] == start()[i]) }
        #expect(p[3] == start()[3])
        #expect(opt.first[1] == 0 && opt.second[1] == 0)
        #expect(opt.codes[8..<16].allSatisfy { $0 == Optimizer.signedZeroCode })
    }

    @Test func stateBytesByHand() {
        // 26 parameters: two bytes each + one float32 scale per moment per block.
        #expect(OptimizerSpec.adam8bit(Adam8bitOptions(learningRate: 0.1, minQuantizedSize: 0)).stateBytes(parameterCount: 26, matrices: []) == 52 + 8)
        #expect(OptimizerSpec.adam8bit(Adam8bitOptions(learningRate: 0.1, blockSize: 8, minQuantizedSize: 0)).stateBytes(parameterCount: 26, matrices: []) == 52 + 32)
        // 1,000,000 parameters, blocks of 2048: 489 blocks → 2,000,000 + 3,912 bytes vs Adam's 8,000,000.
        #expect(OptimizerSpec.adam8bit(Adam8bitOptions(learningRate: 0.1, minQuantizedSize: 0)).stateBytes(parameterCount: 1_000_000, matrices: []) == 2_003_912)
        let opt = Optimizer(spec: .adam8bit(Adam8bitOptions(learningRate: 0.1, blockSize: 8, minQuantizedSize: 0)), parameterCount: 26)
        #expect(opt.codes.count + 4 * (opt.first.count + opt.second.count) == 84)
        // Blocks stay inside tensors: MLP 3-4-2's W1 (12 → 8 + 4), b1 (4), W2 (8), b2 (2) = 5
        // blocks of 8 at most; with the default 2048, one block per tensor (4).
        let m = [ParameterMatrix(offset: 0, rows: 3, columns: 4), ParameterMatrix(offset: 16, rows: 4, columns: 2)]
        #expect(Adam8bitOptions(learningRate: 0.1, blockSize: 8, minQuantizedSize: 0).blocks(parameterCount: 26, matrices: m)
                == [0..<8, 8..<12, 12..<16, 16..<24, 24..<26])
        #expect(OptimizerSpec.adam8bit(Adam8bitOptions(learningRate: 0.1, minQuantizedSize: 0)).stateBytes(parameterCount: 26, matrices: m) == 52 + 32)
    }

    @Test func tensorsUnderTheMinimumSizeKeepFloat32MomentsExactlyAsAdamW() {
        // MLP 3-4-2's tensors all have < 4096 entries: with the default minimum nothing is
        // quantised and the steps are AdamW's, bit for bit.
        let m = [ParameterMatrix(offset: 0, rows: 3, columns: 4), ParameterMatrix(offset: 16, rows: 4, columns: 2)]
        var p = start(), q = start()
        var a = Optimizer(spec: .adam8bit(Adam8bitOptions(learningRate: 0.01, weightDecay: 0.1)), parameterCount: 26, matrices: m)
        var w = Optimizer(spec: .adamw(learningRate: 0.01, weightDecay: 0.1), parameterCount: 26)
        for t in 1...5 {
            a.step(parameters: &p, gradient: gradient(t), trainable: nil)
            w.step(parameters: &q, gradient: gradient(t), trainable: nil)
        }
        #expect(p == q)
        #expect(a.quantizationBlocks.isEmpty && a.fullPrecisionTensors == [0..<12, 12..<16, 16..<24, 24..<26])
        #expect(OptimizerSpec.adam8bit(Adam8bitOptions(learningRate: 0.1)).stateBytes(parameterCount: 26, matrices: m) == 52 + 8 * 26)
        #expect(a.dequantizedMoments.m == w.first)
    }

    @Test func checkpointRoundTripContinuesBitIdentically() throws {
        let o = Adam8bitOptions(learningRate: 0.01, blockSize: 8, minQuantizedSize: 0)
        var (p, a) = run(o, steps: 2)
        var b = try Optimizer(spec: .adam8bit(o), parameterCount: 26, first: a.checkpointFirst,
                              second: a.checkpointSecond, steps: a.steps)
        #expect(a == b)
        var q = p
        a.step(parameters: &p, gradient: gradient(3), trainable: nil)
        b.step(parameters: &q, gradient: gradient(3), trainable: nil)
        #expect(p == q && a == b)
        #expect(throws: CheckpointError.self) {
            try Optimizer(spec: .adam8bit(o), parameterCount: 26, first: [1, 2], second: [3], steps: 1)
        }
    }
}
