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

    /// Restores saved state (checkpoints); the vectors must have the lengths `init(spec:parameterCount:)` gives.
    public init(spec: OptimizerSpec, parameterCount: Int, first: [Float], second: [Float], steps: Int) throws {
        self.init(spec: spec, parameterCount: parameterCount)
        guard first.count == self.first.count, second.count == self.second.count else {
            throw CheckpointError.mismatch("optimizer state has \(first.count)+\(second.count) values, expected \(self.first.count)+\(self.second.count)")
        }
        self.first = first
        self.second = second
        self.steps = steps
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

    /// Applies one step to `parameters` given `gradient` (same length). `learningRate`, when
    /// given, replaces the spec's rate for this step (a learning-rate schedule); the state (moments,
    /// Adam's step count) is the same either way.
    public mutating func step(parameters: inout [Float], gradient: UnsafePointer<Float>, trainable: [Bool]?,
                              learningRate: Float? = nil) {
        precondition(parameters.count == parameterCount, "optimizer state has \(parameterCount) entries, model \(parameters.count)")
        precondition(trainable == nil || trainable!.count == parameterCount, "the trainable mask must have one entry per parameter")
        steps &+= 1
        let n = parameters.count
        let spec = learningRate.map { self.spec.withLearningRate($0) } ?? self.spec
        let t = Double(steps)
        parameters.withUnsafeMutableBufferPointer { pp in
            let p = pp.baseAddress!
            first.withUnsafeMutableBufferPointer { fp in
                second.withUnsafeMutableBufferPointer { sp in
                    if let mask = trainable {
                        mask.withUnsafeBufferPointer { mk in
                            // Frozen entries are skipped entirely: value and state stay bit-identical.
                            var i = 0
                            while i < n {
                                guard mk[i] else { i += 1; continue }
                                var j = i
                                while j < n && mk[j] { j += 1 }
                                Optimizer.update(spec, range: i..<j, p, gradient, fp.baseAddress, sp.baseAddress, t)
                                i = j
                            }
                        }
                    } else {
                        Optimizer.update(spec, range: 0..<n, p, gradient, fp.baseAddress, sp.baseAddress, t)
                    }
                }
            }
        }
    }

    /// The update rule over one contiguous range of parameters (one switch per range, tight loops).
    @inline(__always)
    private static func update(_ spec: OptimizerSpec, range: Range<Int>, _ p: UnsafeMutablePointer<Float>,
                               _ g: UnsafePointer<Float>, _ m: UnsafeMutablePointer<Float>?,
                               _ v: UnsafeMutablePointer<Float>?, _ t: Double) {
        switch spec {
        case .sgd(let lr, let momentum, let wd, let nesterov):
            if momentum == 0 {
                for i in range { p[i] -= lr * (g[i] + wd * p[i]) }
            } else if nesterov {
                let m = m!
                for i in range {
                    let d = g[i] + wd * p[i]
                    let buf = momentum * m[i] + d
                    m[i] = buf
                    p[i] -= lr * (d + momentum * buf)
                }
            } else {
                let m = m!
                for i in range {
                    let buf = momentum * m[i] + (g[i] + wd * p[i])
                    m[i] = buf
                    p[i] -= lr * buf
                }
            }
        case .adam(let lr, let b1, let b2, let eps, let wd):
            let (c1, c2) = corrections(b1, b2, t)
            let m = m!, v = v!
            for i in range {
                let d = g[i] + wd * p[i]
                m[i] = b1 * m[i] + (1 - b1) * d
                v[i] = b2 * v[i] + (1 - b2) * d * d
                p[i] -= lr * (m[i] / c1) / ((v[i] / c2).squareRoot() + eps)
            }
        case .adamw(let lr, let b1, let b2, let eps, let wd):
            let (c1, c2) = corrections(b1, b2, t)
            let m = m!, v = v!
            let decay = 1 - lr * wd
            for i in range {
                p[i] *= decay
                let d = g[i]
                m[i] = b1 * m[i] + (1 - b1) * d
                v[i] = b2 * v[i] + (1 - b2) * d * d
                p[i] -= lr * (m[i] / c1) / ((v[i] / c2).squareRoot() + eps)
            }
        }
    }

    /// Adam's bias corrections 1 − β1^t and 1 − β2^t, computed once per step in float64.
    @inline(__always)
    private static func corrections(_ b1: Float, _ b2: Float, _ t: Double) -> (Float, Float) {
        (Float(1 - _exp(t * _log(Double(b1)))), Float(1 - _exp(t * _log(Double(b2)))))
    }
}

