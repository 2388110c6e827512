import Foundation

/// How a federated run keeps its clients in memory: the plan the runner follows and the resource
/// estimate counts (`RunEstimate`), so `validate`, `run` and the measured peak agree.
///
/// A client is *materialised* — its learner built, its tallies kept — the first time it is
/// needed: when it is sampled, when it is one of the evaluated clients, or at the start for every
/// client when every phone trains each round (`personal: "local"`, `share: "none"`). A client that
/// is never sampled costs only its entries in the per-client result arrays (invitations, bytes,
/// energy, device pattern: a few dozen bytes), which are the file's per-client datasets. A client
/// that trained keeps its learner for the rest of the run (model, optimizer and plugin state,
/// SCAFFOLD's control, Ditto's or APFL's personal model, arrival cursors): that is the state a
/// method may carry from one of its rounds to the next, and keeping it is what makes the
/// on-demand path bit-identical to building every client up front.
///
/// A client's *data* (its population user's stream, or its partition share) is regenerated from
/// its seed whenever it trains, unless data are reused enough to be worth holding: they are kept
/// between rounds when a trained client is expected to train at least twice (`retainsData`), and
/// always for the evaluated clients (evaluated every `evaluate_every` rounds). Regenerating gives
/// the very same samples (the stream is a function of the population seed and the client id), so
/// the choice changes memory and time, never a result.
struct FederationStorage: Equatable, Sendable {
    /// Every client is built at the start (every phone trains on its own each round).
    var allClients: Bool
    /// Expected number of distinct clients that ever train: N·(1 − (1 − p)^R) with p the chance
    /// a given client is invited in a round (k/N uniform, q Poisson); N when `allClients`.
    var expectedParticipants: Double
    /// Expected invitations over the run: k·R (uniform), q·N·R (Poisson), N·R when `allClients`.
    var expectedParticipations: Double
    /// Trained clients hold their data between rounds (re-use ≥ 2 rounds per client on average).
    var retainsData: Bool

    init(_ federation: FederationConfig, clients n: Int) {
        let N = Double(max(n, 1)), R = Double(max(federation.rounds, 1))
        allClients = federation.share == .none || federation.personal == .local
        if allClients {
            expectedParticipants = N
            expectedParticipations = N * R
        } else {
            let p = federation.sampling == .poisson ? min(max(federation.clientFraction ?? 1, 0), 1)
                : Double(federation.invitedPerRound(clients: n)) / N
            expectedParticipants = N * (1 - pow(1 - p, R))
            expectedParticipations = p * N * R
        }
        retainsData = expectedParticipations >= 2 * expectedParticipants
    }

    /// A plan given outright (tests compare plans); the expected counts are not used by the runner.
    init(allClients: Bool, retainsData: Bool) {
        self.allClients = allClients
        self.retainsData = retainsData
        expectedParticipants = 0
        expectedParticipations = 0
    }
}
