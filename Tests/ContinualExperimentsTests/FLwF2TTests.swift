import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 29: FLwF-2T (Usmanova et al. 2021) — the client distils its previous-experience model
/// (the `lwf` strategy, consolidated at its experience boundaries) and the server model it
/// received (`server_distillation`).
@Suite("FLwF-2T: distillation from the client's previous model and the server's")
struct FLwF2TTests {
    static func run(_ federation: String, strategy: String = #"["naive"]"#) throws -> RunResult {
        FederationRunner.execute(try PersonalisedFederationTests.run(federation, strategy: strategy))
    }

    @Test("the server teacher is the received model: no pull on the first step, a pull after it")
    func serverTeacher() throws {
        // One round, one step: the client starts at the server model, so the term's gradient is 0.
        let plain = try Self.run(#"{"rounds": 1, "clients_per_round": 12, "local_steps": 1}"#)
        let taught = try Self.run(#"{"rounds": 1, "clients_per_round": 12, "local_steps": 1, "server_distillation": 5}"#)
        #expect(plain.status == .completed && taught.status == .completed, "\(taught.message)")
        let a = plain.outcome!.finalModel.parameters, b = taught.outcome!.finalModel.parameters
        #expect(zip(a, b).allSatisfy { abs($0 - $1) <= 1e-6 }, "max \(zip(a, b).map { abs($0 - $1) }.max() ?? 0)")
        // More steps move away from the teacher: the term pulls back, the models differ.
        let plain4 = try Self.run(#"{"rounds": 2, "clients_per_round": 12, "local_steps": 4}"#)
        let taught4 = try Self.run(#"{"rounds": 2, "clients_per_round": 12, "local_steps": 4, "server_distillation": 5}"#)
        let c = plain4.outcome!.finalModel.parameters, d = taught4.outcome!.finalModel.parameters
        #expect(zip(c, d).map { abs($0 - $1) }.max()! > 1e-4)
        // The pull is towards the server model: the update is smaller with the teacher.
        let start = FederationRunner.execute(try PersonalisedFederationTests.run(#"{"rounds": 1, "share": "none"}"#)).outcome!.finalModel.parameters
        let moved = { (p: [Float]) in zip(p, start).reduce(0.0) { $0 + Double($1.0 - $1.1) * Double($1.0 - $1.1) } }
        let once = try Self.run(#"{"rounds": 1, "clients_per_round": 12, "local_steps": 8}"#)
        let onceTaught = try Self.run(#"{"rounds": 1, "clients_per_round": 12, "local_steps": 8, "server_distillation": 50}"#)
        #expect(moved(onceTaught.outcome!.finalModel.parameters) < moved(once.outcome!.finalModel.parameters))
        // Both teachers together run, on any number of ranks.
        let text = #"{"rounds": 6, "clients_per_round": 6, "server_distillation": 1}"#
        let both = try Self.run(text, strategy: #"[{"type": "lwf", "lambda": 1}]"#)
        #expect(both.status == .completed, "\(both.message)")
        for rank in ThreadRanks.execute(try PersonalisedFederationTests.run(text, strategy: #"[{"type": "lwf", "lambda": 1}]"#), ranks: 2) {
            let same = FederationTests.fingerprint(rank) == FederationTests.fingerprint(both)
            #expect(same)
        }
    }

    @Test("server distillation settings are checked with their key")
    func refused() {
        PersonalisedFederationTests.refused(#"{"rounds": 3, "server_distillation": -1}"#, ".federation.server_distillation")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "share": "core", "server_distillation": 1}"#, ".federation.server_distillation")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "server_distillation_temperature": 2}"#, ".federation.server_distillation_temperature")
    }
}
