import ContinualCore

/// FedProx's proximal term (Li et al. 2020, "Federated Optimization in Heterogeneous Networks"):
/// (μ/2)·‖w − w_g‖², where w_g is the global model the client received at the start of its local
/// round. The anchor is taken in `beforeExperience` (a local round is one experience of the
/// loop), so the term pulls every local step towards that round's global model.
///
/// With μ = 0 it returns 0 and leaves the gradient untouched: FedProx at μ = 0 is FedAvg, bit for
/// bit (tested).
public struct ProximalTerm: ParameterPenalty {
    public var name: String { "fedprox" }
    /// μ ≥ 0.
    public let mu: Double
    private var anchor: [Float] = []

    public init(mu: Double) {
        precondition(mu >= 0 && mu.isFinite, "FedProx mu must be finite and ≥ 0, got \(mu)")
        self.mu = mu
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        anchor = model.parameters
    }

    /// Adds μ(w − w_g) into `gradient`; returns (μ/2)Σ(w − w_g)².
    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                                    gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        guard mu > 0, !anchor.isEmpty else { return 0 }
        return addL2Pull(towards: anchor, strength: mu, parameters: parameters, gradient: gradient)
    }

    /// The anchor: one float per parameter; ≈ 5 FLOPs per parameter and step.
    public var resources: PluginResources {
        PluginResources(stateBytes: 4 * anchor.count, extraFLOPsPerStep: mu > 0 ? 5 * anchor.count : 0)
    }

    public func report() -> PluginReport {
        PluginReport(attributes: ["mu": .double(mu), "penalty_convention": .string("(mu/2) * sum_i (w_i - w_global_i)^2")])
    }

    public func checkpointState() -> PluginState { PluginState(floats: ["anchor": anchor]) }

    public mutating func restore(from state: PluginState) throws {
        guard let a = state.floats["anchor"] else { throw CheckpointError.mismatch("fedprox state lacks its anchor") }
        anchor = a
    }
}
