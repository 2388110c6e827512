import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// Clients built on demand (`FederationStorage`): a client is built when first sampled, its data
/// regenerated from its seed whenever it trains; the numbers are those of building and holding
/// every client for the whole run, and the memory estimate grows with the clients that train,
/// not with the population.
@Suite("Federation storage")
struct FederationStorageTests {
    /// Every client built at the start with its data held: how every federated run kept its
    /// clients before on-demand clients.
    static let everyClientHeld = FederationStorage(allClients: true, retainsData: true)
    static let regenerated = FederationStorage(allClients: false, retainsData: false)
    static let kept = FederationStorage(allClients: false, retainsData: true)

    @Test("on-demand clients give the stored path's bits: FedAvg, SCAFFOLD and Ditto, 1 and 2 threads, 2 ranks")
    func onDemandClientsAreBitIdentical() throws {
        // 40 clients, 3 of them per round over 6 rounds: about a third are never sampled; a
        // sampled client trains again on data regenerated from its seed; 5 clients are evaluated.
        let configs = [
            #"{"rounds": 6, "clients_per_round": 3, "evaluate_every": 2, "evaluate_clients": 5, "jobs": JOBS}"#,
            #"{"rounds": 6, "clients_per_round": 3, "aggregation": "scaffold", "evaluate_clients": 5, "jobs": JOBS}"#,
            #"{"rounds": 6, "client_fraction": 0.1, "sampling": "poisson", "personal": "ditto", "evaluate_clients": 5, "jobs": JOBS}"#,
        ]
        for (k, text) in configs.enumerated() {
            let strategy = k == 0 ? #"[{"type": "replay", "capacity": 20}]"# : #"["naive"]"#
            func run(_ jobs: Int) throws -> ResolvedRun {
                try FederationTests.run(text.replacingOccurrences(of: "JOBS", with: String(jobs)), users: 40, strategy: strategy)
            }
            let stored = FederationRunner.execute(try run(1), transport: SingleProcess(), storage: Self.everyClientHeld)
            #expect(stored.status == .completed, "\(stored.message)")
            let reference = FederationTests.fingerprint(stored)
            let f = try #require(stored.federation)
            // The config is a real test of the on-demand path: some clients never trained, some
            // trained twice or more.
            #expect(f.invitations.contains(0) && f.invitations.contains { $0 >= 2 }, "config \(k): \(f.invitations)")
            for jobs in [1, 2] {
                for plan in [Self.regenerated, Self.kept] {
                    let r = FederationRunner.execute(try run(jobs), transport: SingleProcess(), storage: plan)
                    #expect(r.status == .completed, "\(r.message)")
                    let same = FederationTests.fingerprint(r) == reference
                    #expect(same, "config \(k), \(jobs) thread(s), \(plan)")
                }
                // The run's own plan (what `continual run` uses).
                let own = FederationRunner.execute(try run(jobs))
                let same = FederationTests.fingerprint(own) == reference
                #expect(same, "config \(k), \(jobs) thread(s), the run's plan")
            }
            for r in ThreadRanks.execute(try run(2), ranks: 2) {
                let same = FederationTests.fingerprint(r) == reference
                #expect(same, "config \(k), 2 ranks")
            }
        }
    }

    @Test("the plan: data kept only when a trained client is expected to train twice; every client built for local-only")
    func thePlanFollowsReuse() throws {
        func plan(_ federation: String, users: Int) throws -> FederationStorage {
            let run = try FederationTests.run(federation, users: users)
            return FederationStorage(try #require(run.config.federation), clients: users)
        }
        // 1,000 of 10,000 per round for 100 rounds: each client trains ≈ 10 times, data kept.
        let bench = try plan(#"{"rounds": 100, "client_fraction": 0.1}"#, users: 10000)
        #expect(!bench.allClients && bench.retainsData)
        #expect(abs(bench.expectedParticipants - 10000 * (1 - pow(0.9, 100))) < 1e-6)
        #expect(abs(bench.expectedParticipations - 100_000) < 1e-6)
        // 2 rounds: ≈ 1,900 clients train 2,000 times; regenerated.
        let short = try plan(#"{"rounds": 2, "client_fraction": 0.1}"#, users: 10000)
        #expect(!short.retainsData && abs(short.expectedParticipants - 1900) < 1e-6)
        // A million clients, 1,000 per round, 10 rounds: ≈ 9,955 clients, almost each once.
        let million = try plan(#"{"rounds": 10, "client_fraction": 0.001}"#, users: 1_000_000)
        #expect(!million.retainsData && abs(million.expectedParticipants - 1e6 * (1 - pow(0.999, 10))) < 1e-3)
        #expect(try plan(#"{"rounds": 3, "share": "none"}"#, users: 50).allClients)
        #expect(try plan(#"{"rounds": 3, "share": "core", "personal": "local", "clients_per_round": 2}"#, users: 50).allClients)
    }

    @Test("a stateless federation's memory estimate grows with the clients sampled, not with the population")
    func estimateScalesWithSampledClients() throws {
        func memory(users: Int, perRound: Int) throws -> Double {
            let run = try FederationTests.run(#"{"rounds": 10, "clients_per_round": \#(perRound), "evaluate_clients": 50}"#,
                                              users: users)
            return try Preflight.check(run, limits: ResourceLimits(memoryBytes: 1e15)).memoryBytes
        }
        // Ten times the clients at the same sampling: each extra client adds only its per-client
        // results (`perClientResultBytes`).
        let small = try memory(users: 100_000, perRound: 1000), large = try memory(users: 1_000_000, perRound: 1000)
        let perClient = (large - small) / 900_000
        #expect(perClient > 0 && perClient < 1.5 * RunEstimate.perClientResultBytes, "\(perClient) B per extra client")
        // Twice and four times the clients sampled per round: the rest grows in proportion to the
        // clients that train (≈ 10 × per-round, few sampled twice among a million).
        let m1 = try memory(users: 1_000_000, perRound: 500), m2 = try memory(users: 1_000_000, perRound: 1000)
        let m4 = try memory(users: 1_000_000, perRound: 2000)
        let step1 = m2 - m1, step2 = m4 - m2
        #expect(step1 > 5000 * RunEstimate.clientStateBytes, "\(step1)")
        #expect(abs(step2 / step1 - 2) < 0.05, "\(step1) then \(step2)")
    }
}
