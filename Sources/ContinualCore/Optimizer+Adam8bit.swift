extension Optimizer {
    /// Code of 0 in the signed map (the initial first moment).
    static let signedZeroCode = UInt8(DynamicQuantizationMap.signed.firstIndex(of: 0)!)

    /// One 8-bit Adam step (see `Adam8bitOptions`); `steps` has already been incremented.
    /// `codes` holds m's codes then v's; `first` and `second` the blocks' scales of m and v.
    mutating func adam8bitStep(_ o: Adam8bitOptions, parameters: inout [Float], gradient g: UnsafePointer<Float>,
                               trainable: [Bool]?) {
        let n = parameterCount
        let blocks = quantizationBlocks
        let t = Double(steps)
        let c1 = Float(1 - _exp(t * _log(Double(o.beta1)))), c2 = Float(1 - _exp(t * _log(Double(o.beta2))))
        let lr = o.learningRate, b1 = o.beta1, b2 = o.beta2, eps = o.epsilon
        let decay = 1 - lr * o.weightDecay
        let none = [Bool]()
        let mask = trainable ?? none
        let masked = trainable != nil
        parameters.withUnsafeMutableBufferPointer { pp in
            codes.withUnsafeMutableBufferPointer { cp in
                first.withUnsafeMutableBufferPointer { scaleM in
                    second.withUnsafeMutableBufferPointer { scaleV in
                        mask.withUnsafeBufferPointer { mk in
                            DynamicQuantizationMap.signed.withUnsafeBufferPointer { mapS in
                                DynamicQuantizationMap.unsigned.withUnsafeBufferPointer { mapU in
                                    withUnsafeTemporaryAllocation(of: Float.self, capacity: 2 * max(1, min(o.blockSize, n))) { tmp in
                                        let p = pp.baseAddress!
                                        for (b, block) in blocks.enumerated() {
                                            let lo = block.lowerBound, hi = block.upperBound, len = hi - lo
                                            if masked && !(lo..<hi).contains(where: { mk[$0] }) { continue }
                                            let m = tmp.baseAddress!, v = m + len
                                            let sm = scaleM[b], sv = scaleV[b]
                                            var maxM: Float = 0, maxV: Float = 0
                                            for k in 0..<len {
                                                let i = lo + k
                                                var mi = mapS[Int(cp[i])] * sm
                                                var vi = mapU[Int(cp[n + i])] * sv
                                                if !masked || mk[i] {
                                                    p[i] *= decay
                                                    let d = g[i]
                                                    mi = b1 * mi + (1 - b1) * d
                                                    vi = b2 * vi + (1 - b2) * d * d
                                                    p[i] -= lr * (mi / c1) / ((vi / c2).squareRoot() + eps)
                                                }
                                                m[k] = mi
                                                v[k] = vi
                                                maxM = max(maxM, abs(mi))
                                                maxV = max(maxV, vi)
                                            }
                                            scaleM[b] = maxM
                                            scaleV[b] = maxV
                                            for k in 0..<len {
                                                let i = lo + k
                                                cp[i] = maxM > 0 ? DynamicQuantizationMap.code(of: m[k] / maxM, in: mapS)
                                                                 : Optimizer.signedZeroCode
                                                cp[n + i] = maxV > 0 ? DynamicQuantizationMap.code(of: v[k] / maxV, in: mapU) : 0
                                            }
                                        }
                                        // Tensors under min_8bit_size: float32 moments after the scales.
                                        var s = blocks.count
                                        for t in fullPrecisionTensors {
                                            let m = scaleM.baseAddress! + s, v = scaleV.baseAddress! + s
                                            for i in t where !masked || mk[i] {
                                                let k = i - t.lowerBound
                                                p[i] *= decay
                                                let d = g[i]
                                                m[k] = b1 * m[k] + (1 - b1) * d
                                                v[k] = b2 * v[k] + (1 - b2) * d * d
                                                p[i] -= lr * (m[k] / c1) / ((v[k] / c2).squareRoot() + eps)
                                            }
                                            s += t.count
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The dequantised moments (m, v) of 8-bit Adam, one float each per parameter (tests and
    /// inspection; empty for other optimizers).
    public var dequantizedMoments: (m: [Float], v: [Float]) {
        guard case .adam8bit = spec else { return ([], []) }
        let n = parameterCount
        var m = [Float](repeating: 0, count: n), v = m
        for (b, block) in quantizationBlocks.enumerated() {
            for i in block {
                m[i] = DynamicQuantizationMap.signed[Int(codes[i])] * first[b]
                v[i] = DynamicQuantizationMap.unsigned[Int(codes[n + i])] * second[b]
            }
        }
        var s = quantizationBlocks.count
        for t in fullPrecisionTensors {
            for i in t { m[i] = first[s + i - t.lowerBound]; v[i] = second[s + i - t.lowerBound] }
            s += t.count
        }
        return (m, v)
    }
}

extension Optimizer {
    /// `first` as a checkpoint stores it: for 8-bit Adam the scales of m followed by m's codes
    /// (each code as a float, exact); for every other optimizer `first` itself.
    public var checkpointFirst: [Float] {
        codes.isEmpty ? first : first + codes[0..<parameterCount].map { Float($0) }
    }

    /// `second` as a checkpoint stores it (8-bit Adam: scales of v, then v's codes).
    public var checkpointSecond: [Float] {
        codes.isEmpty ? second : second + codes[parameterCount...].map { Float($0) }
    }

    /// Unpacks `checkpointFirst` / `checkpointSecond` of 8-bit Adam.
    mutating func restore8bit(first savedFirst: [Float], second savedSecond: [Float]) throws {
        let blocks = first.count, n = parameterCount
        guard savedFirst.count == blocks + n, savedSecond.count == blocks + n else {
            throw CheckpointError.mismatch("8-bit Adam state has \(savedFirst.count)+\(savedSecond.count) values, expected \(blocks + n)+\(blocks + n)")
        }
        var restored = [UInt8](repeating: 0, count: 2 * n)
        for (k, x) in (savedFirst[blocks...] + savedSecond[blocks...]).enumerated() {
            guard x >= 0, x <= 255, x == x.rounded() else { throw CheckpointError.mismatch("8-bit Adam code \(x) is not a byte") }
            restored[k] = UInt8(x)
        }
        first = Array(savedFirst[..<blocks])
        second = Array(savedSecond[..<blocks])
        codes = restored
    }
}
