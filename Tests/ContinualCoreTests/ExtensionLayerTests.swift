import Testing
@testable import ContinualCore

/// Adapter and LoRA layers: gradients against central finite differences, identity at
/// initialisation, layout (plain prefix, hand-counted sizes) and route-stride copy selection.
@Suite struct ExtensionLayerTests {
    /// Σ loss over the batch (float64), computed by a fresh forward pass.
    static func loss(_ model: MLP, _ x: [Float], _ y: [Int32], route: Int, ws: Workspace) -> Double {
        model.forward(x, count: y.count, route: route, workspace: ws)
        return Loss.lossAndLogitGradient(head: model.spec.head, logits: ws.logits, labels: y, count: y.count, scale: 1)
    }

    /// Largest violation of |numeric − analytic| ≤ 2e-3 + 2e-2·|analytic| over all parameters,
    /// and the number of parameters with a non-zero analytic gradient.
    static func gradientCheck(_ model: MLP, route: Int, seed: UInt64 = 1) -> (violation: Double, nonZero: Int, gradient: [Float]) {
        var rng = RandomSource(seed: seed, stream: "gradcheck")
        let n = 7
        let x = (0..<(n * model.spec.inputs)).map { _ in Float(rng.normal()) }
        let y = (0..<n).map { _ in Int32(rng.uniformInt(below: model.spec.head.classCount)) }
        let ws = model.makeWorkspace(capacity: 16)
        var g = [Float](repeating: 0, count: model.parameterCount)
        g.withUnsafeMutableBufferPointer { gp in
            _ = model.lossAndGradient(features: x, labels: y, count: n, route: route, scale: 1, workspace: ws,
                                      gradient: gp.baseAddress!)
        }
        var worst = 0.0
        var probe = model
        for i in 0..<model.parameterCount {
            let p = model.parameters[i]
            let eps: Float = 1e-2
            probe.parameters[i] = p + eps
            let up = loss(probe, x, y, route: route, ws: ws)
            let hi = Double(probe.parameters[i])
            probe.parameters[i] = p - eps
            let down = loss(probe, x, y, route: route, ws: ws)
            let lo = Double(probe.parameters[i])
            probe.parameters[i] = p
            let numeric = (up - down) / (hi - lo)
            let analytic = Double(g[i])
            worst = max(worst, abs(numeric - analytic) - (2e-3 + 2e-2 * abs(analytic)))
        }
        return (worst, g.lazy.filter { $0 != 0 }.count, g)
    }

    /// A model of `spec` with every parameter random (so W_up and B are non-zero, and gradients
    /// reach W_down and A).
    static func randomized(_ spec: MLPSpec, seed: UInt64 = 3) -> MLP {
        var rng = RandomSource(seed: seed, stream: "params")
        var model = MLP(spec: spec, rng: &rng)
        for i in model.parameters.indices { model.parameters[i] = Float(rng.normal() * 0.6) }
        return model
    }

    @Test(arguments: Kernels.availablePaths)
    func denseGradientMatchesFiniteDifferences(_ path: String) {
        let spec = MLPSpec(inputs: 5, hidden: [6, 4], activation: .tanh, head: .multiclass(classes: 3))
        let check = Kernels.withPath(path) { Self.gradientCheck(Self.randomized(spec), route: 0) }
        #expect(check.violation <= 0, "dense gradient off by \(check.violation)")
        #expect(check.nonZero == spec.parameterCount)
    }

    @Test func adapterGradientMatchesFiniteDifferences() {
        let spec = MLPSpec(inputs: 5, hidden: [6, 4], activation: .tanh, head: .multiclass(classes: 3), heads: 2,
                           adapters: [.init(after: 0, bottleneck: 3, activation: .tanh, copies: 2),
                                      .init(after: 1, bottleneck: 2, activation: .sigmoid, copies: 2)])
        let model = Self.randomized(spec)
        for route in 0..<2 {
            let check = Self.gradientCheck(model, route: route)
            #expect(check.violation <= 0, "adapter gradient (route \(route)) off by \(check.violation)")
            // The other route's adapter copies and head get exactly no gradient.
            let other = 1 - route
            for layer in model.layers where layer.copies > 1 {
                #expect(layer.parameterRange(route: other).allSatisfy { check.gradient[$0] == 0 })
                #expect(layer.parameterRange(route: route).contains { check.gradient[$0] != 0 })
            }
        }
    }

    @Test func loraGradientMatchesFiniteDifferences() {
        // Context-style layout: 2 LoRA copies with route stride 3 (route = context·3 + task).
        let spec = MLPSpec(inputs: 5, hidden: [6, 4], activation: .tanh, head: .binary,
                           lowRank: [.init(layer: 0, rank: 2, alpha: 3, copies: 2, routeStride: 3),
                                     .init(layer: 2, rank: 1, alpha: 1, copies: 2, routeStride: 3)])
        let model = Self.randomized(spec)
        let check = Self.gradientCheck(model, route: 4)    // context 1, task 1
        #expect(check.violation <= 0, "LoRA gradient off by \(check.violation)")
        for layer in model.layers where layer.lowRank != nil {
            #expect(layer.lowRankRange(route: 0).allSatisfy { check.gradient[$0] == 0 })
            #expect(layer.lowRankRange(route: 4).allSatisfy { check.gradient[$0] != 0 })
        }
    }

    @Test func adapterAndLoRATogetherMatchFiniteDifferences() {
        let spec = MLPSpec(inputs: 4, hidden: [5, 3], activation: .sigmoid, head: .multiclass(classes: 2),
                           adapters: [.init(after: 1, bottleneck: 2, activation: .tanh, copies: 3)],
                           lowRank: [.init(layer: 1, rank: 2, alpha: 4, copies: 3)])
        let check = Self.gradientCheck(Self.randomized(spec, seed: 9), route: 2, seed: 5)
        #expect(check.violation <= 0, "combined gradient off by \(check.violation)")
    }

    /// A wrong derivative must be caught: the check is not vacuous.
    @Test func gradientCheckDetectsAWrongGradient() {
        let spec = MLPSpec(inputs: 4, hidden: [3], activation: .tanh, head: .binary,
                           adapters: [.init(after: 0, bottleneck: 2, activation: .tanh, copies: 1)])
        let model = Self.randomized(spec)
        var check = Self.gradientCheck(model, route: 0)
        #expect(check.violation <= 0)
        // Recompute the worst error against a gradient with one adapter entry doubled.
        let i = model.layers[1].adapterOffsets(route: 0).wDown
        check.gradient[i] *= 2
        var rng = RandomSource(seed: 1, stream: "gradcheck")
        let x = (0..<(7 * 4)).map { _ in Float(rng.normal()) }
        let y = (0..<7).map { _ in Int32(rng.uniformInt(below: 2)) }
        let ws = model.makeWorkspace(capacity: 16)
        var probe = model
        probe.parameters[i] += 1e-2
        let up = Self.loss(probe, x, y, route: 0, ws: ws)
        probe.parameters[i] -= 2e-2
        let down = Self.loss(probe, x, y, route: 0, ws: ws)
        let numeric = (up - down) / 2e-2
        #expect(abs(numeric - Double(check.gradient[i])) > 2e-3 + 2e-2 * abs(numeric))
    }

    @Test func loraWithZeroBAndFreshAdaptersEqualTheBaseModel() {
        let plain = MLPSpec(inputs: 10, hidden: [16, 8], head: .multiclass(classes: 3), heads: 3)
        var rng = RandomSource(seed: 11, stream: "init")
        let base = MLP(spec: plain, rng: &rng)
        var extended = plain
        extended.lowRank = [.init(layer: 0, rank: 3, alpha: 6, copies: 3), .init(layer: 2, rank: 2, alpha: 2, copies: 3)]
        extended.adapters = [.init(after: 0, bottleneck: 4, copies: 3), .init(after: 1, bottleneck: 4, copies: 3)]
        var erng = RandomSource(seed: 5, stream: "plugin")
        let model = MLP(extending: base, to: extended, rng: &erng)
        #expect(Array(model.parameters.prefix(base.parameterCount)) == base.parameters)
        // A is random (non-zero), B = 0; W_down random, W_up = 0.
        let lora = model.layers[0]
        #expect(lora.lowRankRange(route: 1).prefix(lora.inputs * 3).contains { model.parameters[$0] != 0 })
        let o = lora.lowRankOffsets(route: 1)
        #expect((o.b..<(o.b + 3 * lora.outputs)).allSatisfy { model.parameters[$0] == 0 })

        var drng = RandomSource(seed: 2, stream: "data")
        let n = 50
        let x = (0..<(n * 10)).map { _ in Float(drng.normal()) }
        let wsA = base.makeWorkspace(capacity: n), wsB = model.makeWorkspace(capacity: n)
        for route in 0..<3 {
            base.forward(x, count: n, route: route, workspace: wsA)
            model.forward(x, count: n, route: route, workspace: wsB)
            let a = Array(UnsafeBufferPointer(start: wsA.logits, count: n * 3))
            let b = Array(UnsafeBufferPointer(start: wsB.logits, count: n * 3))
            #expect(a == b, "route \(route): extended model differs from the base model")
        }
        // And once B is non-zero, the outputs differ (the LoRA path is live).
        var changed = model
        changed.parameters[o.b] = 0.5
        changed.forward(x, count: n, route: 1, workspace: wsB)
        base.forward(x, count: n, route: 1, workspace: wsA)
        #expect(Array(UnsafeBufferPointer(start: wsA.logits, count: n * 3)) != Array(UnsafeBufferPointer(start: wsB.logits, count: n * 3)))
    }

    @Test func extendedSpecDrawsThePlainDenseWeightsFirst() {
        let plain = MLPSpec(inputs: 10, hidden: [16, 8])
        var extended = plain
        extended.adapters = [.init(after: 1, bottleneck: 4, copies: 5)]
        extended.lowRank = [.init(layer: 0, rank: 2, alpha: 2, copies: 5)]
        var r1 = RandomSource(seed: 7, stream: "init"), r2 = RandomSource(seed: 7, stream: "init")
        let a = MLP(spec: plain, rng: &r1), b = MLP(spec: extended, rng: &r2)
        #expect(Array(b.parameters.prefix(a.parameterCount)) == a.parameters)
        #expect(extended.plain == plain)
        #expect(b.routeCount == 5)
    }

    @Test func parameterCountsMatchAHandCount() {
        // 10→16→8→1: 10·16+16 + 16·8+8 + 8·1+1 = 176 + 136 + 9 = 321.
        let plain = MLPSpec(inputs: 10, hidden: [16, 8])
        #expect(plain.parameterCount == 321)
        // Adapters r = 4 after both hidden layers, 5 copies: (16·4+4+4·16+16) + (8·4+4+4·8+8) = 148 + 76.
        var adapters = plain
        adapters.adapters = [.init(after: 0, bottleneck: 4, copies: 5), .init(after: 1, bottleneck: 4, copies: 5)]
        #expect(adapters.parameterCount == 321 + 5 * (148 + 76))
        let layers = adapters.layers()
        #expect(layers.map(\.parametersPerCopy) == [176, 148, 136, 76, 9])
        #expect(layers[1].offset == 321 && layers[3].offset == 321 + 5 * 148)
        // LoRA rank 2 on all three dense layers: 2·(10+16) + 2·(16+8) + 2·(8+1) = 118 per copy.
        var lora = plain
        lora.lowRank = (0..<3).map { .init(layer: $0, rank: 2, alpha: 2, copies: 5) }
        #expect(lora.parameterCount == 321 + 5 * 118)
    }

    @Test func routeStrideSelectsCopies() {
        let layer = Layer(kind: .adapter(bottleneck: 2, activation: .relu), inputs: 4, outputs: 4, activation: .identity,
                          copies: 2, offset: 100, routeStride: 5)
        #expect((0..<10).map { layer.copyIndex(route: $0) } == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
        #expect(layer.weightOffset(route: 7) == 100 + layer.parametersPerCopy)
        let head = Layer(inputs: 4, outputs: 1, activation: .identity, copies: 5)
        #expect(head.copyIndex(route: 7) == 2)
    }
}
