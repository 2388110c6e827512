import Testing
@testable import ContinualCore

/// Int8 post-training quantisation stays within its documented error bound.
@Suite struct QuantizedMLPTests {
    @Test(arguments: QuantizedMLP.Granularity.allCases)
    func outputsStayWithinTheIntervalBound(_ granularity: QuantizedMLP.Granularity) {
        var rng = RandomSource(seed: 21)
        for activation in [Activation.relu, .tanh, .sigmoid] {
            let model = MLP(spec: MLPSpec(inputs: 10, hidden: [16, 8], activation: activation, head: .binary), rng: &rng)
            let q = QuantizedMLP(model, granularity: granularity)
            let ws = model.makeWorkspace(capacity: 1)
            for _ in 0..<200 {
                let x = (0..<10).map { _ in Float(rng.normal()) }
                model.forward(x, count: 1, route: 0, workspace: ws)
                let float = Double(ws.logits[0])
                let int8 = Double(q.logits(x, route: 0)[0])
                let bound = q.outputErrorBound(x, model: model, route: 0)[0]
                #expect(abs(int8 - float) <= bound * (1 + 1e-5) + 1e-6, "\(activation): |Δ| \(abs(int8 - float)) > bound \(bound)")
                #expect(bound < 2)   // worst case over all rounding directions; actual errors are far smaller
            }
        }
    }

    @Test func weightsRoundTripWithinHalfAStep() {
        var rng = RandomSource(seed: 5)
        let model = MLP(spec: MLPSpec(inputs: 6, hidden: [9], head: .multiclass(classes: 3), heads: 2), rng: &rng)
        let q = QuantizedMLP(model, granularity: .perChannel)
        var w = 0, s = 0
        for layer in model.layers {
            for copy in 0..<layer.copies {
                let base = layer.weightOffset(route: copy)
                for k in 0..<layer.inputs {
                    for j in 0..<layer.outputs {
                        let original = model.parameters[base + k * layer.outputs + j]
                        let restored = Float(q.weights[w + k * layer.outputs + j]) * q.scales[s + j]
                        #expect(abs(original - restored) <= q.scales[s + j] / 2 * 1.0001)
                    }
                }
                w += layer.inputs * layer.outputs
                s += layer.outputs
            }
        }
        #expect(q.weights.contains(127) || q.weights.contains(-127))  // the largest weight maps to ±127
    }

    @Test func bytesAreAboutAQuarterOfFloat() {
        var rng = RandomSource(seed: 1)
        let model = MLP(spec: MLPSpec(inputs: 10, hidden: [16, 8]), rng: &rng)
        let perTensor = QuantizedMLP(model, granularity: .perTensor)
        let perChannel = QuantizedMLP(model, granularity: .perChannel)
        // 296 int8 weights + 25 float biases + 3 (tensor) or 25 (channel) float scales.
        #expect(perTensor.modelBytes == 296 + 4 * 25 + 4 * 3)
        #expect(perChannel.modelBytes == 296 + 4 * 25 + 4 * 25)
        #expect(perTensor.modelBytes < model.parameterCount * 4 / 2)
    }

    @Test func zeroLayerQuantisesWithoutDividingByZero() {
        var rng = RandomSource(seed: 1)
        var model = MLP(spec: MLPSpec(inputs: 3, hidden: [4]), rng: &rng)
        for i in model.parameters.indices { model.parameters[i] = 0 }
        let q = QuantizedMLP(model, granularity: .perChannel)
        #expect(q.logits([1, 2, 3], route: 0) == [0])
        #expect(q.weights.allSatisfy { $0 == 0 })
    }
}
