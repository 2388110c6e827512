import Testing
@testable import ContinualCore

/// Unit gates (the activation hook): y = act(z) ⊙ g. The gradients with respect to the weights
/// and to the gates match finite differences for every activation, and gates of 1 change nothing.
@Suite struct UnitGatesTests {
    static func setup(_ activation: Activation) -> (MLP, [Float], [Int32], UnitGates) {
        var rng = RandomSource(seed: 5, stream: activation.rawValue)
        let spec = MLPSpec(inputs: 4, hidden: [6, 5], activation: activation, head: .multiclass(classes: 3))
        var model = MLP(spec: spec, rng: &rng)
        for i in model.parameters.indices { model.parameters[i] += Float(rng.normal() * 0.1) }
        let x = (0..<(5 * 4)).map { _ in Float(rng.normal()) }
        let y: [Int32] = [0, 1, 2, 1, 0]
        var gates = UnitGates(model: model, layers: [0, 1])
        for i in gates.values.indices { gates.values[i] = Float(rng.uniform(0.2, 1)) }
        return (model, x, y, gates)
    }

    /// Σ cross-entropy over the batch with `gates`.
    static func loss(_ model: MLP, _ x: [Float], _ y: [Int32], _ gates: UnitGates) -> Double {
        let ws = model.makeWorkspace(capacity: 8)
        model.forward(x, count: y.count, route: 0, workspace: ws, gates: gates)
        return Loss.lossAndLogitGradient(head: model.spec.head, logits: ws.logits, labels: y, count: y.count, scale: 1)
    }

    static func gradients(_ model: MLP, _ x: [Float], _ y: [Int32], _ gates: UnitGates?) -> ([Float], [Float]) {
        let ws = model.makeWorkspace(capacity: 8)
        var g = [Float](repeating: 0, count: model.parameterCount)
        var gg = [Float](repeating: 0, count: gates?.count ?? 0)
        model.forward(x, count: y.count, route: 0, workspace: ws, gates: gates)
        _ = Loss.lossAndLogitGradient(head: model.spec.head, logits: ws.logits, labels: y, count: y.count, scale: 1)
        g.withUnsafeMutableBufferPointer { gp in
            gg.withUnsafeMutableBufferPointer { ggp in
                model.backward(logitGradient: ws.logits, count: y.count, route: 0, workspace: ws, gradient: gp.baseAddress!,
                               gates: gates, gateGradient: ggp.baseAddress)
            }
        }
        return (g, gg)
    }

    @Test(arguments: [Activation.relu, .tanh, .sigmoid])
    func gateAndWeightGradientsMatchFiniteDifferences(_ activation: Activation) {
        let (model, x, y, gates) = Self.setup(activation)
        let (g, gg) = Self.gradients(model, x, y, gates)
        let h: Float = 1e-2
        var worstGate = 0.0
        for i in gates.values.indices {
            var up = gates, down = gates
            up.values[i] += h
            down.values[i] -= h
            let numeric = (Self.loss(model, x, y, up) - Self.loss(model, x, y, down)) / Double(2 * h)
            worstGate = max(worstGate, abs(numeric - Double(gg[i])) / max(1, abs(numeric)))
        }
        #expect(worstGate < 2e-3, "gate gradient error \(worstGate)")
        var worst = 0.0
        for i in stride(from: 0, to: model.parameterCount, by: 3) {
            var up = model, down = model
            up.parameters[i] += h
            down.parameters[i] -= h
            let numeric = (Self.loss(up, x, y, gates) - Self.loss(down, x, y, gates)) / Double(2 * h)
            worst = max(worst, abs(numeric - Double(g[i])) / max(1, abs(numeric)))
        }
        // ReLU's kink: a difference step may cross it for a few weights (error O(h)); a wrong
        // chain rule (derivative at the gated output, a missing gate factor) gives errors O(1).
        #expect(worst < (activation == .relu ? 1e-2 : 2e-3), "weight gradient error \(worst)")
    }

    @Test func gatesOfOneChangeNothing() {
        let (model, x, y, gates) = Self.setup(.tanh)
        var ones = gates
        for i in ones.values.indices { ones.values[i] = 1 }
        #expect(Self.gradients(model, x, y, ones).0 == Self.gradients(model, x, y, nil).0)
        #expect(Self.loss(model, x, y, ones) == Self.loss(model, x, y, UnitGates(model: model, layers: [])))
    }

    @Test func aClosedGateSilencesItsUnit() {
        let (model, x, y, gates) = Self.setup(.sigmoid)
        var closed = gates
        closed.values[2] = 0   // unit 2 of layer 0
        let (g, _) = Self.gradients(model, x, y, closed)
        // No gradient reaches the weights into the closed unit (its output is multiplied by 0).
        let w = model.layers[0].weightOffset(route: 0)
        for j in 0..<model.layers[0].inputs { #expect(g[w + j * model.layers[0].outputs + 2] == 0) }
        #expect(closed.offset(ofLayer: 1) == 6 && closed.offset(ofLayer: 2) == nil)
    }
}
