import ContinualCore

/// SCAFFOLD (Karimireddy et al. 2020, "SCAFFOLD: Stochastic Controlled Averaging for Federated
/// Learning", Algorithm 1): control variates that remove client drift. The server keeps c, each
/// client its own cᵢ (both start at 0); every local SGD step uses the corrected gradient
/// g + c − cᵢ (`ControlVariateTerm`); after K local steps of rate η from the global model x to
/// y, the client's new control is cᵢ⁺ = cᵢ − c + (x − y)/(Kη) (the paper's option II) and it
/// sends Δcᵢ = cᵢ⁺ − cᵢ with its update. The server averages the updates (x ← x + η_g·mean Δy)
/// and moves its control by c ← c + (1/N)·Σ_{i∈S} Δcᵢ — so c stays the mean of all N clients'
/// cᵢ after every round, whoever took part (the property the tests check).
public enum Scaffold {
    /// cᵢ⁺ = cᵢ − c + (x − y)/(Kη), per coordinate in `Float` (cᵢ empty = zeros).
    public static func clientControl(old ci: [Float], server c: [Float], start x: [Float], end y: [Float],
                                     steps K: Int, learningRate eta: Float) -> [Float] {
        precondition(K > 0 && c.count == x.count && y.count == x.count && (ci.isEmpty || ci.count == x.count))
        let scale = 1 / (Float(K) * eta)
        return x.indices.map { j in (ci.isEmpty ? 0 : ci[j]) - c[j] + (x[j] - y[j]) * scale }
    }

    /// c ← c + (1/N)·Σ Δcᵢ over the round's clients (accumulated in `Double` in the order
    /// given, rounded once per coordinate).
    public static func updateServerControl(_ c: inout [Float], deltas: [[Float]], clients n: Int) {
        guard !deltas.isEmpty else { return }
        var acc = [Double](repeating: 0, count: c.count)
        for d in deltas where !d.isEmpty {
            precondition(d.count == c.count, "control update has \(d.count) entries, the server's \(c.count)")
            for j in d.indices { acc[j] += Double(d[j]) }
        }
        for j in c.indices { c[j] = Float(Double(c[j]) + acc[j] / Double(n)) }
    }
}

/// SCAFFOLD's corrected local gradient g + (c − cᵢ): adds `correction` into the gradient
/// (returns 0 to the loss: the correction is a drift term, not an objective). Empty
/// `correction` (personal rounds, or before the runner sets it) leaves the gradient untouched.
public struct ControlVariateTerm: ParameterPenalty {
    public var name: String { "scaffold" }
    /// c − cᵢ, one entry per parameter.
    public var correction: [Float] = []

    public init() {}

    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                                    gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        guard !correction.isEmpty else { return 0 }
        correction.withUnsafeBufferPointer { d in
            for i in 0..<min(d.count, gradient.count) { gradient[i] += d[i] }
        }
        return 0
    }

    public var resources: PluginResources {
        PluginResources(stateBytes: 4 * correction.count, extraFLOPsPerStep: correction.count)
    }

    public func report() -> PluginReport { PluginReport(attributes: ["variant": .string("option II: c_i+ = c_i - c + (x - y)/(K*lr)")]) }

    public func checkpointState() -> PluginState { PluginState(floats: ["correction": correction]) }

    public mutating func restore(from state: PluginState) throws {
        correction = state.floats["correction"] ?? []
    }
}
