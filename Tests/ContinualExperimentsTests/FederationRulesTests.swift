import ContinualCore
import ContinualFederated
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 29: robust rules that cannot aggregate are refused before running, FedNova, Bulyan and
/// the adaptive server optimizers run end to end (bit-identical across ranks), global ACC has one
/// definition from the run to the file, and `validate` and `run` share one memory estimate.
@Suite("Federated rules, global ACC and the memory estimate")
struct FederationRulesTests {
    /// `FederationTests.run`'s experiment (12 habit users, 3 phases) with `optimizer`.
    static func run(_ federation: String, users: Int = 12, optimizer: String = #"{"type": "sgd", "lr": 0.1}"#) throws -> ResolvedRun {
        let json = """
        {"name": "fed", "seed": 5,
         "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 20,
                      "phases": ["morning", "night", "morning"]},
         "population": {"users": \(users), "quantiles": [0, 0.5, 1]},
         "model": {"hidden": [8]}, "optimizer": \(optimizer),
         "training": {"batch_size": 16}, "strategy": ["naive"],
         "federation": \(federation)}
        """
        return try ExperimentFile.parse(data: Data(json.utf8)).runs[0]
    }

    @Test("robust rules that can never aggregate are refused with the key that sets their minimum")
    func unaggregatableRulesAreRefused() throws {
        let cases: [(String, String)] = [
            // Krum f = 1 needs n > 2f + 2 = 4: 4 invited is not enough.
            (#"{"rounds": 3, "clients_per_round": 4, "aggregation": "krum", "byzantine": 1}"#, ".federation.byzantine"),
            // Multi-Krum m = 6, f = 1 needs m ≤ n − f: 7 clients; 6 are invited.
            (#"{"rounds": 3, "clients_per_round": 6, "aggregation": "multi_krum", "byzantine": 1, "krum_selected": 6}"#,
             ".federation.krum_selected"),
            // Poisson q = 0.25 of 12: 3 expected per round, Krum f = 1 needs 5.
            (#"{"rounds": 3, "sampling": "poisson", "client_fraction": 0.25, "aggregation": "krum", "byzantine": 1}"#,
             ".federation.byzantine"),
            // Bulyan f = 1 needs n ≥ 4f + 3 = 7.
            (#"{"rounds": 3, "clients_per_round": 6, "aggregation": "bulyan", "byzantine": 1}"#, ".federation.byzantine"),
            // FedNova normalises by SGD steps: Adam has no such normaliser.
            (#"{"rounds": 3, "clients_per_round": 6, "aggregation": "fednova"}"#, ".federation.aggregation"),
            // server_beta2 is FedAdam's and FedYogi's, not FedAdagrad's.
            (#"{"rounds": 3, "server_optimizer": "fedadagrad", "server_beta2": 0.9}"#, ".federation.server_beta2"),
            (#"{"rounds": 3, "aggregation": "bulyan", "krum_selected": 2}"#, ".federation.krum_selected"),
        ]
        for (k, (text, path)) in cases.enumerated() {
            let optimizer = k == 4 ? #"{"type": "adam", "lr": 0.01}"# : #"{"type": "sgd", "lr": 0.1}"#
            #expect(throws: (any Error).self, "\(text) must be refused") { _ = try Self.run(text, optimizer: optimizer) }
            do { _ = try Self.run(text, optimizer: optimizer) } catch {
                #expect("\(error)".contains(path), "\(text): \(error)")
            }
        }
        // The smallest settings that can aggregate are accepted.
        _ = try Self.run(#"{"rounds": 3, "clients_per_round": 5, "aggregation": "krum", "byzantine": 1}"#)
        _ = try Self.run(#"{"rounds": 3, "clients_per_round": 7, "aggregation": "bulyan", "byzantine": 1}"#)
    }

    @Test("FedNova: one step each is FedAvg up to rounding; unequal step counts change the model")
    func fedNovaEndToEnd() throws {
        let nova1 = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 5, "aggregation": "fednova", "local_steps": 1}"#))
        let avg1 = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 5, "local_steps": 1}"#))
        #expect(nova1.status == .completed, "\(nova1.message)")
        #expect(nova1.federation!.aggregated.allSatisfy { $0 })
        let a = nova1.outcome!.finalModel.parameters, b = avg1.outcome!.finalModel.parameters
        #expect(zip(a, b).allSatisfy { abs($0 - $1) <= 1e-5 * max(1, abs($1)) })
        // Full local epochs: a client's first round covers everything since round 0, so step
        // counts differ between clients and the normalised average is not FedAvg.
        let nova = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 5, "aggregation": "fednova"}"#))
        let avg = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 5}"#))
        #expect(nova.status == .completed && nova.federation!.aggregated.allSatisfy { $0 })
        #expect(zip(nova.outcome!.finalModel.parameters, avg.outcome!.finalModel.parameters).contains { abs($0 - $1) > 1e-4 })
    }

    @Test("Bulyan, FedNova and FedYogi/FedAdagrad give the same bits in one process and on 2 ranks")
    func newRulesAreDeterministicAcrossRanks() throws {
        for text in [#"{"rounds": 4, "clients_per_round": 8, "aggregation": "bulyan", "byzantine": 1, "adversary_fraction": 0.2, "server_optimizer": "fedyogi", "jobs": 2}"#,
                     #"{"rounds": 4, "clients_per_round": 6, "aggregation": "fednova", "availability": "device", "server_optimizer": "fedadagrad", "jobs": 2}"#] {
            let serial = FederationRunner.execute(try Self.run(text))
            #expect(serial.status == .completed, "\(serial.message)")
            #expect(serial.federation!.aggregated.contains(true))
            for r in ThreadRanks.execute(try Self.run(text), ranks: 2) {
                let same = FederationTests.fingerprint(r) == FederationTests.fingerprint(serial)
                #expect(same, "\(text)")
            }
        }
    }

    @Test("Ditto: λ = 0 personal models are local-only's bit for bit; the global model is FedAvg's whatever λ; bad settings refused")
    func ditto() throws {
        // Every client takes part in every round (12 of 12, always available), so the personal
        // model trains on exactly the data local-only training sees, in the same rounds.
        let local = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 12, "share": "none"}"#))
        let ditto0 = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 12, "personal": "ditto", "ditto_lambda": 0}"#))
        #expect(ditto0.status == .completed, "\(ditto0.message)")
        #expect(ditto0.population!.matrices == local.population!.matrices)
        let fedavg = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 7}"#))
        let ditto = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 7, "personal": "ditto", "ditto_lambda": 0.5}"#))
        #expect(ditto.outcome!.finalModel.parameters == fedavg.outcome!.finalModel.parameters)
        #expect(ditto.federation!.globalAccuracy == fedavg.federation!.globalAccuracy)
        #expect(ditto.population!.matrices != fedavg.population!.matrices)   // the phones predict with v, not w
        for (text, path, optimizer) in [
            (#"{"rounds": 3, "share": "core", "personal": "ditto"}"#, ".federation.personal", #"{"type": "sgd", "lr": 0.1}"#),
            (#"{"rounds": 3, "personal": "ditto"}"#, ".federation.personal", #"{"type": "adam", "lr": 0.01}"#),
            (#"{"rounds": 3, "ditto_lambda": 2}"#, ".federation.ditto_lambda", #"{"type": "sgd", "lr": 0.1}"#),
        ] {
            #expect(throws: (any Error).self, "\(text)") { _ = try Self.run(text, optimizer: optimizer) }
            do { _ = try Self.run(text, optimizer: optimizer) } catch { #expect("\(error)".contains(path), "\(text): \(error)") }
        }
    }

    @Test("SCAFFOLD: the server control is the mean of all clients' controls; twice the bytes; the same bits on 2 ranks")
    func scaffold() throws {
        let text = #"{"rounds": 6, "clients_per_round": 5, "aggregation": "scaffold", "availability": "device", "jobs": 2}"#
        let r = FederationRunner.execute(try Self.run(text))
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        #expect(f.serverControl.count == f.sharedParameters && f.clientControlMean.count == f.sharedParameters)
        #expect(f.serverControl.contains { $0 != 0 })
        for j in f.serverControl.indices {
            #expect(abs(Double(f.serverControl[j]) - f.clientControlMean[j]) <= 1e-5 * max(1, abs(f.clientControlMean[j])))
        }
        // Δy and Δcᵢ up, x and c down: 2 × 4 bytes per parameter each way.
        for k in f.completed.indices { #expect(f.bytesUp[k] == f.completed[k] * 8 * f.sharedParameters) }
        for rank in ThreadRanks.execute(try Self.run(text), ranks: 2) {
            let same = FederationTests.fingerprint(rank) == FederationTests.fingerprint(r)
            #expect(same)
        }
        #expect(throws: (any Error).self) { _ = try Self.run(#"{"rounds": 2, "aggregation": "scaffold", "share": "core"}"#) }
        #expect(throws: (any Error).self) { _ = try Self.run(#"{"rounds": 2, "aggregation": "scaffold", "proximal_mu": 0.1}"#) }
    }

    @Test("global ACC is the final global model over every experience; with personal = global it is the run's ACC; the file stores it")
    func globalACCHasOneDefinition() throws {
        let file = try ExperimentFile.parse(data: Data("""
        {"name": "fed", "seed": 3,
         "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 20, "phases": ["morning", "night", "morning"]},
         "population": {"users": 8}, "model": {"hidden": [8]},
         "federation": {"rounds": 6, "clients_per_round": 4, "evaluate_every": 2}}
        """.utf8))
        let r = RunExecutor.execute(file.runs[0])
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        let flat = f.globalFinalAccuracy.flatMap { $0 }
        #expect(flat.count == 8 * 3)
        #expect(abs(f.globalACC - flat.reduce(0, +) / Double(flat.count)) < 1e-15)
        // The phones predict with the global model: personal ACC (the run's ACC) is the same number.
        #expect(abs(f.globalACC - r.metrics!.named.first { $0.name == "acc" }!.value) < 1e-12)
        // Not the last evaluation on the clients' current data (the README's former column).
        #expect(f.globalAccuracy.last! != f.globalACC)
        try withScenarioTempDir { dir in
            let path = dir + "/fed.h5"
            try ResultsWriter.writeExperiment([r], experiment: file, to: path)
            let stored = try ResultsReader.read(path: path).runs[0]
            #expect(stored.federation?.globalACC == f.globalACC)
            #expect(stored.federation?.share == "all")
        }
    }

    @Test("validate and run refuse and accept a federation at the same memory limit")
    func oneMemoryEstimate() throws {
        let run = try FederationTests.run(#"{"rounds": 10, "clients_per_round": 5}"#, users: 2000)
        let estimate = try Preflight.check(run, limits: ResourceLimits(memoryBytes: 1e15))
        #expect(estimate.memoryBytes > 0 && estimate.memoryKey == ".population.users")
        let above = ResourceLimits(memoryBytes: estimate.memoryBytes * 1.01)
        let below = ResourceLimits(memoryBytes: estimate.memoryBytes * 0.99)
        #expect(Preflight.resourceProblem(run, limits: above) == nil)
        #expect(throws: ConfigError.self) { try Preflight.check(run, limits: below) }
        let refused = try #require(Preflight.resourceProblem(run, limits: below))
        #expect(refused.description.contains("--max-memory") && refused.description.contains(RunEstimate.bytes(estimate.memoryBytes)))
        _ = try Preflight.check(run, limits: above)
    }
}
