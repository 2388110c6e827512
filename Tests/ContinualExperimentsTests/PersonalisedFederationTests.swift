import ContinualCore
import ContinualFederated
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 29: FedRep, APFL, Per-FedAvg and q-FedAvg end to end — each reachable from JSON with its
/// keys validated, each checked against the limit where it must equal a method already tested,
/// and the same bits in one process and on 2 ranks.
@Suite("Personalised federated methods")
struct PersonalisedFederationTests {
    static func run(_ federation: String, optimizer: String = #"{"type": "sgd", "lr": 0.1}"#,
                    strategy: String = #"["naive"]"#, training: String = #"{"batch_size": 16}"#) throws -> ResolvedRun {
        let json = """
        {"name": "fed", "seed": 5,
         "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 20,
                      "phases": ["morning", "night", "morning"]},
         "population": {"users": 12, "quantiles": [0, 0.5, 1]},
         "model": {"hidden": [8]}, "optimizer": \(optimizer),
         "training": \(training), "strategy": \(strategy),
         "federation": \(federation)}
        """
        return try ExperimentFile.parse(data: Data(json.utf8)).runs[0]
    }

    static func refused(_ text: String, _ path: String, optimizer: String = #"{"type": "sgd", "lr": 0.1}"#,
                        strategy: String = #"["naive"]"#) {
        do {
            _ = try run(text, optimizer: optimizer, strategy: strategy)
            Issue.record("\(text) must be refused")
        } catch {
            #expect("\(error)".contains(path), "\(text): \(error)")
        }
    }

    @Test("q-FedAvg: q = 0 is FedAvg when every client holds the same data count; q = 1 is not")
    func qFedAvg() throws {
        // 12 of 12 clients every round, equal schedules: FedAvg's sample weights are all equal,
        // so the sample-weighted and the unweighted mean coincide.
        let fedavg = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 12}"#))
        let q0 = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 12, "aggregation": "qfedavg", "qfed_q": 0}"#))
        let q1 = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 12, "aggregation": "qfedavg", "qfed_q": 1}"#))
        #expect(q0.status == .completed && q1.status == .completed, "\(q0.message) \(q1.message)")
        let a = q0.outcome!.finalModel.parameters, b = fedavg.outcome!.finalModel.parameters
        #expect(zip(a, b).allSatisfy { abs($0 - $1) <= 1e-5 * max(1, abs($1)) })
        #expect(zip(q1.outcome!.finalModel.parameters, b).contains { abs($0 - $1) > 1e-4 })
        #expect(q1.federation!.config.rule(optimizer: .sgd(learningRate: 0.1)) == .qFair(q: 1, lipschitz: 1 / Double(Float(0.1))))
        Self.refused(#"{"rounds": 3, "qfed_q": 1}"#, ".federation.qfed_q")
        Self.refused(#"{"rounds": 3, "aggregation": "qfedavg", "qfed_lipschitz": 0}"#, ".federation.qfed_lipschitz")
        Self.refused(#"{"rounds": 3, "aggregation": "qfedavg", "share": "core"}"#, ".federation.aggregation")
    }

    @Test("APFL: fixed α = 0 predicts with FedAvg's global model, fixed α = 1 is local-only, bit for bit")
    func apflLimits() throws {
        let fedavg = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 7}"#))
        let apfl0 = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 7, "personal": "apfl", "apfl_alpha": 0, "apfl_alpha_lr": 0}"#))
        #expect(apfl0.status == .completed, "\(apfl0.message)")
        #expect(apfl0.outcome!.finalModel.parameters == fedavg.outcome!.finalModel.parameters)
        #expect(apfl0.population!.matrices == fedavg.population!.matrices)
        // Every client in every round: v trains on exactly local-only's data in the same rounds.
        let local = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 12, "share": "none"}"#))
        let apfl1 = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 12, "personal": "apfl", "apfl_alpha": 1, "apfl_alpha_lr": 0}"#))
        #expect(apfl1.status == .completed, "\(apfl1.message)")
        #expect(apfl1.population!.matrices == local.population!.matrices)
        // Learned α: the global model is still FedAvg's, the phones' models are neither limit.
        let apfl = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 7, "personal": "apfl"}"#))
        #expect(apfl.outcome!.finalModel.parameters == fedavg.outcome!.finalModel.parameters)
        #expect(apfl.population!.matrices != fedavg.population!.matrices)
        Self.refused(#"{"rounds": 3, "apfl_alpha": 0.5}"#, ".federation.apfl_alpha")
        Self.refused(#"{"rounds": 3, "personal": "apfl", "apfl_alpha": 1.5}"#, ".federation.apfl_alpha")
        Self.refused(#"{"rounds": 3, "personal": "apfl", "apfl_alpha_lr": -1}"#, ".federation.apfl_alpha_lr")
        Self.refused(#"{"rounds": 3, "personal": "apfl", "share": "core"}"#, ".federation.share")
    }

    @Test("FedRep: the head never leaves the phone, only the body's bytes travel; the phases run head first, then body")
    func fedRepSharesTheBodyOnly() throws {
        let text = #"{"rounds": 4, "clients_per_round": 5, "personal": "fedrep", "fedrep_head_epochs": 3}"#
        let r = FederationRunner.execute(try Self.run(text))
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        #expect(f.config.share == .core)
        let model = r.outcome!.finalModel
        let head = model.layers.last { $0.kind == .dense }!
        #expect(f.sharedParameters == f.totalParameters - head.parameterCount)
        for k in f.completed.indices { #expect(f.bytesUp[k] == f.completed[k] * 4 * f.sharedParameters) }
        // The server's head is the initial one (local-only's global model never moves), its body is not.
        let initial = FederationRunner.execute(try Self.run(#"{"rounds": 1, "share": "none"}"#)).outcome!.finalModel.parameters
        let headRange = head.offset..<(head.offset + head.parameterCount)
        #expect(Array(model.parameters[headRange]) == Array(initial[headRange]))
        #expect(model.parameters != initial)
        Self.refused(#"{"rounds": 3, "fedrep_head_epochs": 2}"#, ".federation.fedrep_head_epochs")
        Self.refused(#"{"rounds": 3, "personal": "fedrep", "share": "all"}"#, ".federation.share")
        Self.refused(#"{"rounds": 3, "personal": "fedrep", "local_steps": 4}"#, ".federation.local_steps")
    }

    /// A client with `data`, its learner at `parameters`.
    static func client(_ parameters: [Float], data: Samples, plugins: [any StrategyPlugin] = [],
                       schedule: ArrivalSchedule? = nil) throws -> FederatedClient {
        let spec = MLPSpec(inputs: data.dimension, hidden: [6], head: .multiclass(classes: 3))
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.2), options: TrainingOptions(epochs: 1, batchSize: 8),
                              plugins: plugins, seed: 3)
        try trainer.prepareRounds(dimension: data.dimension, head: spec.head, featureNames: ["a", "b", "c", "d"], experienceCount: 10)
        if !parameters.isEmpty { trainer.model.parameters = parameters }
        let tests = (0..<(schedule?.ends.count ?? 1)).map {
            Experience(index: $0, name: "e", train: Samples(dimension: data.dimension), test: data)
        }
        return FederatedClient(id: 0, trainer: trainer, modelSeed: 11,
                               schedule: schedule ?? ArrivalSchedule(trainSizes: [data.count], rounds: 1),
                               dataSeed: 0, train: data, tests: tests, adversary: false,
                               available: [Bool](repeating: true, count: schedule?.rounds ?? 1), pattern: "")
    }

    @Test("FedRep's round: the head phase leaves the body untouched, the body phase the head; head-then-body is the order")
    func fedRepPhaseOrder() throws {
        var rng = RandomSource(seed: 8)
        var features: [Float] = [], labels: [Int32] = []
        for _ in 0..<40 {
            let x = (0..<4).map { _ in Float(rng.normal()) }
            features += x
            labels.append(x[0] > 0 ? 0 : (x[1] > 0 ? 1 : 2))
        }
        let data = Samples(dimension: 4, features: features, labels: labels)
        var c = try Self.client([], data: data)
        let start = c.trainer.model.parameters
        let out = c.trainer.model.layers.last!
        let head = start.indices.map { $0 >= out.offset && $0 < out.offset + out.parameterCount }
        let body = head.map { !$0 }
        let one = TrainingPass(epochs: 1, shuffle: true), none = TrainingPass(epochs: 0, shuffle: true)
        var scratch = LoopScratch()
        func phase(_ headPass: TrainingPass, _ bodyPass: TrainingPass, from p: [Float]) throws -> [Float] {
            var k = try Self.client(p, data: data)
            _ = try k.trainFedRep(on: data, head: head, body: body, headPass: headPass, bodyPass: bodyPass,
                                  period: 0, round: 0, scratch: &scratch)
            #expect(k.trainer.model.trainable == nil)   // the freezing is undone
            return k.trainer.model.parameters
        }
        let headOnly = try phase(one, none, from: start)
        #expect(start.indices.allSatisfy { head[$0] || headOnly[$0] == start[$0] })
        #expect(start.indices.contains { head[$0] && headOnly[$0] != start[$0] })
        let bodyOnly = try phase(none, one, from: start)
        #expect(start.indices.allSatisfy { body[$0] || bodyOnly[$0] == start[$0] })
        // The whole round: the head phase, then the body phase from its result (same shuffles).
        let both = try c.trainFedRep(on: data, head: head, body: body, headPass: one, bodyPass: one, period: 0, round: 0, scratch: &scratch)
        #expect(both.steps == 2 * 5)
        var k = try Self.client(headOnly, data: data)
        k.trainer.model.trainable = body
        _ = try k.trainRound(on: data, period: 0, round: 0, pass: one, scratch: &scratch)
        #expect(c.trainer.model.parameters == k.trainer.model.parameters)
        // Body first, then head, lands elsewhere.
        var reversed = try Self.client(bodyOnly, data: data)
        reversed.trainer.model.trainable = head
        _ = try reversed.trainRound(on: data, period: 0, round: 0, pass: one, scratch: &scratch, stream: ".head")
        #expect(reversed.trainer.model.parameters != c.trainer.model.parameters)
    }

    @Test("Per-FedAvg runs end to end: its global model is not FedAvg's, the phones adapt it; bad settings refused")
    func perFedAvg() throws {
        let fedavg = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 6}"#))
        for variant in ["first_order", "hessian_free"] {
            let r = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 6, "personal": "per_fedavg", "per_fedavg_alpha": 0.05, "per_fedavg_variant": "\#(variant)"}"#))
            #expect(r.status == .completed, "\(r.message)")
            let f = try #require(r.federation)
            #expect(f.aggregated.allSatisfy { $0 })
            #expect(r.outcome!.finalModel.parameters != fedavg.outcome!.finalModel.parameters)
            // The phone predicts with the adapted model, not the global one.
            #expect(f.personalAccuracy != f.globalAccuracy)
        }
        Self.refused(#"{"rounds": 3, "personal": "per_fedavg"}"#, ".federation.personal", optimizer: #"{"type": "sgd", "lr": 0.1, "momentum": 0.9}"#)
        Self.refused(#"{"rounds": 3, "personal": "per_fedavg"}"#, ".strategy", strategy: #"["ewc"]"#)
        Self.refused(#"{"rounds": 3, "personal": "per_fedavg", "per_fedavg_delta": 0.01}"#, ".federation.per_fedavg_delta")
        Self.refused(#"{"rounds": 3, "personal": "per_fedavg", "aggregation": "scaffold"}"#, ".federation.aggregation")
        Self.refused(#"{"rounds": 3, "per_fedavg_alpha": 0.01}"#, ".federation.per_fedavg_alpha")
    }

    @Test("the four methods give the same bits in one process and on 2 ranks")
    func deterministicAcrossRanks() throws {
        for text in [#"{"rounds": 4, "clients_per_round": 6, "aggregation": "qfedavg", "personal": "apfl", "availability": "device", "jobs": 2}"#,
                     #"{"rounds": 4, "clients_per_round": 6, "personal": "fedrep", "fedrep_head_epochs": 2, "jobs": 2}"#,
                     #"{"rounds": 4, "clients_per_round": 6, "personal": "per_fedavg", "per_fedavg_variant": "hessian_free", "jobs": 2}"#] {
            let serial = FederationRunner.execute(try Self.run(text))
            #expect(serial.status == .completed, "\(serial.message)")
            for r in ThreadRanks.execute(try Self.run(text), ranks: 2) {
                let same = FederationTests.fingerprint(r) == FederationTests.fingerprint(serial)
                #expect(same, "\(text)")
            }
        }
    }
}
