import CContinualKernels

/// Element-wise nonlinearity of a dense layer.
///
/// Each derivative is expressed through the layer's *output* y (ReLU: y > 0, tanh: 1 − y²,
/// sigmoid: y(1 − y)), so the backward pass needs no stored pre-activations.
public enum Activation: String, Sendable, Codable, CaseIterable, Equatable {
    case relu, tanh, sigmoid, identity

    /// Applies the activation in place to `count` values.
    @inline(__always)
    public func apply(_ values: UnsafeMutablePointer<Float>, count: Int) {
        switch self {
        case .identity:
            return
        case .relu:
            ck_relu_forward(values, count)  // max(v, 0), branch-free (bit-identical)
        case .tanh:
            for i in 0..<count { values[i] = _tanhf(values[i]) }
        case .sigmoid:
            for i in 0..<count { values[i] = Activation.sigmoid(values[i]) }
        }
    }

    /// Multiplies the upstream gradient `grad` by the derivative, given the outputs `y`.
    @inline(__always)
    public func backward(outputs y: UnsafePointer<Float>, gradient grad: UnsafeMutablePointer<Float>, count: Int) {
        switch self {
        case .identity:
            return
        case .relu:
            ck_relu_backward(y, grad, count)  // y > 0 ? grad : 0, branch-free (bit-identical)
        case .tanh:
            for i in 0..<count { grad[i] *= 1 - y[i] * y[i] }
        case .sigmoid:
            for i in 0..<count { grad[i] *= y[i] * (1 - y[i]) }
        }
    }

    /// Numerically safe logistic function (no overflow for large |x|).
    @inline(__always)
    public static func sigmoid(_ x: Float) -> Float {
        if x >= 0 {
            return 1 / (1 + _expf(-x))
        } else {
            let e = _expf(x)
            return e / (1 + e)
        }
    }

    /// FLOPs counted for one activation of one unit (a convention; see `CostModel`).
    public var flopsPerUnit: Int {
        switch self {
        case .identity: return 0
        case .relu: return 1
        case .tanh, .sigmoid: return 4
        }
    }
}
