import ContinualCore
import ContinualFederated

/// `"federation.fedbuff"`: buffered asynchronous aggregation (FedBuff; Nguyen et al. 2022,
/// "Federated Learning with Buffered Asynchronous Aggregation", AISTATS) instead of synchronous
/// rounds of FedAvg.
///
/// Simulated time. Round r is the interval [r·S, (r+1)·S) of `round_seconds` S. The clients
/// invited in round r download the server's model at time r·S (its version v₀ then), train on
/// the data that arrived, and their update reaches the server at r·S + d, d the round's duration
/// on the device:
/// - `"delay": "device"`: the round's training FLOPs / `device.profile` FLOP rate × a log-normal
///   slowdown exp(`slowdown_spread` · N(0, 1)) — the straggler model of `round_deadline`, drawn
///   from the same stream per round and client (`federation.straggler.<r>.<id>`);
/// - `"delay": "none"`: d = 0 (every update of round r arrives at r·S).
/// The server takes arrivals in order of (arrival time, client id) — an event queue that every
/// rank holds identically, so results do not depend on threads or MPI ranks. Each arrival goes
/// into the buffer; when K = `buffer_size` updates are in it, the server steps with
/// `BufferedAggregation` (staleness weight s(τ) = (1+τ)^−`staleness_exponent`, τ = server steps
/// since the client's download; the paper's ½ is the default) and the run's server optimizer
/// (η_g = `server_lr`). Arrivals before (r+1)·S are processed before round r + 1's downloads.
///
/// Choices (the paper leaves them to the system): a client whose update is still in flight when
/// it is invited again does not start a second one (counted as busy); updates still in flight or
/// buffered when the run ends are not applied (counted); a client that drops out
/// (`dropout_probability`) uploads nothing and is counted as dropped. Uploads are counted as the
/// round's `completed` when sent. Incompatible with `round_deadline` (a late update is FedBuff's
/// stale update, not a discarded one), robust rules, DP clipping, SCAFFOLD, FedNova, q-FedAvg and
/// secure aggregation (FedBuff's secure aggregation needs a trusted enclave, not simulated).
public struct FedBuffConfig: Codable, Sendable, Equatable {
    public enum Delay: String, Codable, CaseIterable, Sendable { case device, none }
    /// K: updates per server step.
    public var bufferSize: Int
    public var stalenessExponent = 0.5
    public var weighting: BufferedAggregation.Weighting = .uniform
    public var delay: Delay = .device
    /// S: seconds between the rounds' downloads.
    public var roundSeconds = 1.0
    public var slowdownSpread = 0.5

    public init(bufferSize: Int) { self.bufferSize = bufferSize }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case bufferSize = "buffer_size", stalenessExponent = "staleness_exponent", weighting, delay
        case roundSeconds = "round_seconds", slowdownSpread = "slowdown_spread"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        bufferSize = try c.decode(Int.self, forKey: .bufferSize)
        stalenessExponent = try c.decode(.stalenessExponent, default: 0.5)
        weighting = try c.decodeChoice(.weighting, default: .uniform)
        delay = try c.decodeChoice(.delay, default: .device)
        roundSeconds = try c.decode(.roundSeconds, default: 1)
        slowdownSpread = try c.decode(.slowdownSpread, default: 0.5)
        try c.require(bufferSize >= 1 && bufferSize <= 1_000_000, .bufferSize, "must be in 1...1000000, got \(bufferSize)")
        try c.require(stalenessExponent >= 0 && stalenessExponent <= 100, .stalenessExponent,
                      "must be in [0, 100] (0.5: the paper's 1/sqrt(1+staleness); 0: no discount), got \(stalenessExponent)")
        try c.require(roundSeconds > 0 && roundSeconds.isFinite, .roundSeconds, "must be a finite number of seconds > 0, got \(roundSeconds)")
        try c.require(slowdownSpread >= 0 && slowdownSpread <= 10, .slowdownSpread, "must be in [0, 10], got \(slowdownSpread)")
        try c.require(!c.contains(.slowdownSpread) || delay == .device, .slowdownSpread, "only with \"delay\": \"device\"")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(bufferSize, forKey: .bufferSize)
        try c.encode(stalenessExponent, forKey: .stalenessExponent)
        try c.encode(weighting, forKey: .weighting)
        try c.encode(delay, forKey: .delay)
        try c.encode(roundSeconds, forKey: .roundSeconds)
        if delay == .device { try c.encode(slowdownSpread, forKey: .slowdownSpread) }
    }

    /// The server's buffer for this configuration.
    public var buffer: BufferedAggregation {
        BufferedAggregation(size: bufferSize, stalenessExponent: stalenessExponent, weighting: weighting)
    }
}
