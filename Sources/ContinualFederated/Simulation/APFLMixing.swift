import ContinualCore

/// APFL's personal step (Deng, Kamani and Mahdavi 2020, "Adaptive Personalized Federated
/// Learning", Algorithm 1): the client keeps a personal model v and a mixing weight α ∈ [0, 1];
/// its personalised model is v̄ = α·v + (1 − α)·w, with w its local copy of the global model.
/// On every local step, with g = ∇f(v̄) on the step's batch,
///   v ← v − η·α·g   (∂f(v̄)/∂v = α·∇f(v̄)),   α ← clip₀¹(α − η_α·⟨v − w, g⟩)   (∂f(v̄)/∂α).
///
/// This plugin is the last one of the personal learner (model = v): before the forward pass it
/// moves the parameters to v̄ (`GradientPointTransform`), after the backward pass it restores v,
/// takes the α step from the same g and scales g by α, so the learner's optimizer makes v's step.
///
/// Choices made here:
/// - w moves with v as in the paper: `trajectory` holds the client's w *before each of its local
///   steps* of the round (recorded by `StepTrajectory` on the FedAvg learner, which draws the
///   same batches in the same order), so step t of v mixes with w_t. Steps beyond the recorded
///   ones (a strategy that changes the step count) mix with the last w.
/// - `alphaLearningRate` 0 keeps α fixed; then α = 0 never moves v (v̄ = w, FedAvg's local
///   model) and α = 1 is plain local training of v bit for bit (v̄ = v, g unscaled).
/// - α is one scalar per client, kept between rounds with v; it starts at `alpha`.
public struct APFLMixing: GradientPointTransform {
    public var name: String { "apfl" }
    /// The current α.
    public private(set) var alpha: Double
    /// η_α (0 = α fixed).
    public let alphaLearningRate: Double
    /// w before each local step of the current round (set by the runner before the round).
    public var trajectory: [[Float]] = []
    private var step = 0
    private var saved: [Float] = []

    public init(alpha: Double, alphaLearningRate: Double) {
        precondition((0...1).contains(alpha), "APFL alpha must be in [0, 1], got \(alpha)")
        precondition(alphaLearningRate >= 0 && alphaLearningRate.isFinite, "APFL alpha learning rate must be ≥ 0")
        self.alpha = alpha
        self.alphaLearningRate = alphaLearningRate
    }

    /// The personalised model's parameters α·v + (1 − α)·w, in `Float` (exactly v at α = 1, w at α = 0).
    public static func mix(_ v: [Float], _ w: [Float], alpha: Double) -> [Float] {
        precondition(v.count == w.count, "APFL mixes models of \(v.count) and \(w.count) parameters")
        let a = Float(alpha), b = 1 - Float(alpha)
        return v.indices.map { a * v[$0] + b * w[$0] }
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        step = 0
    }

    public mutating func willComputeGradient(model: inout MLP) {
        guard let w = trajectory.isEmpty ? nil : trajectory[min(step, trajectory.count - 1)] else { return }
        saved = model.parameters
        model.parameters = Self.mix(saved, w, alpha: alpha)
    }

    public mutating func didComputeGradient(model: inout MLP, gradient: UnsafeMutableBufferPointer<Float>) {
        guard !saved.isEmpty else { return }
        let w = trajectory[min(step, trajectory.count - 1)]
        var dAlpha = 0.0
        for i in 0..<min(saved.count, gradient.count) { dAlpha += (Double(saved[i]) - Double(w[i])) * Double(gradient[i]) }
        model.parameters = saved
        saved = []
        let a = Float(alpha)
        for i in gradient.indices { gradient[i] *= a }
        if alphaLearningRate > 0 { alpha = min(1, max(0, alpha - alphaLearningRate * dAlpha)) }
        step += 1
    }

    public var resources: PluginResources {
        let p = trajectory.first?.count ?? 0
        // The trajectory, and per step: the mix (3 FLOPs), the α gradient (2) and the scaling (1).
        return PluginResources(stateBytes: 4 * p * trajectory.count, extraFLOPsPerStep: 6 * p)
    }

    public func report() -> PluginReport {
        PluginReport(attributes: ["alpha": .double(alpha), "alpha_lr": .double(alphaLearningRate),
                                  "mix": .string("parameters: alpha * v + (1 - alpha) * w, w moving with the local FedAvg steps")])
    }

    public func checkpointState() -> PluginState {
        PluginState(floats: ["trajectory": trajectory.flatMap { $0 }], doubles: ["alpha": [alpha]],
                    ints: ["steps": [Int64(trajectory.count)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let a = state.doubles["alpha"]?.first else { throw CheckpointError.mismatch("apfl state lacks alpha") }
        alpha = a
        let flat = state.floats["trajectory"] ?? [], k = Int(state.ints["steps"]?.first ?? 0)
        trajectory = k > 0 ? (0..<k).map { Array(flat[($0 * flat.count / k)..<(($0 + 1) * flat.count / k)]) } : []
    }
}

/// Records the parameters before every local step of a round (cleared at the round's start):
/// APFL's w_t for the personal model's step t (`APFLMixing.trajectory`). Observes only; the
/// learner's numbers are unchanged.
public struct StepTrajectory: StepObserver {
    public var name: String { "step_trajectory" }
    public private(set) var before: [[Float]] = []

    public init() {}

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        before.removeAll(keepingCapacity: true)
    }

    public mutating func afterStep(_ step: StepObservation) {
        before.append(Array(step.parametersBefore))
    }

    /// Hands over the recorded trajectory and frees it (a client holds none between rounds).
    public mutating func take() -> [[Float]] {
        defer { before = [] }
        return before
    }

    public var resources: PluginResources {
        PluginResources(stateBytes: 4 * (before.first?.count ?? 0) * before.count)
    }

    public func checkpointState() -> PluginState { PluginState() }
    public mutating func restore(from state: PluginState) throws {}
}
