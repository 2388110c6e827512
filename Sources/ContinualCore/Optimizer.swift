/// An optimizer's state over the flat parameter vector, and the update step.
///
/// Frozen parameters (`trainable[i] == false`) are skipped entirely: their value *and* their
/// momentum/moment entries stay bit-identical, so a frozen core is exactly frozen.
public struct Optimizer: Sendable, Equatable {
    public let spec: OptimizerSpec
    /// First state vector (SGD momentum buffer or Adam's m).
    public private(set) var first: [Float]
    /// Second state vector (Adam's v); empty for SGD.
    public private(set) var second: [Float]
    /// Number of steps taken since the last reset (Adam's t).
    public private(set) var steps: Int
    /// Length of the parameter vector this state belongs to.
    public let parameterCount: Int

    public init(spec: OptimizerSpec, parameterCount: Int) {
        self.spec = spec
        self.parameterCount = parameterCount
        switch spec {
        case .sgd(_, let momentum, _, _):
            first = momentum == 0 ? [] : [Float](repeating: 0, count: parameterCount)
            second = []
        case .adam, .adamw:
            first = [Float](repeating: 0, count: parameterCount)
            second = [Float](repeating: 0, count: parameterCount)
        }
        steps = 0
    }

    /// Clears all state (the Trainer does this between experiences unless told otherwise).
    public mutating func reset() {
        for i in first.indices { first[i] = 0 }
        for i in second.indices { second[i] = 0 }
        steps = 0
    }

    /// FLOPs of one update per parameter (a convention used by `CostModel`).
    public var flopsPerParameter: Int {
        switch spec {
        case .sgd(_, let momentum, let wd, _): return 2 + (momentum == 0 ? 0 : 2) + (wd == 0 ? 0 : 2)
        case .adam, .adamw: return 12
        }
    }

    /// Applies one step to `parameters` given `gradient` (same length).
    public mutating func step(parameters: inout [Float], gradient: UnsafePointer<Float>, trainable: [Bool]?) {
        precondition(parameters.count == parameterCount, "optimizer state has \(parameterCount) entries, model \(parameters.count)")
        steps += 1
        let n = parameters.count
        let t = Float(steps)
        let spec = self.spec
        parameters.withUnsafeMutableBufferPointer { pp in
            let p = pp.baseAddress!
            first.withUnsafeMutableBufferPointer { fp in
                second.withUnsafeMutableBufferPointer { sp in
                    let m = fp.baseAddress
                    let v = sp.baseAddress
                    if let mask = trainable {
                        mask.withUnsafeBufferPointer { mk in
                            for i in 0..<n where mk[i] {
                                Optimizer.update(spec, i, p, gradient, m, v, t)
                            }
                        }
                    } else {
                        for i in 0..<n { Optimizer.update(spec, i, p, gradient, m, v, t) }
                    }
                }
            }
        }
    }

    @inline(__always)
    private static func update(_ spec: OptimizerSpec, _ i: Int, _ p: UnsafeMutablePointer<Float>,
                               _ g: UnsafePointer<Float>, _ m: UnsafeMutablePointer<Float>?,
                               _ v: UnsafeMutablePointer<Float>?, _ t: Float) {
        switch spec {
        case .sgd(let lr, let momentum, let wd, let nesterov):
            let d = g[i] + wd * p[i]
            if momentum == 0 {
                p[i] -= lr * d
            } else {
                let buf = momentum * m![i] + d
                m![i] = buf
                p[i] -= lr * (nesterov ? d + momentum * buf : buf)
            }
        case .adam(let lr, let b1, let b2, let eps, let wd):
            let d = g[i] + wd * p[i]
            adamStep(p, i, d, m!, v!, lr, b1, b2, eps, t)
        case .adamw(let lr, let b1, let b2, let eps, let wd):
            p[i] *= 1 - lr * wd
            adamStep(p, i, g[i], m!, v!, lr, b1, b2, eps, t)
        }
    }

    @inline(__always)
    private static func adamStep(_ p: UnsafeMutablePointer<Float>, _ i: Int, _ d: Float,
                                 _ m: UnsafeMutablePointer<Float>, _ v: UnsafeMutablePointer<Float>,
                                 _ lr: Float, _ b1: Float, _ b2: Float, _ eps: Float, _ t: Float) {
        m[i] = b1 * m[i] + (1 - b1) * d
        v[i] = b2 * v[i] + (1 - b2) * d * d
        let mHat = m[i] / (1 - pow(b1, t))
        let vHat = v[i] / (1 - pow(b2, t))
        p[i] -= lr * mHat / (vHat.squareRoot() + eps)
    }
}

@inline(__always)
private func pow(_ base: Float, _ exponent: Float) -> Float {
    Float(_exp(Double(exponent) * _log(Double(base))))
}
