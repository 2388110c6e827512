import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 43: option combinations under which a federated rule's quantity was computed with the
/// wrong arithmetic are now either computed as the paper's quantity or refused with the key.
@Suite("Federated rules under optimizer, schedule and transport options")
struct FederatedRuleOptionTests {
    /// `PersonalisedFederationTests.run`'s experiment (12 habit users, 3 phases).
    static func run(_ federation: String, optimizer: String = #"{"type": "sgd", "lr": 0.1}"#,
                    training: String = #"{"batch_size": 16}"#) throws -> ResolvedRun {
        try PersonalisedFederationTests.run(federation, optimizer: optimizer, training: training)
    }

    static func refusal(_ federation: String, optimizer: String = #"{"type": "sgd", "lr": 0.1}"#,
                        training: String = #"{"batch_size": 16}"#) -> String {
        do {
            _ = try run(federation, optimizer: optimizer, training: training)
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    @Test("FedNova's aᵢ with weight decay is [1 − (1 − η·wd)^τ]/(η·wd), with decay and a proximal term c = μ + wd")
    func fedNovaWithWeightDecay() throws {
        let plain = FederationConfig(rounds: 1)
        var nova = plain
        nova.aggregation = .fednova
        // The issue's numbers: η = 0.1, wd = 0.05, τ = 14 gives 13.55, not 14 (η and wd are
        // Float in the optimizer spec, so the reference takes their Float values).
        let eta = Double(Float(0.1)), wd = Double(Float(0.05))
        let a = nova.novaNormalizer(steps: 14, optimizer: .sgd(learningRate: 0.1, weightDecay: 0.05))
        #expect(abs(a - (1 - pow(1 - eta * wd, 14.0)) / (eta * wd)) < 1e-12)
        #expect(abs(a - 13.55) < 0.01)
        nova.proximalMu = 0.2
        let both = nova.novaNormalizer(steps: 14, optimizer: .sgd(learningRate: 0.1, weightDecay: 0.05))
        #expect(abs(both - (1 - pow(1 - eta * (0.2 + wd), 14.0)) / (eta * (0.2 + wd))) < 1e-12)
        // Plain SGD is still τ, and no steps is 0.
        #expect(plain.novaNormalizer(steps: 14, optimizer: .sgd(learningRate: 0.1)) == 14)
        #expect(nova.novaNormalizer(steps: 0, optimizer: .sgd(learningRate: 0.1, weightDecay: 0.05)) == 0)
    }

    @Test("FedNova with momentum and weight decay together is refused: its normaliser is not defined here")
    func fedNovaMomentumAndDecayRefused() {
        let message = Self.refusal(#"{"rounds": 2, "clients_per_round": 6, "aggregation": "fednova"}"#,
                                   optimizer: #"{"type": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}"#)
        #expect(message.contains(".federation.aggregation") && message.contains("weight_decay"), "\(message)")
    }

    @Test("SCAFFOLD, FedNova and Ditto take one constant local rate: a changing lr_schedule is refused, a constant one is not",
          arguments: [#""aggregation": "scaffold""#, #""aggregation": "fednova""#, #""personal": "ditto""#])
    func constantRateRulesRefuseSchedules(rule: String) throws {
        let federation = #"{"rounds": 2, "clients_per_round": 6, "# + rule + "}"
        for schedule in [#"{"type": "cosine"}"#, #"{"type": "step", "every_epochs": 1, "gamma": 0.5}"#,
                         #"{"type": "constant", "warmup_steps": 2}"#] {
            let message = Self.refusal(federation, training: #"{"batch_size": 16, "lr_schedule": \#(schedule)}"#)
            #expect(message.contains(".training.lr_schedule"), "\(rule) with \(schedule): \(message)")
        }
        _ = try Self.run(federation, training: #"{"batch_size": 16, "lr_schedule": {"type": "constant"}}"#)
        // FedAvg with a schedule is fine: its server step takes the clients' models as they are.
        _ = try Self.run(#"{"rounds": 2, "clients_per_round": 6}"#, training: #"{"batch_size": 16, "lr_schedule": {"type": "cosine"}}"#)
    }

    @Test("SCAFFOLD under secure aggregation uploads the masked Δcᵢ beside the masked update")
    func scaffoldSecureAggregationBytes() throws {
        let text = #"{"rounds": 2, "clients_per_round": 3, "aggregation": "scaffold", "secure_aggregation": true}"#
        let r = FederationRunner.execute(try Self.run(text))
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        let p = f.sharedParameters, m = 3
        // Per participant: keys 64, (m − 1) shares of 80, and two dense 32-bit vectors (Δy, Δcᵢ).
        #expect(f.bytesUp == [m * (64 + (m - 1) * 80 + 8 * p), m * (64 + (m - 1) * 80 + 8 * p)])
        let fedavg = FederationRunner.execute(try Self.run(#"{"rounds": 2, "clients_per_round": 3, "secure_aggregation": true}"#))
        let plain = try #require(fedavg.federation)
        #expect(f.bytesUp[0] - plain.bytesUp[0] == m * 4 * p)
    }
}
