/// Capability: moves the point at which the data losses' gradient is taken (quantisation-aware
/// training takes it at the fake-quantised weights).
///
/// `willComputeGradient` runs before the forward pass (list order), `didComputeGradient` right
/// after the backward pass, in reverse list order, and must restore what the first changed
/// (the straight-through estimator applies the gradient to the restored float parameters).
/// `didComputeGradient` receives the data losses' gradient (task loss and batch-loss terms, no
/// penalty yet) to apply the transform's chain rule in place before any penalty is added.
public protocol GradientPointTransform: StrategyPlugin {
    mutating func willComputeGradient(model: inout MLP)
    mutating func didComputeGradient(model: inout MLP, gradient: UnsafeMutableBufferPointer<Float>)
}
