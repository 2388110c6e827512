import Testing
@testable import ContinualCore

/// The analytic gradients of every layer, activation and loss match float64 finite differences.
@Suite struct GradientCheckTests {
    struct Case: CustomStringConvertible, Sendable {
        var inputs: Int
        var hidden: [Int]
        var activation: Activation
        var head: OutputHead
        var heads: Int
        var batch: Int
        var description: String { "\(inputs)→\(hidden)→\(head) \(activation) heads=\(heads) batch=\(batch)" }
    }

    static let cases: [Case] = [
        Case(inputs: 10, hidden: [16, 8], activation: .relu, head: .binary, heads: 1, batch: 7),
        Case(inputs: 5, hidden: [9], activation: .tanh, head: .binary, heads: 1, batch: 5),
        Case(inputs: 3, hidden: [17, 8], activation: .sigmoid, head: .multiclass(classes: 4), heads: 1, batch: 6),
        Case(inputs: 4, hidden: [], activation: .relu, head: .multiclass(classes: 3), heads: 1, batch: 9),
        Case(inputs: 6, hidden: [8], activation: .identity, head: .binary, heads: 1, batch: 4),
        Case(inputs: 11, hidden: [24, 7], activation: .tanh, head: .multiclass(classes: 5), heads: 3, batch: 13),
        // Full 6 × 16 register tiles and row tails, 16- and 8-column strips and a 4-column tail,
        // and two 32-column packing blocks of the input gradient (36 inputs to the second layer).
        Case(inputs: 12, hidden: [36, 20], activation: .tanh, head: .multiclass(classes: 3), heads: 1, batch: 14),
    ]

    /// On every kernel path this machine has ("generic" and the fastest, e.g. "avx2-fma").
    @Test(arguments: cases, Kernels.availablePaths)
    func analyticGradientMatchesFiniteDifferences(_ c: Case, _ path: String) {
        Kernels.withPath(path) { check(c) }
    }

    func check(_ c: Case) {
        var rng = RandomSource(seed: 11, stream: c.description)
        let spec = MLPSpec(inputs: c.inputs, hidden: c.hidden, activation: c.activation, head: c.head, heads: c.heads)
        var model = MLP(spec: spec, rng: &rng)
        // Non-zero biases so that bias gradients are exercised away from a special point.
        for i in model.parameters.indices { model.parameters[i] += Float(rng.normal() * 0.05) }
        let xs = (0..<c.batch).map { _ in (0..<c.inputs).map { _ in rng.normal() } }
        let ys = (0..<c.batch).map { _ in Int32(rng.uniformInt(below: c.head.classCount)) }
        let route = c.heads - 1
        let ws = model.makeWorkspace(capacity: 4)  // smaller than the batch: forces a reserve
        var g = [Float](repeating: 0, count: model.parameterCount)
        let flat = xs.flatMap { $0.map(Float.init) }
        let loss = g.withUnsafeMutableBufferPointer { gp in
            model.lossAndGradient(features: flat, labels: ys, count: c.batch, route: route,
                                  scale: 1 / Float(c.batch), workspace: ws, gradient: gp.baseAddress!)
        } / Double(c.batch)

        let reference = ReferenceMLP(model)
        let p = model.parameters.map(Double.init)
        let xsRounded = xs.map { $0.map { Double(Float($0)) } }
        let refLoss = reference.loss(p, xsRounded, ys, route: route)
        #expect(abs(loss - refLoss) <= 1e-5 * max(1, abs(refLoss)), "loss \(loss) vs reference \(refLoss)")
        let numeric = reference.numericalGradient(p, xsRounded, ys, route: route)
        let scale = max(numeric.map(abs).max()!, 1e-3)
        var worst = 0.0
        for i in p.indices { worst = max(worst, abs(Double(g[i]) - numeric[i]) / scale) }
        #expect(worst < 1e-4, "max relative gradient error \(worst)")

        // Parameters of other heads get exactly zero gradient.
        if c.heads > 1 {
            let out = model.layers.last!
            for r in 0..<c.heads where r != route {
                #expect(out.parameterRange(route: r).allSatisfy { g[$0] == 0 })
            }
        }
    }

    @Test func backwardAccumulatesIntoTheGradient() {
        var rng = RandomSource(seed: 3)
        let model = MLP(spec: MLPSpec(inputs: 4, hidden: [8]), rng: &rng)
        let ws = model.makeWorkspace()
        let x: [Float] = (0..<8).map { Float($0) / 8 }
        let y: [Int32] = [1, 0]
        var once = [Float](repeating: 0, count: model.parameterCount)
        var twice = [Float](repeating: 0, count: model.parameterCount)
        once.withUnsafeMutableBufferPointer { g in
            _ = model.lossAndGradient(features: x, labels: y, count: 2, route: 0, scale: 1, workspace: ws, gradient: g.baseAddress!)
        }
        twice.withUnsafeMutableBufferPointer { g in
            for _ in 0..<2 {
                _ = model.lossAndGradient(features: x, labels: y, count: 2, route: 0, scale: 1, workspace: ws, gradient: g.baseAddress!)
            }
        }
        for i in once.indices { #expect(twice[i] == 2 * once[i]) }
    }

    @Test func lossIsStableForHugeLogits() {
        var logits: [Float] = [80, -80, 1e30, -1e30]
        let labels: [Int32] = [1, 0, 0, 1]
        let loss = Loss.lossAndLogitGradient(head: .binary, logits: &logits, labels: labels, count: 4, scale: 1)
        #expect(loss.isFinite)
        #expect(loss > 1e29)  // the two confidently wrong samples cost ≈ |z|
        #expect(abs(logits[0]) < 1e-30 && abs(logits[1]) < 1e-30)
        #expect(logits[2] == 1 && logits[3] == -1)

        var multi: [Float] = [1000, 0, -1000]
        let l2 = Loss.lossAndLogitGradient(head: .multiclass(classes: 3), logits: &multi, labels: [Int32(2)], count: 1, scale: 1)
        #expect(abs(l2 - 2000) < 1e-3)
        #expect(abs(multi[0] - 1) < 1e-6 && abs(multi[2] + 1) < 1e-6)
    }
}
