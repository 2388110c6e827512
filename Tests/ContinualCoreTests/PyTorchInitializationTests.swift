@testable import ContinualCore
import Testing

/// `init: "pytorch"` draws weights and biases of every dense layer from U(±1/√fan_in), as
/// PyTorch's `nn.Linear` does.
@Suite struct PyTorchInitializationTests {
    @Test func weightsAndBiasesAreUniformWithinOneOverRootFanIn() {
        let spec = MLPSpec(inputs: 64, hidden: [256, 32], head: .multiclass(classes: 10), initialization: .pytorch)
        var rng = RandomSource(seed: 5)
        let model = MLP(spec: spec, rng: &rng)
        for layer in model.layers {
            let bound = 1 / Float(layer.inputs).squareRoot()
            let w = model.parameters[layer.weightOffset(route: 0)..<(layer.weightOffset(route: 0) + layer.inputs * layer.outputs)]
            let b = model.parameters[layer.biasRange(route: 0)]
            for values in [Array(w), Array(b)] {
                #expect(values.allSatisfy { abs($0) <= bound })
                // U(−a, a): mean 0, variance a²/3 (within 5 standard errors for these sample sizes).
                let n = Double(values.count)
                let mean = values.reduce(0.0) { $0 + Double($1) } / n
                let variance = values.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / n
                let a = Double(bound)
                #expect(abs(mean) < 5 * a / (3 * n).squareRoot())
                #expect(abs(variance - a * a / 3) < 5 * (a * a) * (4.0 / (45 * n)).squareRoot())
            }
            #expect(b.contains { $0 != 0 })
        }
        // The other schemes keep biases at zero.
        var rng2 = RandomSource(seed: 5)
        let he = MLP(spec: MLPSpec(inputs: 64, hidden: [256, 32], head: .multiclass(classes: 10)), rng: &rng2)
        #expect(he.layers.allSatisfy { l in he.parameters[l.biasRange(route: 0)].allSatisfy { $0 == 0 } })
    }
}
