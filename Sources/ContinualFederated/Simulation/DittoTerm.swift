import ContinualCore

/// Ditto's personal objective (Li et al. 2021, "Ditto: Fair and Robust Federated Learning Through
/// Personalization", Algorithm 1): the client's personal model v minimises
/// F_k(v) + (λ/2)·‖v − w‖², where w is the global model the client received this round.
///
/// Choice made here: each local SGD step of rate η is the proximal-gradient step, implicit in the
/// pull term, v ← (v − η∇F_k(v) + ηλ·w) / (1 + ηλ), realised as the gradient
/// (∇F_k(v) + λ(v − w)) / (1 + ηλ). To first order in ηλ it is the paper's explicit step
/// v ← v − η(∇F_k(v) + λ(v − w)); unlike it, it is stable for every λ, so both limits are exact:
/// λ = 0 is plain local training (the gradient is untouched, bit for bit), and λ → ∞ gives
/// v = w, the global model. Needs plain SGD (no momentum), whose rate η it is given.
///
/// The runner sets `anchor` to the round's global model before each personal round. It must be
/// the last parameter penalty of the learner (it rescales the whole gradient).
public struct DittoTerm: ParameterPenalty {
    public var name: String { "ditto" }
    /// λ ≥ 0.
    public let lambda: Double
    /// η of the personal model's SGD.
    public let learningRate: Float
    /// w: the global model of the current round (one float per parameter).
    public var anchor: [Float] = []

    public init(lambda: Double, learningRate: Float) {
        precondition(lambda >= 0 && lambda.isFinite, "Ditto lambda must be finite and ≥ 0, got \(lambda)")
        self.lambda = lambda
        self.learningRate = learningRate
    }

    /// Replaces the gradient g by (g + λ(v − w)) / (1 + ηλ); returns (λ/2)‖v − w‖².
    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                                    gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        guard lambda > 0, !anchor.isEmpty else { return 0 }
        let l = Float(lambda)
        let scale = 1 / (1 + learningRate * l)
        var sum = 0.0
        anchor.withUnsafeBufferPointer { w in
            for i in 0..<min(w.count, parameters.count) {
                let d = parameters[i] - w[i]
                gradient[i] = (gradient[i] + l * d) * scale
                sum += Double(d) * Double(d)
            }
        }
        return lambda / 2 * sum
    }

    public var resources: PluginResources {
        PluginResources(stateBytes: 4 * anchor.count, extraFLOPsPerStep: lambda > 0 ? 6 * anchor.count : 0)
    }

    public func report() -> PluginReport {
        PluginReport(attributes: ["lambda": .double(lambda),
                                  "step": .string("proximal-gradient: v <- (v - eta*grad F + eta*lambda*w) / (1 + eta*lambda)")])
    }

    public func checkpointState() -> PluginState { PluginState(floats: ["anchor": anchor]) }

    public mutating func restore(from state: PluginState) throws {
        guard let a = state.floats["anchor"] else { throw CheckpointError.mismatch("ditto state lacks its anchor") }
        anchor = a
    }
}
