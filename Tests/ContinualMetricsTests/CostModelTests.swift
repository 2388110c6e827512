import Testing
import ContinualCore
import ContinualMetrics

@Suite struct CostModelTests {
    @Test func seedModelCostsMatchAHandCount() {
        var rng = RandomSource(seed: 1)
        let model = MLP(spec: MLPSpec(inputs: 10, hidden: [16, 8], activation: .relu, head: .binary), rng: &rng)
        let c = CostModel(model: model, optimizer: Optimizer(spec: .sgd(learningRate: 0.1, momentum: 0.9), parameterCount: model.parameterCount))
        #expect(c.totalParameters == 176 + 136 + 9)
        #expect(c.modelBytes == 321 * 4)
        // forward: 2·in·out + out (bias) + out (ReLU) per hidden layer; output layer identity.
        let forward = (2 * 160 + 16 + 16) + (2 * 128 + 8 + 8) + (2 * 8 + 1)
        #expect(c.flopsPerPrediction == forward)
        // backward: ∂W 2·in·out + ∂b out + act' out, plus ∂x 2·in·out for every layer but the first.
        let backward = (2 * 160 + 16 + 16) + (2 * 128 + 8 + 8 + 2 * 128) + (2 * 8 + 1 + 0 + 2 * 8)
        #expect(c.flopsPerTrainingSample == forward + backward)
        #expect(c.flopsPerOptimizerStep == 4 * 321)  // SGD with momentum: 4 FLOPs per parameter
    }
}
