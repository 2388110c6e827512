import ContinualCore

/// Analytic compute and memory costs of a model, counted from its layer sizes.
///
/// Conventions (stated so numbers can be compared): a multiply-add is 2 FLOPs; a bias add is
/// 1 FLOP per unit; activations cost `Activation.flopsPerUnit` (ReLU 1, tanh/sigmoid 4); the
/// loss is not counted. Backward through a dense layer costs 2·in·out for ∂W, out for ∂b,
/// 2·in·out for ∂x (skipped for the first layer), plus activation derivatives (1 per unit for
/// ReLU, 2 for tanh/sigmoid). Per route only one copy of a multi-copy layer is used.
public struct CostModel: Sendable, Equatable {
    public var totalParameters: Int
    public var trainableParameters: Int
    /// float32 weights and biases, all copies.
    public var modelBytes: Int
    public var flopsPerPrediction: Int
    /// Forward + backward for one sample, without the optimizer.
    public var flopsPerTrainingSample: Int
    /// Optimizer update of all trainable parameters (once per step).
    public var flopsPerOptimizerStep: Int

    public init(model: MLP, optimizer: Optimizer) {
        totalParameters = model.parameterCount
        trainableParameters = model.trainableCount
        modelBytes = model.parameterCount * MemoryLayout<Float>.size
        flopsPerPrediction = model.flopsPerPrediction
        flopsPerTrainingSample = model.flopsPerTrainingSample
        flopsPerOptimizerStep = optimizer.flopsPerParameter * model.trainableCount
    }

    /// FLOPs per training sample including the optimizer's share at batch size `batch`.
    public func flopsPerTrainingSample(batch: Int) -> Double {
        Double(flopsPerTrainingSample) + Double(flopsPerOptimizerStep) / Double(max(batch, 1))
    }
}
