import Testing
@testable import ContinualCore

/// Adafactor (Shazeer & Stern 2018) against a float64 implementation of the paper's Algorithms
/// 4/5 written independently here (matrix form: R = (G²+ε1)·1, C = 1ᵀ·(G²+ε1), V̂ = R·C/1ᵀR).
@Suite struct AdafactorTests {
    /// MLP 3-4-2: W1 [3×4] at 0, b1 [4] at 12, W2 [4×2] at 16, b2 [2] at 24 (26 parameters).
    let spec = MLPSpec(inputs: 3, hidden: [4], activation: .tanh, head: .multiclass(classes: 2))

    func start() -> [Float] { (0..<26).map { Float(_sin(Double($0) * 1.3)) * 0.5 } }

    /// Gradients with a few large entries so that update clipping (RMS(U) > d) happens.
    func gradient(_ step: Int) -> [Float] {
        (0..<26).map { i in
            let x = Float(_cos(Double(i * 7 + step * 3) * 0.9)) * 0.1
            return i % 9 == step % 9 ? x * 40 : x
        }
    }

    /// The paper's algorithm in float64 over the given tensors (matrices as (offset, rows, cols),
    /// vectors as ranges). Returns the parameters after `steps` steps.
    func reference(_ o: AdafactorOptions, matrices: [(Int, Int, Int)], vectors: [Range<Int>], steps: Int,
                   mask: [Bool]? = nil) -> [Double] {
        var p = start().map(Double.init)
        var R = matrices.map { [Double](repeating: 0, count: $0.1) }
        var C = matrices.map { [Double](repeating: 0, count: $0.2) }
        var V = vectors.map { [Double](repeating: 0, count: $0.count) }
        var m = [Double](repeating: 0, count: p.count)
        let e1 = Double(o.epsilon1), d = Double(o.clipThreshold), b1 = Double(o.beta1), wd = Double(o.weightDecay)
        for t in 1...steps {
            let g = gradient(t).map(Double.init)
            let live = { (i: Int) in mask?[i] ?? true }
            let b2 = 1 - _exp(Double(o.decayRate) * _log(Double(t)))
            let rho = o.relativeStep ? min(Double(o.learningRate), 1 / Double(t).squareRoot()) : Double(o.learningRate)
            var u = [Double](repeating: 0, count: p.count)
            var tensors: [[Int]] = []
            for (k, (off, rows, cols)) in matrices.enumerated() {
                let idx = (0..<(rows * cols)).map { off + $0 }
                let sq = idx.map { live($0) ? g[$0] * g[$0] + e1 : e1 }
                for r in 0..<rows { R[k][r] = b2 * R[k][r] + (1 - b2) * (0..<cols).reduce(0) { $0 + sq[r * cols + $1] } }
                for c in 0..<cols { C[k][c] = b2 * C[k][c] + (1 - b2) * (0..<rows).reduce(0) { $0 + sq[$1 * cols + c] } }
                let sumR = R[k].reduce(0, +)
                for r in 0..<rows { for c in 0..<cols { u[off + r * cols + c] = g[off + r * cols + c] / (R[k][r] * C[k][c] / sumR).squareRoot() } }
                tensors.append(idx)
            }
            for (k, range) in vectors.enumerated() {
                for i in range where live(i) {
                    V[k][i - range.lowerBound] = b2 * V[k][i - range.lowerBound] + (1 - b2) * (g[i] * g[i] + e1)
                    u[i] = g[i] / V[k][i - range.lowerBound].squareRoot()
                }
                tensors.append(Array(range))
            }
            for idx in tensors {
                let trainable = idx.filter(live)
                if trainable.isEmpty { continue }
                let rmsU = (trainable.reduce(0) { $0 + u[$1] * u[$1] } / Double(trainable.count)).squareRoot()
                let rmsX = (idx.reduce(0) { $0 + p[$1] * p[$1] } / Double(idx.count)).squareRoot()
                let alpha = o.relativeStep ? max(Double(o.epsilon2), rmsX) * rho : rho
                for i in trainable {
                    let uh = u[i] / max(1, rmsU / d)
                    var step = uh
                    if b1 > 0 { m[i] = b1 * m[i] + (1 - b1) * uh; step = m[i] }
                    p[i] -= alpha * (wd * p[i] + step)
                }
            }
        }
        return p
    }

    func run(_ o: AdafactorOptions, steps: Int, mask: [Bool]? = nil) -> ([Float], Optimizer) {
        var rng = RandomSource(seed: 1, stream: "init")
        let model = MLP(spec: spec, rng: &rng)
        var p = start()
        var opt = Optimizer(spec: .adafactor(o), parameterCount: 26, matrices: model.weightMatrices)
        for t in 1...steps { opt.step(parameters: &p, gradient: gradient(t), trainable: mask) }
        return (p, opt)
    }

    let factoredTensors = [(0, 3, 4), (16, 4, 2)]
    let vectorTensors = [12..<16, 24..<26]

    /// Float32 rounding over a few steps stays far below 1e-6 here (updates are ~lr = 0.01);
    /// a wrong factorisation, clip or step size moves parameters by ~1e-3.
    func expectClose(_ a: [Float], _ b: [Double], tol: Double = 1e-6) {
        for (x, y) in zip(a, b) { #expect(abs(Double(x) - y) <= tol, "\(x) vs \(y)") }
    }

    @Test func theModelListsItsWeightMatrices() {
        var rng = RandomSource(seed: 1, stream: "init")
        let model = MLP(spec: spec, rng: &rng)
        #expect(model.weightMatrices == [ParameterMatrix(offset: 0, rows: 3, columns: 4),
                                         ParameterMatrix(offset: 16, rows: 4, columns: 2)])
    }

    @Test func oneStepMatchesTheFloat64Reference() {
        let o = AdafactorOptions(learningRate: 0.01)
        let (p, opt) = run(o, steps: 1)
        expectClose(p, reference(o, matrices: factoredTensors, vectors: vectorTensors, steps: 1))
        // β̂2_1 = 0: R and C are exactly the row and column sums of G² + ε1 (W1's first row by hand).
        let g = gradient(1)
        let row0 = (0..<4).reduce(Float(0)) { $0 + (g[$1] * g[$1] + 1e-30) }
        #expect(abs(opt.second[0] - row0) <= 1e-6 * row0)
        #expect(opt.second.count == 3 + 4 + 4 + 4 + 2 + 2)
        #expect(opt.first.isEmpty)
    }

    @Test func fiveStepsWithMomentumRelativeStepDecayAndClipping() {
        let o = AdafactorOptions(learningRate: 0.01, beta1: 0.9, relativeStep: true, weightDecay: 0.1)
        let (p, _) = run(o, steps: 5)
        expectClose(p, reference(o, matrices: factoredTensors, vectors: vectorTensors, steps: 5))
        // The same steps with an external rate differ (the option matters).
        let (q, _) = run(AdafactorOptions(learningRate: 0.01, beta1: 0.9, weightDecay: 0.1), steps: 5)
        #expect(zip(p, q).contains { abs($0 - $1) > 1e-4 })
    }

    @Test func unfactoredIsPerEntryRMSNormalisedSign() {
        // Without factoring, step 1 has v = g² + ε1, so U = ±1 and RMS(U) = 1: θ moves by exactly lr.
        let o = AdafactorOptions(learningRate: 0.01, factored: false)
        let (p, opt) = run(o, steps: 3)
        expectClose(p, reference(o, matrices: [], vectors: [0..<12, 12..<16, 16..<24, 24..<26], steps: 3))
        #expect(opt.second.count == 26)
        let (p1, _) = run(o, steps: 1)
        for (i, (a, b)) in zip(p1, start()).enumerated() {
            #expect(abs(abs(a - b) - 0.01) < 1e-6, "entry \(i)")
        }
    }

    @Test func frozenEntriesStayExactlyAndAFrozenTensorKeepsItsState() {
        var mask = [Bool](repeating: true, count: 26)
        for i in [1, 5, 9] { mask[i] = false }          // inside W1
        for i in 24..<26 { mask[i] = false }            // the whole of b2
        let o = AdafactorOptions(learningRate: 0.01, beta1: 0.5)
        let (p, opt) = run(o, steps: 4, mask: mask)
        for i in [1, 5, 9, 24, 25] { #expect(p[i] == start()[i]) }
        #expect(Array(opt.second.suffix(2)) == [0, 0])
        expectClose(p, reference(o, matrices: factoredTensors, vectors: vectorTensors, steps: 4, mask: mask))
    }

    @Test func stateBytesByHand() {
        var rng = RandomSource(seed: 1, stream: "init")
        let model = MLP(spec: spec, rng: &rng)
        let m = model.weightMatrices
        // Factored: W1 3+4, b1 4, W2 4+2, b2 2 = 19 floats = 76 bytes; β1 > 0 adds 26 floats.
        #expect(OptimizerSpec.adafactor(AdafactorOptions(learningRate: 0.1)).stateBytes(parameterCount: 26, matrices: m) == 76)
        #expect(OptimizerSpec.adafactor(AdafactorOptions(learningRate: 0.1, beta1: 0.9)).stateBytes(parameterCount: 26, matrices: m) == 180)
        #expect(OptimizerSpec.adafactor(AdafactorOptions(learningRate: 0.1, factored: false)).stateBytes(parameterCount: 26, matrices: m) == 104)
        #expect(OptimizerSpec.adam(learningRate: 0.1).stateBytes(parameterCount: 26, matrices: m) == 208)
        let opt = Optimizer(spec: .adafactor(AdafactorOptions(learningRate: 0.1)), parameterCount: 26, matrices: m)
        #expect(4 * (opt.first.count + opt.second.count) == 76)
    }

    @Test func checkpointRoundTripContinuesBitIdentically() throws {
        let o = AdafactorOptions(learningRate: 0.01, beta1: 0.9)
        var rng = RandomSource(seed: 1, stream: "init")
        let m = MLP(spec: spec, rng: &rng).weightMatrices
        var a = Optimizer(spec: .adafactor(o), parameterCount: 26, matrices: m)
        var p = start()
        for t in 1...2 { a.step(parameters: &p, gradient: gradient(t), trainable: nil) }
        var b = try Optimizer(spec: .adafactor(o), parameterCount: 26, matrices: m, first: a.checkpointFirst,
                              second: a.checkpointSecond, steps: a.steps)
        var q = p
        a.step(parameters: &p, gradient: gradient(3), trainable: nil)
        b.step(parameters: &q, gradient: gradient(3), trainable: nil)
        #expect(p == q && a == b)
    }
}
