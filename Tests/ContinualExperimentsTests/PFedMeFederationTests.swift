import ContinualCore
import ContinualFederated
import Foundation
import Testing
@testable import ContinualExperiments

/// pFedMe (issue 29) end to end: reachable from JSON with its keys validated, FedAvg in its
/// λ → ∞ limit, and the same bits with 1 or 2 threads and on 2 ranks.
@Suite("pFedMe federation")
struct PFedMeFederationTests {
    typealias P = PersonalisedFederationTests

    @Test("pFedMe runs end to end: the phones predict with θ̂(w_g), β changes the global model")
    func runs() throws {
        let fedavg = FederationRunner.execute(try P.run(#"{"rounds": 4, "clients_per_round": 6}"#))
        let r = FederationRunner.execute(try P.run(#"{"rounds": 4, "clients_per_round": 6, "personal": "pfedme", "pfedme_lambda": 5, "pfedme_inner_steps": 3, "pfedme_personal_lr": 0.05}"#))
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        #expect(f.aggregated.allSatisfy { $0 })
        #expect(f.config.pfedmeRound(optimizer: .sgd(learningRate: 0.1)).personalRate == 0.05)
        #expect(r.outcome!.finalModel.parameters != fedavg.outcome!.finalModel.parameters)
        #expect(f.personalAccuracy != f.globalAccuracy)
        let half = FederationRunner.execute(try P.run(#"{"rounds": 4, "clients_per_round": 6, "personal": "pfedme", "pfedme_lambda": 5, "pfedme_inner_steps": 3, "pfedme_personal_lr": 0.05, "pfedme_beta": 0.5}"#))
        #expect(half.status == .completed, "\(half.message)")
        #expect(half.outcome!.finalModel.parameters != r.outcome!.finalModel.parameters)
        // Defaults: λ = 15, K = 5, ν = the local learning rate, β = 1.
        let defaults = try #require(try P.run(#"{"rounds": 3, "personal": "pfedme"}"#).config.federation)
        let round = defaults.pfedmeRound(optimizer: .sgd(learningRate: 0.1))
        #expect(round.lambda == 15 && round.innerSteps == 5 && round.personalRate == 0.1 && round.rate == 0.1)
        #expect(defaults.pfedmeBeta == 1)
    }

    @Test("training energy counts every inner step: K inner steps cost K times one, rows and weight traffic alike")
    func energyCountsInnerSteps() throws {
        // Rows and steps per round depend on the data sizes only, and the energy model is linear
        // in both, so K = 3 must cost exactly 3× K = 1 (counting the local steps alone gave
        // a·3R + b·S: pFedMe's weight traffic, most of a small batch's energy, a third of it).
        // The run-level figures (the summary's energy_j and training_flops) count them the same way.
        func costs(_ k: Int) throws -> (rounds: Double, run: Double, flops: Double) {
            let r = FederationRunner.execute(try P.run(#"{"rounds": 3, "clients_per_round": 6, "personal": "pfedme", "pfedme_inner_steps": \#(k)}"#))
            #expect(r.status == .completed, "\(r.message)")
            let o = try #require(r.outcome), c = try #require(r.costs)
            let flops = TrainingBudget(config: r.run.config.training, outcome: o, costs: c).trainingFLOPs.reduce(0, +)
            return (try #require(r.federation).trainingJoules.reduce(0, +), try #require(r.device).trainingJoules, Double(flops))
        }
        let one = try costs(1), three = try costs(3)
        #expect(one.rounds > 0 && abs(three.rounds / one.rounds - 3) <= 1e-9, "K = 3 costs \(three.rounds / one.rounds)× K = 1")
        #expect(one.run > 0 && abs(three.run / one.run - 3) <= 1e-9, "run level: K = 3 costs \(three.run / one.run)× K = 1")
        #expect(one.flops > 0 && abs(three.flops / one.flops - 3) <= 1e-9, "training FLOPs: \(three.flops / one.flops)×")
    }

    @Test("λ = 1000 with ν = 1/λ and β = 1 is FedAvg to 1e-3: the same batches, the same SGD steps")
    func largeLambdaIsFedAvg() throws {
        let fedavg = FederationRunner.execute(try P.run(#"{"rounds": 4, "clients_per_round": 6}"#))
        let r = FederationRunner.execute(try P.run(#"{"rounds": 4, "clients_per_round": 6, "personal": "pfedme", "pfedme_lambda": 1000, "pfedme_personal_lr": 0.001, "pfedme_inner_steps": 2}"#))
        #expect(r.status == .completed, "\(r.message)")
        let a = r.outcome!.finalModel.parameters, b = fedavg.outcome!.finalModel.parameters
        let gap = zip(a, b).map { abs($0 - $1) }.max()!
        #expect(gap <= 1e-3, "max |pFedMe − FedAvg| = \(gap)")
        let moved = zip(b, FederationRunner.execute(try P.run(#"{"rounds": 1, "clients_per_round": 6}"#)).outcome!.finalModel.parameters)
        #expect(moved.contains { abs($0 - $1) > 1e-2 })
    }

    @Test("bad pFedMe settings are refused with the key path")
    func refusals() {
        P.refused(#"{"rounds": 3, "personal": "pfedme"}"#, ".federation.personal", optimizer: #"{"type": "sgd", "lr": 0.1, "momentum": 0.9}"#)
        P.refused(#"{"rounds": 3, "personal": "pfedme"}"#, ".federation.personal", optimizer: #"{"type": "adam", "lr": 0.01}"#)
        P.refused(#"{"rounds": 3, "personal": "pfedme"}"#, ".strategy", strategy: #"["ewc"]"#)
        P.refused(#"{"rounds": 3, "pfedme_lambda": 15}"#, ".federation.pfedme_lambda")
        P.refused(#"{"rounds": 3, "pfedme_beta": 1}"#, ".federation.pfedme_beta")
        P.refused(#"{"rounds": 3, "personal": "pfedme", "pfedme_lambda": 0}"#, ".federation.pfedme_lambda")
        P.refused(#"{"rounds": 3, "personal": "pfedme", "pfedme_inner_steps": 0}"#, ".federation.pfedme_inner_steps")
        P.refused(#"{"rounds": 3, "personal": "pfedme", "pfedme_personal_lr": -1}"#, ".federation.pfedme_personal_lr")
        P.refused(#"{"rounds": 3, "personal": "pfedme", "pfedme_beta": 0}"#, ".federation.pfedme_beta")
        P.refused(#"{"rounds": 3, "personal": "pfedme", "pfedme_lambda": "x"}"#, "pfedme_lambda")
        P.refused(#"{"rounds": 3, "personal": "pfedme", "pfedme_lamda": 1}"#, "pfedme_lamda")
        P.refused(#"{"rounds": 3, "personal": "pfedme", "share": "core"}"#, ".federation.share")
        P.refused(#"{"rounds": 3, "personal": "pfedme", "aggregation": "scaffold"}"#, ".federation.aggregation")
        P.refused(#"{"rounds": 3, "personal": "pfedme", "proximal_mu": 0.1}"#, ".federation.proximal_mu")
        P.refused(#"{"rounds": 3, "personal": "pfedme", "fedbuff": {"buffer_size": 2}}"#, ".federation.personal")
    }

    @Test("pFedMe gives the same bits with 1 and 2 threads and on 2 ranks")
    func deterministic() throws {
        let text = #"{"rounds": 4, "clients_per_round": 6, "personal": "pfedme", "pfedme_lambda": 5, "pfedme_beta": 1.5, "availability": "device", "jobs": 2}"#
        let serial = FederationRunner.execute(try P.run(text))
        #expect(serial.status == .completed, "\(serial.message)")
        let one = FederationRunner.execute(try P.run(text.replacingOccurrences(of: #""jobs": 2"#, with: #""jobs": 1"#)))
        #expect(FederationTests.fingerprint(one) == FederationTests.fingerprint(serial))
        for r in ThreadRanks.execute(try P.run(text), ranks: 2) {
            #expect(FederationTests.fingerprint(r) == FederationTests.fingerprint(serial))
        }
    }
}
