import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 29: a phone's EWC consolidates at the client's own experience boundaries (the FCL
/// papers' protocol), not after every local round; `"consolidate": "round"` keeps the old way.
@Suite("Federated EWC: consolidation at the client's experience boundaries")
struct FederatedConsolidationTests {
    static let ewc = #"[{"type": "ewc", "lambda": 10, "mode": "online", "gamma": 0.9}]"#

    static func run(_ federation: String) throws -> RunResult {
        FederationRunner.execute(try PersonalisedFederationTests.run(federation, strategy: ewc))
    }

    @Test("no EWC penalty while the first experience trains; per-round consolidation has one from round 2")
    func boundaries() throws {
        // 9 rounds over 3 experiences of equal size: experience 0 ends in round 2.
        let byExperience = try Self.run(#"{"rounds": 9, "clients_per_round": 12}"#)
        let byRound = try Self.run(#"{"rounds": 9, "clients_per_round": 12, "consolidate": "round"}"#)
        #expect(byExperience.status == .completed && byRound.status == .completed, "\(byExperience.message) \(byRound.message)")
        let e = byExperience.outcome!.progress.penaltyCurve, r = byRound.outcome!.progress.penaltyCurve
        #expect(e[0] == [0], "\(e)")
        #expect(r[0][0] > 0, "\(r)")
        #expect(e[1][0] > 0 && e[2][0] > 0, "\(e)")
        #expect(byExperience.outcome!.finalModel.parameters != byRound.outcome!.finalModel.parameters)
        // Naive training has nothing to consolidate: both settings are the same run.
        let naive = FederationRunner.execute(try PersonalisedFederationTests.run(#"{"rounds": 9, "clients_per_round": 12}"#))
        let naiveRound = FederationRunner.execute(try PersonalisedFederationTests.run(#"{"rounds": 9, "clients_per_round": 12, "consolidate": "round"}"#))
        #expect(naive.outcome!.finalModel.parameters == naiveRound.outcome!.finalModel.parameters)
        // Threads and ranks do not change the numbers.
        for rank in ThreadRanks.execute(try PersonalisedFederationTests.run(#"{"rounds": 9, "clients_per_round": 12}"#, strategy: Self.ewc), ranks: 2) {
            let same = FederationTests.fingerprint(rank) == FederationTests.fingerprint(byExperience)
            #expect(same)
        }
    }

    @Test("the setting is validated and recorded only when not the default")
    func recorded() throws {
        PersonalisedFederationTests.refused(#"{"rounds": 3, "consolidate": "task"}"#, ".federation.consolidate")
        let run = try PersonalisedFederationTests.run(#"{"rounds": 3, "consolidate": "round"}"#)
        #expect(run.canonicalJSON.contains("\"consolidate\":\"round\"") || run.canonicalJSON.contains("\"consolidate\" : \"round\""), "\(run.canonicalJSON)")
        let plain = try PersonalisedFederationTests.run(#"{"rounds": 3}"#)
        #expect(!plain.canonicalJSON.contains("consolidate"))
    }
}
