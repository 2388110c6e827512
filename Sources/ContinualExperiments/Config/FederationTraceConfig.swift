import ContinualCore

/// `"federation.trace"`: a per-round trace of the server and client steps, written to
/// `runs/<id>/federation/trace/` (docs/results-format.md) so the arithmetic of every algorithm can
/// be recomputed outside the toolkit (`python/continualkit/fedtrace.py`, docs/federated.md,
/// "Checking the arithmetic"). Off when absent; it changes no number of the run, only what is
/// written. For each of the first `rounds` rounds: the global model before and after the server
/// step, the rule's aggregate and the update applied, the server optimizer's moments and the
/// algorithms' server state, and per client of the round its upload (as received and, with an
/// encoding, before it), sample count, normaliser, loss, local steps, bytes, control variate or
/// FedDyn state before and after, local model, personal model and APFL's α before and after, and
/// MOON's previous model. A trace is large (several model copies per client and round):
/// `rounds` is at most `maxRounds`, and a run whose trace would hold more than `maxValues`
/// float32 values is refused when it starts.
public struct FederationTraceConfig: Codable, Sendable, Equatable {
    /// The traced rounds: rounds 0..<rounds.
    public var rounds: Int

    public static let maxRounds = 100
    /// The most float32 values a trace may hold (400 MB).
    public static let maxValues = 100_000_000

    public init(rounds: Int) { self.rounds = rounds }

    enum CodingKeys: String, CodingKey, CaseIterable { case rounds }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        rounds = try c.decode(Int.self, forKey: .rounds)
        try c.require((1...Self.maxRounds).contains(rounds), .rounds,
                      "must be in 1...\(Self.maxRounds) (the trace holds several model copies per client and round), got \(rounds)")
    }

    /// Whether round `r` is traced.
    func traces(_ r: Int) -> Bool { r < rounds }
}
