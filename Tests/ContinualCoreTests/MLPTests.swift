import Testing
@testable import ContinualCore

/// Layout, initialisation and evaluation behaviour of the flat-vector MLP.
@Suite struct MLPTests {
    @Test func parameterLayoutIsContiguousLayerByLayer() {
        var rng = RandomSource(seed: 1)
        let model = MLP(spec: MLPSpec(inputs: 10, hidden: [16, 8], head: .binary, heads: 3), rng: &rng)
        #expect(model.parameterCount == (10 * 16 + 16) + (16 * 8 + 8) + 3 * (8 * 1 + 1))
        #expect(model.layers.map(\.offset) == [0, 176, 312])
        #expect(model.layers[2].weightOffset(route: 2) == 312 + 2 * 9)
        #expect(model.layers[2].biasOffset(route: 1) == 312 + 9 + 8)
        #expect(model.routeCount == 3)
    }

    @Test func initialisationIsSeededAndFollowsTheDocumentedScales() {
        var a = RandomSource(seed: 4), b = RandomSource(seed: 4)
        let spec = MLPSpec(inputs: 200, hidden: [300], activation: .relu, head: .multiclass(classes: 100))
        let m1 = MLP(spec: spec, rng: &a), m2 = MLP(spec: spec, rng: &b)
        #expect(m1.parameters == m2.parameters)
        let l0 = m1.layers[0]
        let w0 = m1.parameters[l0.weightOffset(route: 0)..<l0.biasOffset(route: 0)].map(Double.init)
        let var0 = w0.map { $0 * $0 }.reduce(0, +) / Double(w0.count)
        #expect(abs(var0 - 2.0 / 200) / (2.0 / 200) < 0.05)  // He: Var = 2/fan_in
        let l1 = m1.layers[1]
        let w1 = m1.parameters[l1.weightOffset(route: 0)..<l1.biasOffset(route: 0)].map(Double.init)
        let a1 = (6.0 / 400).squareRoot()
        #expect(w1.allSatisfy { abs($0) <= a1 })  // Xavier uniform bound for the output layer
        #expect(m1.parameters[l0.biasRange(route: 0)].allSatisfy { $0 == 0 })
    }

    @Test func kernelsHandleEveryStripAndTailShape() {
        // Output widths around the SIMD8 strip size and batches around the 4-row block.
        for outputs in [1, 7, 8, 9, 16, 17] {
            for batch in [1, 3, 4, 5, 9] {
                var rng = RandomSource(seed: UInt64(outputs * 100 + batch))
                let model = MLP(spec: MLPSpec(inputs: 5, hidden: [outputs], activation: .identity,
                                              head: .multiclass(classes: 3)), rng: &rng)
                let x = (0..<(batch * 5)).map { _ in Float(rng.normal()) }
                let ws = model.makeWorkspace(capacity: 2)
                model.forward(x, count: batch, route: 0, workspace: ws)
                let ref = ReferenceMLP(model)
                let p = model.parameters.map(Double.init)
                for s in 0..<batch {
                    let z = ref.logits(p, x[(s * 5)..<((s + 1) * 5)].map(Double.init), route: 0)
                    for j in 0..<3 { #expect(abs(Double(ws.logits[s * 3 + j]) - z[j]) < 1e-4) }
                }
            }
        }
    }

    @Test func emptyTestSetHasUndefinedAccuracy() {
        var rng = RandomSource(seed: 1)
        let model = MLP(spec: MLPSpec(inputs: 3, hidden: [4]), rng: &rng)
        #expect(model.accuracy(on: Samples(dimension: 3), route: 0, workspace: model.makeWorkspace()).isNaN)
    }

    @Test func accuracyCountsCorrectPredictionsAcrossChunks() {
        var rng = RandomSource(seed: 1)
        var model = MLP(spec: MLPSpec(inputs: 1, hidden: [], head: .binary), rng: &rng)
        model.parameters = [1, 0]  // logit = x: predicts 1 iff x > 0
        let xs: [Float] = (0..<10).map { Float($0) - 4.5 }
        let ys: [Int32] = [0, 0, 0, 0, 0, 1, 1, 1, 0, 0]  // last two are wrong
        let acc = model.accuracy(on: Samples(dimension: 1, features: xs, labels: ys), route: 0,
                                 workspace: model.makeWorkspace(capacity: 3))
        #expect(acc == 0.8)
    }
}
