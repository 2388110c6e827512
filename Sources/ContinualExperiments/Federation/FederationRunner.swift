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

    /// `execute` with the clients kept as `storage` says instead of the run's own plan (tests
    /// compare the plans: every plan gives the same bits).
    static func execute(_ run: ResolvedRun, transport: any FederationTransport, storage: FederationStorage?) -> RunResult {
        let clock = ContinuousClock()
        let start = clock.now
        var result = RunResult.notStarted(run)
        do {
            try simulate(run, transport: transport, storage: storage, into: &result)
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
    static func simulate(_ run: ResolvedRun, transport: any FederationTransport, storage plan: FederationStorage? = nil,
                         into result: inout RunResult) throws {
        let clock = ContinuousClock()
        let setupStart = clock.now
        let (setup, prototype) = try FederationSetup.make(run, transport: transport, plan: plan)
        var engine = try FederationEngine(setup, prototype: prototype, transport: transport)
        engine.outcome.setupSeconds = (clock.now - setupStart).seconds
        let roundStart = clock.now
        for r in 0..<setup.R { try engine.round(r) }
        engine.outcome.roundSeconds = (clock.now - roundStart).seconds
        try engine.finish(prototype: prototype, into: &result)
    }
}
