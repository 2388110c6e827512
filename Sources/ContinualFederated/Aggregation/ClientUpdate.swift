/// What one client hands the server after a local round: the change of the shared parameters
/// (`local − global`, in the model's flat parameter order) and how many training samples it was
/// computed from.
///
/// Updates are deltas, not parameters, so that clipping (DP-FedAvg), robust rules and a server
/// optimizer (FedAvgM, FedAdam) all act on the same quantity, as in McMahan et al. 2017 and
/// Reddi et al. 2021.
public struct ClientUpdate: Sendable, Equatable {
    /// `local − global`, one entry per shared parameter.
    public var delta: [Float]
    /// Training samples behind the update; FedAvg's weight. Must be ≥ 0.
    public var samples: Int
    /// FedNova's normaliser aᵢ: the sum of the local learning-rate multipliers the update is made
    /// of (τᵢ, the optimizer steps, for plain local SGD; see `AggregationRule.normalized`).
    /// 0 when the rule does not use it.
    public var steps: Double
    /// q-FedAvg's Fₖ: the client's mean training loss at the global model it received, before
    /// its local round (see `AggregationRule.qFair`). 0 when the rule does not use it.
    public var loss: Double

    public init(delta: [Float], samples: Int, steps: Double = 0, loss: Double = 0) {
        self.delta = delta
        self.samples = samples
        self.steps = steps
        self.loss = loss
    }

    /// ‖delta‖₂, accumulated in `Double` (the clipping bound is checked against this value).
    public var l2Norm: Double { ContinualFederated.l2Norm(delta) }
}

/// ‖v‖₂ of a `Float` vector, accumulated in `Double` in index order.
func l2Norm(_ v: [Float]) -> Double {
    var s = 0.0
    for x in v { s += Double(x) * Double(x) }
    return s.squareRoot()
}

/// Why a set of client updates cannot be aggregated.
public enum AggregationError: Error, Equatable, CustomStringConvertible {
    /// No update to aggregate.
    case empty
    /// Update `client` has `count` entries where update 0 has `expected`.
    case lengthMismatch(client: Int, count: Int, expected: Int)
    /// Update `client` holds NaN or ±∞ at `coordinate`. Robust rules bound the influence of
    /// large values, not of non-numbers, so such an update is an error, never a silent drop.
    case nonFinite(client: Int, coordinate: Int)
    /// Update `client` reports a negative sample count.
    case negativeSamples(client: Int, samples: Int)
    /// FedAvg's weights sum to zero (every client reported 0 samples).
    case zeroTotalWeight
    /// The rule needs more clients than it was given (e.g. Krum needs n > 2f + 2).
    case tooFewClients(rule: String, clients: Int, needed: Int)
    /// The rule's own parameters are out of range.
    case invalidRule(String)

    public var description: String {
        switch self {
        case .empty: return "no client update to aggregate"
        case let .lengthMismatch(c, n, e): return "client \(c)'s update has \(n) entries, client 0's has \(e)"
        case let .nonFinite(c, j): return "client \(c)'s update is not finite at coordinate \(j)"
        case let .negativeSamples(c, s): return "client \(c) reports \(s) samples (must be ≥ 0)"
        case .zeroTotalWeight: return "every client reports 0 samples: FedAvg's weights sum to 0"
        case let .tooFewClients(r, n, k): return "\(r) needs at least \(k) clients, got \(n)"
        case let .invalidRule(m): return m
        }
    }
}
