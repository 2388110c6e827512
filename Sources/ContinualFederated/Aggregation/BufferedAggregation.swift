import ContinualCore

/// FedBuff's server buffer (Nguyen et al. 2022, "Federated Learning with Buffered Asynchronous
/// Aggregation", Algorithm 1): client updates arrive one at a time, each computed from the global
/// model version the client downloaded; the server adds each to a buffer and, once `size` (K)
/// updates are in it, turns them into one update of the global model and empties the buffer.
///
/// An update that arrives when the server is at version v and was computed from version v₀ has
/// staleness τ = v − v₀ (the server steps taken since the client's download) and weight
/// s(τ) = (1 + τ)^−a (`stalenessExponent` a; the paper's choice is a = ½, 1/√(1+τ); a = 0
/// ignores staleness). The step's update is, with `Weighting`:
/// - `.uniform` (the paper): Δ = (1/K) Σᵢ s(τᵢ) Δᵢ;
/// - `.samples` (FedAvg's weights): Δ = Σᵢ s(τᵢ) nᵢ Δᵢ / Σᵢ nᵢ. With every τ = 0 this is FedAvg's
///   `AggregationRule.mean` bit for bit (same order, the same Double accumulation; s(0) = 1).
/// The caller applies Δ with its server optimizer (η_g is the server learning rate:
/// w ← w + η_g·Δ for plain SGD, the paper's server step).
///
/// Accumulation in `Double` in arrival order, rounded to `Float` once per coordinate: the result
/// depends only on the updates and their order (the caller orders arrivals by (time, client id)).
public struct BufferedAggregation: Sendable, Equatable {
    public enum Weighting: String, Sendable, Codable, CaseIterable { case uniform, samples }

    /// One buffered update.
    public struct Arrival: Sendable, Equatable {
        public var client: Int
        /// The server version the client downloaded.
        public var version: Int
        public var update: ClientUpdate
        public init(client: Int, version: Int, update: ClientUpdate) {
            self.client = client
            self.version = version
            self.update = update
        }
    }

    /// What one server step used and produced.
    public struct Step: Sendable, Equatable {
        /// The version the step produced (the first step produces 1).
        public var version: Int
        /// The buffered clients, in arrival order, with their staleness τ and weight s(τ).
        public var clients: [Int]
        public var staleness: [Int]
        public var weights: [Double]
        /// The aggregated update Δ to apply.
        public var delta: [Float]
    }

    public var size: Int
    public var stalenessExponent: Double
    public var weighting: Weighting
    /// The server's model version: the number of steps taken.
    public private(set) var version = 0
    public private(set) var buffer: [Arrival] = []

    public init(size: Int, stalenessExponent: Double = 0.5, weighting: Weighting = .uniform) {
        precondition(size >= 1, "FedBuff's buffer holds at least one update")
        precondition(stalenessExponent >= 0 && stalenessExponent.isFinite, "staleness exponent must be ≥ 0")
        self.size = size
        self.stalenessExponent = stalenessExponent
        self.weighting = weighting
    }

    /// Puts a saved state back (a checkpointed run): the model version and the buffered
    /// updates, which must all have the same length and come from versions ≤ `version`.
    /// Returns false (and changes nothing) when they do not fit this buffer.
    public mutating func restore(version: Int, buffer: [Arrival]) -> Bool {
        guard version >= 0, buffer.count < size, buffer.allSatisfy({ $0.version <= version && $0.version >= 0 }),
              Set(buffer.map(\.update.delta.count)).count <= 1 else { return false }
        self.version = version
        self.buffer = buffer
        return true
    }

    /// s(τ) = (1 + τ)^−a; exactly 1 at τ = 0 (or a = 0), exactly 1/√(1+τ) at a = ½.
    public func weight(staleness tau: Int) -> Double {
        if tau == 0 || stalenessExponent == 0 { return 1 }
        if stalenessExponent == 0.5 { return 1 / Double(1 + tau).squareRoot() }
        // (1 + τ)^−a = exp(−a·ln(1 + τ)); 1 + τ ≥ 1, so the logarithm is defined.
        return _exp(-stalenessExponent * _log(Double(1 + tau)))
    }

    /// Buffers `arrival`; returns the server step when it fills the buffer (nil otherwise).
    /// - Precondition: the update's length matches the buffered ones', and `arrival.version` ≤ `version`.
    public mutating func receive(_ arrival: Arrival) -> Step? {
        precondition(arrival.version <= version, "an update cannot come from a future model version")
        precondition(buffer.isEmpty || buffer[0].update.delta.count == arrival.update.delta.count,
                     "update has \(arrival.update.delta.count) entries, the buffer's \(buffer.first?.update.delta.count ?? 0)")
        buffer.append(arrival)
        guard buffer.count >= size else { return nil }
        let d = buffer[0].update.delta.count
        var acc = [Double](repeating: 0, count: d)
        var staleness: [Int] = [], weights: [Double] = []
        var total = 0.0
        for a in buffer {
            let tau = version - a.version
            let s = weight(staleness: tau)
            staleness.append(tau)
            weights.append(s)
            let w: Double
            switch weighting {
            case .uniform: w = s
            case .samples:
                w = s * Double(a.update.samples)
                total += Double(a.update.samples)
            }
            for (j, v) in a.update.delta.enumerated() { acc[j] += w * Double(v) }
        }
        let divisor = weighting == .uniform ? Double(buffer.count) : total
        let delta = acc.map { divisor > 0 ? Float($0 / divisor) : 0 }
        version += 1
        let step = Step(version: version, clients: buffer.map(\.client), staleness: staleness, weights: weights, delta: delta)
        buffer.removeAll(keepingCapacity: true)
        return step
    }
}
