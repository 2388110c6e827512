/// Hyper-parameters of Adafactor (Shazeer & Stern 2018, Algorithms 4 and 5).
///
/// For a weight matrix G (r × c) the second moment is kept as its row sums R (r floats) and
/// column sums C (c floats) of G² + ε1, each an exponential moving average with
/// β̂2_t = 1 − t^decayRate; V̂ = R·Cᵀ / Σ R (the rank-1 approximation that minimises the
/// I-divergence). Vectors (biases, and matrices when `factored` is false) keep the full v.
/// Per tensor: U = G / √V̂; Û = U / max(1, RMS(U)/d) (update clipping); θ ← θ − α·Û.
///
/// Choices (the paper leaves them open or this toolkit fixes them; each is an option):
/// - `relativeStep` false (default): α_t = the run's learning rate (so schedules apply as for
///   SGD/Adam). True: the paper's relative step α_t = max(ε2, RMS(θ_{t−1}))·ρ_t with
///   ρ_t = min(lr, 1/√t) — with lr = 0.01 that is the paper's min(10⁻², 1/√t).
/// - `beta1` 0 (default, the paper's memory-light setting): no first moment is stored. With
///   β1 > 0, m ← β1·m + (1 − β1)·Û and θ ← θ − α·m (one more float per parameter).
/// - `decayRate` −0.8, `clipThreshold` d = 1, ε1 = 1e-30, ε2 = 1e-3: the paper's values.
/// - `weightDecay` λ is decoupled: θ ← θ − α·λ·θ in the same step (as Hugging Face does).
/// - Frozen entries (trainable mask false) count as G = 0 in R and C (they add only ε1), are not
///   updated and are left out of RMS(U); a tensor with no trainable entry keeps its state untouched.
/// - RMS(U) and RMS(θ) are taken per tensor: each weight matrix, and each maximal run of
///   parameters outside every matrix (a layer's bias).
public struct AdafactorOptions: Sendable, Equatable, Hashable {
    public var learningRate: Float
    public var beta1: Float
    public var decayRate: Float
    public var clipThreshold: Float
    public var epsilon1: Float
    public var epsilon2: Float
    public var relativeStep: Bool
    public var factored: Bool
    public var weightDecay: Float

    public init(learningRate: Float, beta1: Float = 0, decayRate: Float = -0.8, clipThreshold: Float = 1,
                epsilon1: Float = 1e-30, epsilon2: Float = 1e-3, relativeStep: Bool = false, factored: Bool = true,
                weightDecay: Float = 0) {
        self.learningRate = learningRate
        self.beta1 = beta1
        self.decayRate = decayRate
        self.clipThreshold = clipThreshold
        self.epsilon1 = epsilon1
        self.epsilon2 = epsilon2
        self.relativeStep = relativeStep
        self.factored = factored
        self.weightDecay = weightDecay
    }

    /// β̂2_t = 1 − t^decayRate (0 at t = 1, so the first step's second moment is G² + ε1).
    public func beta2(step t: Int) -> Float {
        Float(1 - _exp(Double(decayRate) * _log(Double(t))))
    }

    /// ρ_t of the relative step: min(lr, 1/√t).
    public func relativeRate(step t: Int) -> Float {
        min(learningRate, Float(1 / Double(t).squareRoot()))
    }
}
