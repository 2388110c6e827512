/// Analytic FLOP counts of one sample through the network (the conventions of the cost model:
/// a multiply-add is 2 FLOPs; a bias add is 1 FLOP per unit; activations cost
/// `Activation.flopsPerUnit`; the loss is not counted. Backward through a dense layer costs
/// 2·in·out for ∂W, out for ∂b, 2·in·out for ∂x (skipped for the first layer), plus activation
/// derivatives (1 per unit for ReLU, 2 for tanh/sigmoid). Per route only one copy of a
/// multi-copy layer is used.) Plugins use them to report their extra work.
extension MLP {
    /// FLOPs of one forward pass of one sample.
    public var flopsPerPrediction: Int {
        layers.reduce(0) { sum, layer in
            sum + 2 * layer.multiplyAddsPerSample + layer.outputs + layer.activation.flopsPerUnit * layer.outputs
        }
    }

    /// FLOPs of forward + backward for one sample (without the optimizer).
    public var flopsPerTrainingSample: Int {
        var backward = 0
        for (l, layer) in layers.enumerated() {
            let macs = layer.multiplyAddsPerSample
            let activationDerivative = layer.activation == .identity ? 0 : (layer.activation == .relu ? 1 : 2)
            backward += 2 * macs + layer.outputs + activationDerivative * layer.outputs + (l > 0 ? 2 * macs : 0)
        }
        return flopsPerPrediction + backward
    }
}
