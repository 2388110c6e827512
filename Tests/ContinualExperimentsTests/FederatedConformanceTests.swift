import ContinualCore
import ContinualFederated
import Foundation
import Testing
@testable import ContinualExperiments

/// The federated conformance suite: properties every registered algorithm (`FederatedAlgorithms`)
/// must have, run over one configuration per algorithm. A new algorithm adds its line to
/// `configurations`; `everyRegisteredAlgorithmIsCovered` fails until it does.
@Suite("Federated conformance")
struct FederatedConformanceTests {
    /// One federation block per registered algorithm (the algorithm's type name first), small
    /// enough to run in a second, with enough rounds that state carries across a checkpoint.
    static let configurations: [(algorithm: String, federation: String)] = [
        ("FedAvg", #"{"rounds": 5, "clients_per_round": 4, "server_optimizer": "fedadam", "server_lr": 0.05}"#),
        ("LocalTraining", #"{"rounds": 5, "clients_per_round": 4, "personal": "local"}"#),
        ("FedRep", #"{"rounds": 5, "clients_per_round": 4, "personal": "fedrep", "fedrep_head_epochs": 2}"#),
        ("Ditto", #"{"rounds": 5, "clients_per_round": 4, "personal": "ditto"}"#),
        ("APFL", #"{"rounds": 5, "clients_per_round": 4, "personal": "apfl"}"#),
        ("PerFedAvg", #"{"rounds": 5, "clients_per_round": 4, "personal": "per_fedavg"}"#),
        ("PFedMe", #"{"rounds": 5, "clients_per_round": 4, "personal": "pfedme", "pfedme_lambda": 5, "pfedme_inner_steps": 3, "pfedme_personal_lr": 0.05}"#),
        ("ServerDistillation", #"{"rounds": 5, "clients_per_round": 4, "server_distillation": 1}"#),
        ("MOON", #"{"rounds": 5, "clients_per_round": 4, "moon": {"mu": 1}}"#),
        ("FedProx", #"{"rounds": 5, "clients_per_round": 4, "proximal_mu": 0.1}"#),
        ("SCAFFOLD", #"{"rounds": 5, "clients_per_round": 4, "aggregation": "scaffold"}"#),
        ("FedNova", #"{"rounds": 5, "clients_per_round": 4, "aggregation": "fednova"}"#),
        ("QFedAvg", #"{"rounds": 5, "clients_per_round": 4, "aggregation": "qfedavg", "qfed_lipschitz": 10}"#),
        ("FedBuff", #"{"rounds": 6, "clients_per_round": 4, "fedbuff": {"buffer_size": 3}}"#),
        ("FedDyn", #"{"rounds": 5, "clients_per_round": 4, "aggregation": "feddyn", "feddyn_alpha": 0.1}"#),
    ]

    /// The run of a configuration: EWC on every client (plugin state that must survive a
    /// checkpoint), except under the algorithms that run their own loop and refuse a strategy.
    static func run(_ federation: String) throws -> ResolvedRun {
        let ownLoop = federation.contains("pfedme") || federation.contains("per_fedavg")
        return try FederationTests.run(federation, users: 10, strategy: ownLoop ? #"["naive"]"# : #"[{"type": "ewc", "lambda": 5}]"#)
    }

    /// The run from `resume` (nil: from the start) on `ranks` thread-ranks, stopped after round
    /// `stopAfter` or saving every `every` rounds; every rank's result.
    static func execute(_ run: ResolvedRun, ranks: Int = 1, resume: FederationCheckpoint? = nil, stopAfter: Int? = nil,
                        every: RoundCheckpoints? = nil, storage: FederationStorage? = nil) -> [RunResult] {
        let plan = FederationRunner.RoundPlan(resume: resume, stopAfter: stopAfter, checkpoints: every)
        guard ranks > 1 else { return [FederationRunner.execute(run, transport: SingleProcess(), storage: storage, plan: plan)] }
        return ThreadRanks.each(ranks) { FederationRunner.execute(run, transport: $0, storage: storage, plan: plan) }
    }

    /// The run's setup and algorithms, as the engine makes them.
    static func algorithms(_ run: ResolvedRun) throws -> (setup: FederationSetup, algorithms: [any FederatedAlgorithm]) {
        let (setup, _) = try FederationSetup.make(run, transport: SingleProcess(), plan: nil)
        return (setup, FederatedAlgorithms.make(AlgorithmSetup(
            config: run.config, fed: setup.fed, shared: setup.shared, sharedCount: setup.sharedCount,
            parameterCount: setup.initialParameters.count, traffic: setup.traffic, profile: setup.device.profile)))
    }

    /// A checkpoint through its bytes (what a file holds).
    static func roundTrip(_ cp: FederationCheckpoint?) throws -> FederationCheckpoint {
        let cp = try #require(cp)
        guard case .federation(let back) = try RunCheckpoint(decoding: RunCheckpoint.federation(cp).encoded()) else {
            throw CheckpointError.mismatch("not a federated checkpoint")
        }
        #expect(back == cp)
        return back
    }

    @Test("every registered algorithm has a configuration here, and that configuration selects it")
    func everyRegisteredAlgorithmIsCovered() throws {
        let registered = FederatedAlgorithms.registered.map { String(describing: $0) }
        #expect(Set(registered) == Set(Self.configurations.map(\.algorithm)))
        for (name, text) in Self.configurations {
            let used = try Self.algorithms(Self.run(text)).algorithms.map { String(describing: type(of: $0)) }
            #expect(used.contains(name), "\(name): the configuration selects \(used)")
        }
    }

    @Test("stopped after any round and resumed from the checkpoint's bytes, every algorithm ends bit-identical to an uninterrupted run",
          arguments: configurations.map(\.algorithm))
    func resumeIsBitIdentical(_ algorithm: String) throws {
        let run = try Self.run(Self.configurations.first { $0.algorithm == algorithm }!.federation)
        let whole = Self.execute(run)[0]
        #expect(whole.status == .completed, "\(whole.message)")
        let reference = FederationTests.fingerprint(whole)
        let R = run.config.federation!.rounds
        for k in [0, R / 2, R - 2] {
            let stopped = Self.execute(run, stopAfter: k)[0]
            #expect(stopped.metrics == nil && stopped.message == "stopped after round \(k) of \(R)", "\(stopped.message)")
            let resumed = Self.execute(run, resume: try Self.roundTrip(stopped.federationCheckpoint))[0]
            #expect(resumed.status == .completed, "\(resumed.message)")
            let same = FederationTests.fingerprint(resumed) == reference
            #expect(same, "\(algorithm): resumed after round \(k)")
        }
    }

    @Test("a checkpoint made on 2 ranks resumes on 1 and on 3 ranks to the same bits, clients regenerated or held",
          arguments: ["SCAFFOLD", "FedBuff", "Ditto", "FedDyn"])
    func checkpointsMoveBetweenRankCounts(_ algorithm: String) throws {
        let run = try Self.run(Self.configurations.first { $0.algorithm == algorithm }!.federation)
        let reference = FederationTests.fingerprint(Self.execute(run)[0])
        let stopped = Self.execute(run, ranks: 2, stopAfter: 2)
        let cps = try stopped.map { try Self.roundTrip($0.federationCheckpoint) }
        #expect(cps.allSatisfy { $0 == cps[0] }, "every rank holds the same checkpoint")
        for (ranks, storage) in [(1, FederationStorageTests.regenerated), (3, FederationStorageTests.kept)] {
            for r in Self.execute(run, ranks: ranks, resume: cps[0], storage: storage) {
                let same = FederationTests.fingerprint(r) == reference
                #expect(same, "\(algorithm): 2-rank checkpoint resumed on \(ranks)")
            }
        }
    }

    @Test("checkpoints saved every 2 rounds while running: a run killed after any save resumes to the same bits")
    func periodicCheckpointsResume() throws {
        for algorithm in ["FedBuff", "SCAFFOLD", "APFL"] {
            let run = try Self.run(Self.configurations.first { $0.algorithm == algorithm }!.federation)
            final class Saved: @unchecked Sendable { var list: [RunCheckpoint] = [] }
            let saved = Saved()
            let whole = Self.execute(run, every: RoundCheckpoints(every: 2) { saved.list.append($0) })[0]
            let R = run.config.federation!.rounds
            #expect(saved.list.map(\.experiencesDone) == Array(stride(from: 2, to: R, by: 2)))
            let reference = FederationTests.fingerprint(whole)
            #expect(reference == FederationTests.fingerprint(Self.execute(run)[0]), "saving changes nothing")
            for case .federation(let cp) in saved.list {
                let same = FederationTests.fingerprint(Self.execute(run, resume: cp)[0]) == reference
                #expect(same, "\(algorithm): resumed from the save after round \(cp.roundsDone - 1)")
            }
        }
    }

    @Test("every transmitted array is counted: a completed client uploads 4·(shared + what travels beside it) bytes at float32",
          arguments: configurations.map(\.algorithm))
    func everyTransmittedArrayIsCounted(_ algorithm: String) throws {
        let run = try Self.run(Self.configurations.first { $0.algorithm == algorithm }!.federation)
        let r = Self.execute(run)[0]
        let f = try #require(r.federation)
        let (setup, algorithms) = try Self.algorithms(run)
        let extra = algorithms.reduce((up: 0, down: 0)) { ($0.up + $1.extraFloats.up, $0.down + $1.extraFloats.down) }
        if algorithm == "SCAFFOLD" { #expect(extra.up == setup.sharedCount && extra.down == setup.sharedCount) }
        let travels = run.config.federation!.share != .none
        for k in f.completed.indices {
            #expect(f.bytesUp[k] == (travels ? f.completed[k] * 4 * (setup.sharedCount + extra.up) : 0), "\(algorithm), round \(k)")
            #expect(f.bytesDown[k] == (travels ? f.completed[k] * 4 * (setup.sharedCount + extra.down) : 0), "\(algorithm), round \(k)")
        }
        #expect(!travels || f.bytesUp.reduce(0, +) > 0)
    }

    @Test("the run-level training energy is the evaluated clients' summed: each one's joules less its radio bytes",
          arguments: configurations.map(\.algorithm))
    func runLevelEnergyIsTheClientsTotal(_ algorithm: String) throws {
        // The summary's energy_j counts every local, personal and own-loop round (pFedMe's inner
        // steps, Per-FedAvg's second gradient) of every evaluated client, as the per-client figure does.
        let run = try Self.run(Self.configurations.first { $0.algorithm == algorithm }!.federation)
        let r = Self.execute(run)[0]
        let f = try #require(r.federation), device = try #require(r.device)
        let radio = run.config.federation!.radioJoulesPerByte
        let total = f.evaluatedClients.reduce(0.0) { sum, c in
            sum + f.clientJoules[c] - Double(f.clientBytesUp[c] + f.clientBytesDown[c]) * radio
        }
        #expect(total > 0 && abs(device.trainingJoules / total - 1) <= 1e-9,
                "\(algorithm): run-level \(device.trainingJoules) J, evaluated clients \(total) J")
    }

    @Test("a local round that moves nothing (learning rate 0) leaves the global model where it started",
          arguments: configurations.map(\.algorithm).filter { $0 != "SCAFFOLD" })
    func stillClientsLeaveTheGlobalModel(_ algorithm: String) throws {
        // SCAFFOLD is left out: its control update divides by K·η, undefined at η = 0 (a rate
        // `validate` refuses for every run).
        var config = try Self.run(Self.configurations.first { $0.algorithm == algorithm }!.federation).config
        config.optimizer.learningRate = 0
        let run = ResolvedRun(config: config)
        let r = Self.execute(run)[0]
        #expect(r.status == .completed, "\(algorithm): \(r.message)")
        let (setup, _) = try Self.algorithms(run)
        #expect(r.outcome?.finalModel.parameters == setup.initialParameters, "\(algorithm)")
    }

    @Test("identical client updates aggregate to that update under every rule (q-FedAvg at q = 0)")
    func identicalUpdatesAggregateToThemselves() throws {
        var rng = RandomSource(seed: 8)
        let u = (0..<23).map { _ in Float(rng.normal()) }
        let updates = (0..<11).map { k in ClientUpdate(delta: u, samples: 5 + k, steps: 4, loss: 0.7) }
        let rules: [AggregationRule] = [.mean, .uniformMean, .median, .trimmedMean(fraction: 0.2), .krum(byzantine: 2),
                                        .krum(byzantine: 2, selected: 3), .bulyan(byzantine: 2), .normalized, .qFair(q: 0, lipschitz: 3)]
        for rule in rules {
            let aggregate = try rule.aggregate(updates)
            #expect(aggregate == u, "\(rule.name): \(zip(aggregate, u).map { $0 - $1 }.map(abs).max() ?? 0)")
        }
    }

    @Test("a checkpoint of another run, or a damaged one, is refused with a reason")
    func foreignCheckpointsAreRefused() throws {
        let scaffold = try Self.run(Self.configurations.first { $0.algorithm == "SCAFFOLD" }!.federation)
        let cp = try Self.roundTrip(Self.execute(scaffold, stopAfter: 1)[0].federationCheckpoint)
        let fedavg = try Self.run(Self.configurations.first { $0.algorithm == "FedAvg" }!.federation)
        let wrong = Self.execute(fedavg, resume: cp)[0]
        #expect(wrong.status == .failed && wrong.message.contains("algorithms"), "\(wrong.message)")
        let bytes = RunCheckpoint.federation(cp).encoded()
        for cut in [bytes.count / 3, bytes.count - 1] {
            #expect(throws: CheckpointError.self) { try RunCheckpoint(decoding: Array(bytes.prefix(cut))) }
        }
        let late = Self.execute(scaffold, stopAfter: 4)[0]
        #expect(late.status == .failed && late.message.contains("--stop-after must be in 0...3"), "\(late.message)")
        let strategyRun = try ExperimentFile.parse(data: Data(#"{"name": "s", "scenario": {"type": "habit_drift"}}"#.utf8)).runs[0]
        let refused = RunExecutor.execute(strategyRun, resumingFrom: .federation(cp), stopAfter: nil)
        #expect(refused.message.contains("federated"), "\(refused.message)")
    }
}
