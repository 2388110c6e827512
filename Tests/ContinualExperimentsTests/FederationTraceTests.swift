import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// `federation.trace` (issue 43, item 1): the trace changes no number of a run, for every
/// registered algorithm; it holds the rounds asked for, consistently; it is refused where it
/// cannot be kept. Its arithmetic is checked against the papers by python/tests/test_federated_trace.py.
@Suite("Federated trace")
struct FederationTraceTests {
    /// A conformance configuration with `"trace": {"rounds": rounds}` added.
    static func traced(_ federation: String, rounds: Int) -> String {
        "{\"trace\": {\"rounds\": \(rounds)}, " + federation.dropFirst()
    }

    @Test("with the trace on, every registered algorithm computes the same bits as without it",
          arguments: FederatedConformanceTests.configurations.map(\.algorithm))
    func traceChangesNothing(_ algorithm: String) throws {
        let federation = FederatedConformanceTests.configurations.first { $0.algorithm == algorithm }!.federation
        let plain = FederatedConformanceTests.execute(try FederatedConformanceTests.run(federation))[0]
        var traced = FederatedConformanceTests.execute(try FederatedConformanceTests.run(Self.traced(federation, rounds: 3)))[0]
        #expect(plain.status == .completed && traced.status == .completed, "\(plain.message) \(traced.message)")
        let trace = try #require(traced.federation?.trace)
        #expect(trace.rounds.map(\.round) == [0, 1, 2], "\(algorithm)")
        traced.federation?.trace = nil
        traced.federation?.config.trace = nil
        #expect(FederationTests.fingerprint(traced) == FederationTests.fingerprint(plain), "\(algorithm)")
    }

    @Test("each traced round starts from the model the previous one ended with, and its clients' uploads are those the server summed")
    func roundsChain() throws {
        let run = try FederatedConformanceTests.run(Self.traced(#"{"rounds": 4, "clients_per_round": 4, "aggregation": "scaffold"}"#, rounds: 4))
        let r = FederatedConformanceTests.execute(run)[0]
        let trace = try #require(r.federation?.trace)
        #expect(trace.rounds.count == 4)
        for (a, b) in zip(trace.rounds, trace.rounds.dropFirst()) {
            #expect(a.globalAfter == b.globalBefore)
            #expect(a.stateAfter == b.stateBefore, "SCAFFOLD's c carries from one round to the next")
        }
        #expect(trace.rounds.last?.globalAfter == r.outcome?.finalModel.parameters)
        #expect(trace.sharedIndex == Array(0..<(r.outcome?.finalModel.parameterCount ?? 0)))
        for round in trace.rounds {
            let done = round.entries.filter(\.completed)
            #expect(!done.isEmpty && done.allSatisfy { $0.traced != nil && $0.control.count == trace.sharedIndex.count })
            #expect(done.allSatisfy { $0.traced!.appliedSteps > 0 && $0.traced!.local.count == trace.sharedIndex.count })
        }
    }

    @Test("rounds outside 1...100, a trace without a server, a resumed traced run and an oversized trace are refused")
    func refusals() throws {
        for (federation, key) in [(#"{"rounds": 2, "trace": {"rounds": 0}}"#, ".federation.trace.rounds"),
                                  (#"{"rounds": 2, "trace": {"rounds": 101}}"#, ".federation.trace.rounds"),
                                  (#"{"rounds": 2, "trace": {"rounds": 1, "clients": 3}}"#, "clients"),
                                  (#"{"rounds": 2, "share": "none", "trace": {"rounds": 1}}"#, ".federation.trace")] {
            let message = FederatedRuleOptionTests.refusal(federation)
            #expect(message.contains(key), "\(federation): \(message)")
        }
        let run = try FederatedConformanceTests.run(Self.traced(#"{"rounds": 4, "clients_per_round": 4}"#, rounds: 2))
        let stopped = FederatedConformanceTests.execute(run, stopAfter: 1)[0]
        let resumed = FederatedConformanceTests.execute(run, resume: stopped.federationCheckpoint)[0]
        #expect(resumed.status == .failed && resumed.message.contains("federation.trace"), "\(resumed.message)")
        var big = try FederatedConformanceTests.run(Self.traced(#"{"rounds": 100, "clients_per_round": 10}"#, rounds: 100)).config
        big.model.hidden = [2000, 2000]
        let refused = FederatedConformanceTests.execute(ResolvedRun(config: big))[0]
        #expect(refused.status == .failed && refused.message.contains("federation.trace"), "\(refused.message)")
    }

    @Test("validate's memory and disk estimates count the trace: a traced run costs more, on disk by its bound")
    func estimatesCountTheTrace() throws {
        func estimate(_ federation: String) throws -> (memory: Double, disk: Double) {
            let e = try #require(try Preflight.checkAll([FederatedConformanceTests.run(federation)]).estimates.first)
            return (e.memoryBytes, e.diskBytes)
        }
        let federation = #"{"rounds": 5, "clients_per_round": 4, "aggregation": "scaffold"}"#
        let plain = try estimate(federation), traced = try estimate(Self.traced(federation, rounds: 3))
        #expect(traced.memory > plain.memory && traced.disk > plain.disk)
        let run = try FederatedConformanceTests.run(federation)
        let (setup, _) = try FederatedConformanceTests.algorithms(run)
        let bound = 4 * Double(FederationTrace.values(rounds: 3, clients: 4, parameters: setup.initialParameters.count,
                                                      shared: setup.sharedCount))
        // The trace's bound, and the longer canonical config (its "trace" key).
        #expect((bound..<(bound + 64)).contains(traced.disk - plain.disk), "\(traced.disk - plain.disk) for a bound of \(bound)")
    }
}
