/// Which update rule to use and its hyper-parameters (PyTorch's conventions, so that numbers
/// carry over from Avalanche and Mammoth).
///
/// - `sgd`: v ← μ·v + (g + λ·θ); θ ← θ − η·v  (with μ = 0: plain SGD with L2 weight decay).
///   Nesterov: θ ← θ − η·(g + λ·θ + μ·v).
/// - `adam`: coupled L2, g ← g + λ·θ, then Adam with bias correction (Kingma & Ba 2015).
/// - `adamw`: decoupled decay θ ← θ·(1 − η·λ) before the Adam step (Loshchilov & Hutter 2019).
public enum OptimizerSpec: Sendable, Equatable, Hashable {
    case sgd(learningRate: Float, momentum: Float = 0, weightDecay: Float = 0, nesterov: Bool = false)
    case adam(learningRate: Float, beta1: Float = 0.9, beta2: Float = 0.999, epsilon: Float = 1e-8, weightDecay: Float = 0)
    case adamw(learningRate: Float, beta1: Float = 0.9, beta2: Float = 0.999, epsilon: Float = 1e-8, weightDecay: Float = 0.01)

    public var learningRate: Float {
        switch self {
        case .sgd(let lr, _, _, _), .adam(let lr, _, _, _, _), .adamw(let lr, _, _, _, _): return lr
        }
    }

    /// The same rule with learning rate `rate` (a schedule's rate for one step).
    public func withLearningRate(_ rate: Float) -> OptimizerSpec {
        switch self {
        case let .sgd(_, m, wd, n): return .sgd(learningRate: rate, momentum: m, weightDecay: wd, nesterov: n)
        case let .adam(_, b1, b2, e, wd): return .adam(learningRate: rate, beta1: b1, beta2: b2, epsilon: e, weightDecay: wd)
        case let .adamw(_, b1, b2, e, wd): return .adamw(learningRate: rate, beta1: b1, beta2: b2, epsilon: e, weightDecay: wd)
        }
    }

    /// Floats of optimizer state per parameter (momentum, Adam's two moments).
    public var stateFloatsPerParameter: Int {
        switch self {
        case .sgd(_, let momentum, _, _): return momentum == 0 ? 0 : 1
        case .adam, .adamw: return 2
        }
    }
}
