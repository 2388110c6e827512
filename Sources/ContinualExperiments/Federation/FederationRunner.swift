import Foundation
import ContinualCore

/// Runs a federated experiment (`"federation"` + `"population"`): rounds of client sampling,
/// device-gated local rounds with the run's strategy on every client's newly arrived data,
/// encoding, aggregation (FedAvg, robust rules or DP-FedAvg), the server optimizer, privacy
/// accounting, and evaluation of the global and personal models (see `FederationConfig` for the
/// semantics and the choices made). The rounds are `FederationEngine`'s; what differs between
/// federated methods are the run's `FederatedAlgorithm`s (`FederatedAlgorithms.registered`).
///
/// Results are bit-identical for any number of threads and of MPI ranks (`FederationTransport`).
public enum FederationRunner {
    /// Executes the run on this process (a rank of `transport`). Every rank returns the same result.
    public static func execute(_ run: ResolvedRun, transport: any FederationTransport = SingleProcess()) -> RunResult {
        execute(run, transport: transport, storage: nil)
    }

    /// `execute`, resumed from `resume` (a checkpoint of this run, made on any number of ranks),
    /// stopped after round `stopAfter` (0-based; the result then holds the checkpoint and no
    /// metrics), and saving a checkpoint every `checkpoints.every` rounds while it runs.
    public static func execute(_ run: ResolvedRun, transport: any FederationTransport = SingleProcess(),
                               resumingFrom resume: FederationCheckpoint?, stopAfter: Int?,
                               checkpoints: RoundCheckpoints? = nil) -> RunResult {
        execute(run, transport: transport, storage: nil, plan: RoundPlan(resume: resume, stopAfter: stopAfter, checkpoints: checkpoints))
    }

    /// What a run does besides its rounds: where it starts, where it stops, when it saves.
    struct RoundPlan: Sendable {
        var resume: FederationCheckpoint? = nil
        var stopAfter: Int? = nil
        var checkpoints: RoundCheckpoints? = nil
    }

    /// `execute` with the clients kept as `storage` says instead of the run's own plan (tests
    /// compare the plans: every plan gives the same bits).
    static func execute(_ run: ResolvedRun, transport: any FederationTransport, storage: FederationStorage?,
                        plan: RoundPlan = RoundPlan()) -> RunResult {
        let clock = ContinuousClock()
        let start = clock.now
        var result = RunResult.notStarted(run)
        do {
            try simulate(run, transport: transport, storage: storage, plan: plan, into: &result)
        } catch let error as TrainingError {
            if error.isDivergence { result.status = .diverged }
            result.message = error.description
        } catch {
            result.message = "\(error)"
        }
        result.wallSeconds = (clock.now - start).seconds
        return result
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The run: its setup, the rounds, and the result.
    static func simulate(_ run: ResolvedRun, transport: any FederationTransport, storage: FederationStorage? = nil,
                         plan: RoundPlan = RoundPlan(), into result: inout RunResult) throws {
        let clock = ContinuousClock()
        let setupStart = clock.now
        let (setup, prototype) = try FederationSetup.make(run, transport: transport, plan: storage)
        if let k = plan.stopAfter, !(0..<(setup.R - 1)).contains(k) {
            throw Failure(description: "a federated run stops after a round: --stop-after must be in 0...\(setup.R - 2) (it has \(setup.R) rounds), got \(k)")
        }
        if plan.resume != nil && setup.fed.trace != nil {
            throw Failure(description: "federation.trace is not part of checkpoints: run a traced run from its start, without --resume-from")
        }
        var engine = try FederationEngine(setup, prototype: prototype, transport: transport)
        if let resume = plan.resume { try engine.restore(resume) }
        engine.outcome.setupSeconds = (clock.now - setupStart).seconds
        let roundStart = clock.now
        for r in (plan.resume?.roundsDone ?? 0)..<setup.R {
            try engine.round(r)
            guard r < setup.R - 1 else { break }
            if r == plan.stopAfter {
                result.federationCheckpoint = try engine.checkpoint(roundsDone: r + 1)
                result.status = .completed
                result.message = "stopped after round \(r) of \(setup.R)"
                return
            }
            if let sink = plan.checkpoints, (r + 1) % sink.every == 0 {
                try sink.save(.federation(try engine.checkpoint(roundsDone: r + 1)))
            }
        }
        engine.outcome.roundSeconds = (clock.now - roundStart).seconds
        try engine.finish(prototype: prototype, into: &result)
    }
}

/// Where a federated run saves its state while it runs: every `every` rounds (not after the
/// last), `save` receives the checkpoint (`continual run --checkpoint-every N --checkpoint PATH`
/// writes it durably over PATH). A throw from `save` ends the run with its message.
public struct RoundCheckpoints: Sendable {
    public let every: Int
    public let save: @Sendable (RunCheckpoint) throws -> Void
    public init(every: Int, save: @escaping @Sendable (RunCheckpoint) throws -> Void) {
        precondition(every >= 1, "checkpoints are saved every ≥ 1 rounds")
        self.every = every
        self.save = save
    }
}
