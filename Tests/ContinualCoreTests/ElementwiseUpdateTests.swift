import Testing
@testable import ContinualCore

/// The optimizer steps and EWC's Fisher and penalty loops run eight lanes at a time in C; every
/// element must get the bits of the scalar Swift expression it replaced (numerics version
/// unchanged), on both kernel paths, for vector bodies and scalar tails, including zeros of
/// both signs, subnormals and values far apart in magnitude.
@Suite struct ElementwiseUpdateTests {
    static func values(_ n: Int, seed: UInt64, positive: Bool = false) -> [Float] {
        var rng = RandomSource(seed: seed)
        return (0..<n).map { i in
            switch i % 11 {
            case 3: return positive ? 0 : -0.0
            case 5: return 0
            case 7: return Float.leastNormalMagnitude / 8
            default:
                let v = Float(rng.normal()) * ([1e-3, 1e-2, 0.1, 1, 10, 100, 1000] as [Float])[rng.uniformInt(below: 7)]
                return positive ? abs(v) : v
            }
        }
    }

    /// The scalar loops `Optimizer` ran before (Swift, no contraction), as the oracle.
    static func reference(_ spec: OptimizerSpec, p: inout [Float], g: [Float], m: inout [Float], v: inout [Float],
                          t: Double, mask: [Bool]?) {
        func c(_ b: Float) -> Float { Float(1 - _exp(t * _log(Double(b)))) }
        for i in p.indices where mask?[i] ?? true {
            switch spec {
            case .sgd(let lr, let momentum, let wd, let nesterov):
                if momentum == 0 {
                    p[i] -= lr * (g[i] + wd * p[i])
                } else if nesterov {
                    let d = g[i] + wd * p[i]
                    let buf = momentum * m[i] + d
                    m[i] = buf
                    p[i] -= lr * (d + momentum * buf)
                } else {
                    let buf = momentum * m[i] + (g[i] + wd * p[i])
                    m[i] = buf
                    p[i] -= lr * buf
                }
            case .adam(let lr, let b1, let b2, let eps, let wd):
                let (c1, c2) = (c(b1), c(b2))
                let d = g[i] + wd * p[i]
                m[i] = b1 * m[i] + (1 - b1) * d
                v[i] = b2 * v[i] + (1 - b2) * d * d
                p[i] -= lr * (m[i] / c1) / ((v[i] / c2).squareRoot() + eps)
            case .adamw(let lr, let b1, let b2, let eps, let wd):
                let (c1, c2) = (c(b1), c(b2))
                p[i] *= 1 - lr * wd
                let d = g[i]
                m[i] = b1 * m[i] + (1 - b1) * d
                v[i] = b2 * v[i] + (1 - b2) * d * d
                p[i] -= lr * (m[i] / c1) / ((v[i] / c2).squareRoot() + eps)
            default:
                preconditionFailure("not an element-wise optimizer")
            }
        }
    }

    static let specs: [OptimizerSpec] = [
        .sgd(learningRate: 0.1), .sgd(learningRate: 0.05, weightDecay: 0.01),
        .sgd(learningRate: 0.1, momentum: 0.9), .sgd(learningRate: 0.1, momentum: 0.9, weightDecay: 1e-3, nesterov: true),
        .adam(learningRate: 1e-3), .adam(learningRate: 1e-2, weightDecay: 1e-4), .adamw(learningRate: 1e-3),
    ]

    @Test(arguments: Kernels.availablePaths)
    func optimizerStepsKeepTheScalarBits(_ path: String) {
        Kernels.withPath(path) {
            let n = 1003  // 125 vectors of 8 and a tail of 3
            for (s, spec) in Self.specs.enumerated() {
                for masked in [false, true] {
                    let mask: [Bool]? = masked ? (0..<n).map { ($0 / 5) % 3 != 1 } : nil
                    var p = Self.values(n, seed: UInt64(10 * s + 1)), q = p
                    var opt = Optimizer(spec: spec, parameterCount: n)
                    var m = [Float](repeating: 0, count: n), v = m
                    for step in 1...4 {
                        let g = Self.values(n, seed: UInt64(100 * s + step))
                        g.withUnsafeBufferPointer { opt.step(parameters: &p, gradient: $0.baseAddress!, trainable: mask) }
                        Self.reference(spec, p: &q, g: g, m: &m, v: &v, t: Double(step), mask: mask)
                        #expect(p.map(\.bitPattern) == q.map(\.bitPattern), "\(path) \(spec) masked \(masked) step \(step)")
                    }
                    if case .sgd(_, 0, _, _) = spec { continue }
                    #expect(opt.first.map(\.bitPattern) == m.map(\.bitPattern), "\(path) \(spec) first moment")
                    if case .sgd = spec { continue }
                    #expect(opt.second.map(\.bitPattern) == v.map(\.bitPattern), "\(path) \(spec) second moment")
                }
            }
        }
    }

    @Test(arguments: Kernels.availablePaths)
    func fisherAccumulationAndPenaltyKeepTheScalarBits(_ path: String) {
        Kernels.withPath(path) {
            for n in [1, 7, 8, 9, 1003] {
                let g = Self.values(n, seed: 7), theta = Self.values(n, seed: 8), anchor = Self.values(n, seed: 9)
                let fisher32 = Self.values(n, seed: 10, positive: true)
                var f = Self.values(n, seed: 11).map(Double.init), r = f
                for w in [1.0, 0.3] {
                    f.withUnsafeMutableBufferPointer { Elementwise.accumulateSquares($0.baseAddress!, g, weight: w, count: n) }
                    for i in 0..<n { r[i] += w * Double(g[i]) * Double(g[i]) }
                    #expect(f.map(\.bitPattern) == r.map(\.bitPattern), "\(path) n \(n) weight \(w)")
                }
                var grad = Self.values(n, seed: 12), refGrad = grad
                let scale: Float = 1000
                let sum = grad.withUnsafeMutableBufferPointer {
                    Elementwise.quadraticPenalty(parameters: theta, anchor: anchor, weights: fisher32,
                                                 gradient: $0.baseAddress!, scale: scale, count: n)
                }
                var refSum = 0.0
                for i in 0..<n {
                    let d = theta[i] - anchor[i]
                    refSum += Double(fisher32[i]) * Double(d) * Double(d)
                    refGrad[i] += scale * fisher32[i] * d
                }
                #expect(sum.bitPattern == refSum.bitPattern, "\(path) n \(n) penalty")
                #expect(grad.map(\.bitPattern) == refGrad.map(\.bitPattern), "\(path) n \(n) penalty gradient")
            }
        }
    }

    /// EWC's exact Fisher by label rows: per element, each label's accumulateSquares of the float
    /// product a·δ in label order. Zero inputs are skipped only while every δ is finite: behind an
    /// infinite δ, 0·∞ is NaN on the per-label path, so it must be here.
    @Test(arguments: Kernels.availablePaths)
    func labelSquaresKeepTheBitsOfEachLabelsSquares(_ path: String) {
        Kernels.withPath(path) {
            for (n, m, labels) in [(1, 1, 2), (5, 3, 4), (11, 9, 7), (13, 20, 3)] {
                for special: Float in [1, .infinity, .nan] {
                    let a = Self.values(n, seed: 20)
                    var delta = Self.values(labels * m, seed: 21)
                    if special != 1 { delta[delta.count / 2] = special }
                    let w = (0..<labels).map { 0.05 + Double($0) / Double(labels) }
                    var f = Self.values(n * m, seed: 22, positive: true).map(Double.init), r = f
                    f.withUnsafeMutableBufferPointer { fp in
                        Elementwise.accumulateLabelSquares(fp.baseAddress!, a: a, rows: n, delta: delta, labels: labels,
                                                           columns: m, weights: w)
                    }
                    for y in 0..<labels {
                        let g = (0..<(n * m)).map { a[$0 / m] * delta[y * m + $0 % m] }
                        for i in 0..<(n * m) { r[i] += w[y] * Double(g[i]) * Double(g[i]) }
                    }
                    let canonical = { (v: Double) in v.isNaN ? Double.nan.bitPattern : v.bitPattern }
                    #expect(f.map(canonical) == r.map(canonical), "\(path) \(n)×\(m), \(labels) labels, δ with \(special)")
                    // NaN δ gives NaN; ∞ gives NaN only behind a zero input (a[3], a[5] are ±0).
                    if special.isNaN || special.isInfinite && n > 5 { #expect(f.contains { $0.isNaN }) }
                }
            }
        }
    }
}
