/// Which update rule to use and its hyper-parameters (PyTorch's conventions, so that numbers
/// carry over from Avalanche and Mammoth).
///
/// - `sgd`: v ← μ·v + (g + λ·θ); θ ← θ − η·v  (with μ = 0: plain SGD with L2 weight decay).
///   Nesterov: θ ← θ − η·(g + λ·θ + μ·v).
/// - `adam`: coupled L2, g ← g + λ·θ, then Adam with bias correction (Kingma & Ba 2015).
/// - `adamw`: decoupled decay θ ← θ·(1 − η·λ) before the Adam step (Loshchilov & Hutter 2019).
/// - `adafactor`: factored second moments (Shazeer & Stern 2018), see `AdafactorOptions`.
/// - `adam8bit`: Adam with block-wise 8-bit moments (Dettmers et al. 2022), see `Adam8bitOptions`.
public enum OptimizerSpec: Sendable, Equatable, Hashable {
    case sgd(learningRate: Float, momentum: Float = 0, weightDecay: Float = 0, nesterov: Bool = false)
    case adam(learningRate: Float, beta1: Float = 0.9, beta2: Float = 0.999, epsilon: Float = 1e-8, weightDecay: Float = 0)
    case adamw(learningRate: Float, beta1: Float = 0.9, beta2: Float = 0.999, epsilon: Float = 1e-8, weightDecay: Float = 0.01)
    case adafactor(AdafactorOptions)
    case adam8bit(Adam8bitOptions)

    public var learningRate: Float {
        switch self {
        case .sgd(let lr, _, _, _), .adam(let lr, _, _, _, _), .adamw(let lr, _, _, _, _): return lr
        case .adafactor(let o): return o.learningRate
        case .adam8bit(let o): return o.learningRate
        }
    }

    /// The same rule with learning rate `rate` (a schedule's rate for one step).
    public func withLearningRate(_ rate: Float) -> OptimizerSpec {
        switch self {
        case let .sgd(_, m, wd, n): return .sgd(learningRate: rate, momentum: m, weightDecay: wd, nesterov: n)
        case let .adam(_, b1, b2, e, wd): return .adam(learningRate: rate, beta1: b1, beta2: b2, epsilon: e, weightDecay: wd)
        case let .adamw(_, b1, b2, e, wd): return .adamw(learningRate: rate, beta1: b1, beta2: b2, epsilon: e, weightDecay: wd)
        case var .adafactor(o): o.learningRate = rate; return .adafactor(o)
        case var .adam8bit(o): o.learningRate = rate; return .adam8bit(o)
        }
    }

    /// Floats of optimizer state per parameter (momentum, Adam's two moments). Adafactor and
    /// 8-bit Adam keep less than a float per parameter: their count here is the whole floats only
    /// (Adafactor's momentum; 8-bit Adam 0); `stateBytes(parameterCount:matrices:)` is exact.
    public var stateFloatsPerParameter: Int {
        switch self {
        case .sgd(_, let momentum, _, _): return momentum == 0 ? 0 : 1
        case .adam, .adamw: return 2
        case .adafactor(let o): return o.beta1 == 0 ? 0 : 1
        case .adam8bit: return 0
        }
    }

    /// Bytes of optimizer state for `parameterCount` parameters of which `matrices` are weight
    /// matrices (`MLP.weightMatrices`; only Adafactor reads them):
    /// - SGD, Adam, AdamW: 4 · parameters · `stateFloatsPerParameter`
    /// - Adafactor: 4 · (Σ over factored matrices (rows + columns) + parameters outside them),
    ///   + 4 · parameters with β1 > 0. A matrix with one row or column is not factored.
    /// - 8-bit Adam: 2 · parameters (one byte per moment) + 2 · 4 · blocks (a float32 scale per
    ///   moment and block; blocks of at most `blockSize` inside each tensor) + 8 · parameters of
    ///   tensors under `min_8bit_size`, which keep float32 moments.
    public func stateBytes(parameterCount p: Int, matrices: [ParameterMatrix]) -> Int {
        switch self {
        case .sgd, .adam, .adamw: return 4 * p * stateFloatsPerParameter
        case .adafactor(let o):
            return 4 * AdafactorLayout(parameterCount: p, matrices: matrices, factored: o.factored).stateFloats
                + 4 * p * stateFloatsPerParameter
        case .adam8bit(let o): return o.stateBytes(parameterCount: p, matrices: matrices)
        }
    }
}
