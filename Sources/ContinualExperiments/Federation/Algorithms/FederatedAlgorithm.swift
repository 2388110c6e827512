import ContinualCore
import ContinualFederated
import ContinualMetrics

/// A federated algorithm: what differs between FedAvg, FedProx, SCAFFOLD, Ditto, pFedMe, FedBuff…
/// The round engine (`FederationRunner`) owns what they share — sampling, device gating and
/// availability, the transport (one process or MPI ranks), client storage, evaluation cadence,
/// traffic and energy accounting, robust rules, DP, encodings and secure aggregation — and calls
/// the hooks below. One file per algorithm (`Federation/Algorithms/`), one line in
/// `FederatedAlgorithms.registered`; a run uses every registered algorithm whose `init?` accepts
/// its config (FedProx beside Ditto, SCAFFOLD beside APFL, …), in registry order.
///
/// Every requirement but `init?` has a default that does nothing, so an algorithm states only
/// what it changes. The engine calls the hooks in this order and only in it:
///
/// 1. building a client (once, on its rank): `learnerPlugins` (after the strategy's, registry
///    order), then `prepare` (the learner holds the server's initial model);
/// 2. each round, the server (every rank, the same inputs): `admit` the sampled clients;
/// 3. each client that trains in the round (on its rank, clients in parallel, so client hooks
///    are non-mutating and may touch only the client they are given): either `trainsAlone` →
///    `aloneRound` (training without the server), or, for an invited client whose device allows
///    it, after the engine copied the global shared parameters into its learner:
///    `beforeLocalRound` → `localRound` (the first algorithm that returns a record trains the
///    round; otherwise the strategy's loop) → `afterLocalRound`, whose `TrainedRound` only the
///    engine can make, after training; `extraFloats` counts what travels besides the update;
/// 4. the server step (every rank, after the entries are gathered in client order): `serverStep`
///    (an algorithm that replaces the synchronous step: FedBuff), else the engine's aggregate,
///    `updateServerState` (from the completed entries), `transform` of the aggregate (which may
///    use that state), then the server optimizer applies it;
/// 5. evaluation rounds: `phoneModel` (the first algorithm that answers; else the learner);
/// 6. the end of the run: `report`;
/// 7. between two rounds, when the run checkpoints (`FederationCheckpoint`): `encodeState`, and
///    when it resumes, `restoreState` right after `init?` (before any other hook).
protocol FederatedAlgorithm: Sendable {
    /// The algorithm when `setup`'s config selects it; nil otherwise.
    init?(_ setup: AlgorithmSetup)

    /// Plugins the client's learner runs after the strategy's (FedProx's proximal term, …).
    func learnerPlugins() -> [any StrategyPlugin]
    /// Builds what the client keeps besides its learner (Ditto's or APFL's personal model).
    func prepare(_ client: inout FederatedClient, _ build: LearnerBuilder) throws
    /// Whether `client` trains on its own in round `round` when not taking part in it.
    func trainsAlone(_ client: FederatedClient, round: Int) -> Bool
    /// That training, on the data that arrived until `end`; nil: this algorithm has none.
    func aloneRound(_ client: inout FederatedClient, round: Int, period: Int, end: Int,
                    scratch: inout LoopScratch) throws -> ExperienceRecord?
    /// Prepares the local objective of the round (SCAFFOLD's correction, FLwF-2T's teacher) and
    /// fills what it measures at the received model into `upload` (q-FedAvg's loss).
    func beforeLocalRound(_ client: inout FederatedClient, _ round: ClientRound, _ upload: inout RoundEntry) throws
    /// The local round, when the algorithm has its own (FedRep's phases, pFedMe, Per-FedAvg).
    func localRound(_ client: inout FederatedClient, _ round: ClientRound, scratch: inout LoopScratch) throws -> ExperienceRecord?
    /// Fills what travels besides the update into `upload` (SCAFFOLD's Δcᵢ, FedNova's
    /// normaliser) and updates the client's own state; returns any further work of the round
    /// (Ditto's and APFL's personal model), which the engine counts in energy and rows.
    func afterLocalRound(_ client: inout FederatedClient, _ round: ClientRound, _ trained: TrainedRound,
                         _ upload: inout RoundEntry, scratch: inout LoopScratch) throws -> ExperienceRecord?
    /// float32 values each participant sends (`up`, summed by the server like the update) and
    /// receives (`down`) besides the shared parameters, per round.
    var extraFloats: (up: Int, down: Int) { get }

    /// The sampled clients that start a round (FedBuff: not those with an update in flight).
    mutating func admit(_ invited: [Int]) -> [Int]
    /// Replaces the synchronous server step when it returns true (FedBuff's buffer).
    mutating func serverStep(round: Int, entries: [RoundEntry], server: inout ServerModel) throws -> Bool
    /// Server state of a synchronous step (SCAFFOLD's c, FedDyn's h), from the completed entries.
    mutating func updateServerState(_ completed: [RoundEntry], clients: Int)
    /// The server update applied for the rule's aggregate (pFedMe's β-mix, FedDyn's −h/α).
    func transform(_ aggregate: [Float]) -> [Float]
    /// The model the phone predicts with at an evaluation; nil: the client's learner.
    func phoneModel(_ client: FederatedClient, global: MLP, round: Int, workspace: Workspace) -> PhoneModel?
    /// The server state a trace records (`federation.trace`): SCAFFOLD's c, FedDyn's h.
    var traceState: [Float] { get }
    /// The algorithm's results (SCAFFOLD's controls, FedBuff's trace).
    func report(into outcome: inout FederationOutcome, finals: [ClientFinal], clients: Int)
    /// Writes the server-side state the algorithm carries from one round to the next (SCAFFOLD's
    /// c, FedDyn's h, FedBuff's buffer, updates in flight and trace). An algorithm whose
    /// mutating hooks change a stored property must write it, or a resumed run would differ;
    /// the federated conformance suite resumes every registered algorithm to catch that.
    func encodeState(into w: inout ByteWriter)
    /// Reads `encodeState`'s bytes back (after `init?` with the same config); damaged or foreign
    /// bytes throw `CheckpointError`.
    mutating func restoreState(from r: inout ByteReader) throws
}

extension FederatedAlgorithm {
    func learnerPlugins() -> [any StrategyPlugin] { [] }
    func prepare(_ client: inout FederatedClient, _ build: LearnerBuilder) throws {}
    func trainsAlone(_ client: FederatedClient, round: Int) -> Bool { false }
    func aloneRound(_ client: inout FederatedClient, round: Int, period: Int, end: Int,
                    scratch: inout LoopScratch) throws -> ExperienceRecord? { nil }
    func beforeLocalRound(_ client: inout FederatedClient, _ round: ClientRound, _ upload: inout RoundEntry) throws {}
    func localRound(_ client: inout FederatedClient, _ round: ClientRound, scratch: inout LoopScratch) throws -> ExperienceRecord? { nil }
    func afterLocalRound(_ client: inout FederatedClient, _ round: ClientRound, _ trained: TrainedRound,
                         _ upload: inout RoundEntry, scratch: inout LoopScratch) throws -> ExperienceRecord? { nil }
    var extraFloats: (up: Int, down: Int) { (0, 0) }
    mutating func admit(_ invited: [Int]) -> [Int] { invited }
    mutating func serverStep(round: Int, entries: [RoundEntry], server: inout ServerModel) throws -> Bool { false }
    mutating func updateServerState(_ completed: [RoundEntry], clients: Int) {}
    func transform(_ aggregate: [Float]) -> [Float] { aggregate }
    func phoneModel(_ client: FederatedClient, global: MLP, round: Int, workspace: Workspace) -> PhoneModel? { nil }
    var traceState: [Float] { [] }
    func report(into outcome: inout FederationOutcome, finals: [ClientFinal], clients: Int) {}
    func encodeState(into w: inout ByteWriter) {}
    mutating func restoreState(from r: inout ByteReader) throws {}
}

extension ByteReader {
    /// A float array of exactly `count` values (an algorithm's server state).
    mutating func floats(count: Int, what: String) throws -> [Float] {
        let v = try floats()
        guard v.count == count else { throw CheckpointError.mismatch("\(what) has \(v.count) values, this run \(count)") }
        return v
    }
}

/// What an algorithm sees of the run when it is made (once per run, the same on every rank).
struct AlgorithmSetup: Sendable {
    let config: RunConfig
    let fed: FederationConfig
    /// The parameter ranges that travel between phone and server (`share`), and their size.
    let shared: [Range<Int>]
    let sharedCount: Int
    /// The model's parameter count.
    let parameterCount: Int
    /// The learner's cost model and the phone's profile (FedBuff's arrival times).
    let traffic: TrainingTraffic
    let profile: DeviceProfile
    var optimizer: OptimizerSpec { config.optimizer.spec }
    /// A local round's pass: `local_epochs` epochs, at most `local_steps` steps (0: no limit).
    var pass: TrainingPass {
        TrainingPass(epochs: fed.localEpochs, shuffle: config.training.options.shuffle,
                     maxSteps: fed.localSteps > 0 ? fed.localSteps : nil)
    }
}

/// A client's federated round as the client hooks see it.
struct ClientRound {
    let round: Int
    /// The client's experience the round falls in (its tallies).
    let period: Int
    /// The round's samples `lo..<end` of the client's arrival order, and those samples (labels
    /// flipped for a label-flipping adversary).
    let lo: Int
    let end: Int
    let data: Samples
    /// The global parameters the client received (its learner took their shared part).
    let global: [Float]
    let pass: TrainingPass
    let config: RunConfig
}

/// The model a phone predicts with at an evaluation.
enum PhoneModel {
    /// This model, on every experience's test set (route 0).
    case model(MLP)
    /// The client's personal learner with its plugins, predicting with `model` (nil: its own).
    case personalLearner(MLP?)
}

/// Builds a learner of the client's: the run's model, optimizer and strategy (plus `extra`
/// plugins), the client's model seed, prepared for the run's rounds, at the server's initial model.
struct LearnerBuilder {
    let make: ([any StrategyPlugin]) throws -> Trainer
    func learner(adding extra: [any StrategyPlugin]) throws -> Trainer { try make(extra) }
}
