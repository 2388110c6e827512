import ContinualCore
import ContinualFederated
import ContinualHDF5
import ContinualScenarios
import Foundation
import Testing
@testable import ContinualExperiments

/// Ranks simulated by threads in one process: `allGather` is a barrier that hands every rank
/// every rank's bytes, like MPI_Allgatherv.
final class ThreadRanks: @unchecked Sendable {
    let size: Int
    private let condition = NSCondition()
    private var slots: [[UInt8]?]
    private var generation = 0
    private var readers = 0

    init(size: Int) {
        self.size = size
        slots = Array(repeating: nil, count: size)
    }

    final class Rank: FederationTransport {
        let world: ThreadRanks
        let rank: Int
        init(_ world: ThreadRanks, _ rank: Int) { self.world = world; self.rank = rank }
        var size: Int { world.size }
        func allGather(_ bytes: [UInt8]) throws -> [[UInt8]] { world.gather(bytes, rank: rank) }
    }

    func gather(_ bytes: [UInt8], rank: Int) -> [[UInt8]] {
        condition.lock()
        defer { condition.unlock() }
        let mine = generation
        slots[rank] = bytes
        if slots.allSatisfy({ $0 != nil }) { condition.broadcast() }
        while generation == mine && !slots.allSatisfy({ $0 != nil }) { condition.wait() }
        let all = slots.map { $0 ?? [] }
        readers += 1
        if readers == size {
            readers = 0
            slots = Array(repeating: nil, count: size)
            generation += 1
            condition.broadcast()
        } else {
            while generation == mine { condition.wait() }
        }
        return all
    }

    /// Runs `run` on `size` ranks concurrently; returns every rank's result.
    static func execute(_ run: ResolvedRun, ranks: Int) -> [RunResult] {
        each(ranks) { FederationRunner.execute(run, transport: $0) }
    }

    /// `body` on `ranks` ranks concurrently (each on its own thread, with its transport);
    /// every rank's result.
    static func each(_ ranks: Int, _ body: @escaping @Sendable (any FederationTransport) -> RunResult) -> [RunResult] {
        let world = ThreadRanks(size: ranks)
        final class Box: @unchecked Sendable { var results: [RunResult?] = [] }
        let box = Box()
        box.results = Array(repeating: nil, count: ranks)
        let group = DispatchGroup()
        for r in 0..<ranks {
            let thread = Thread {
                box.results[r] = body(Rank(world, r))
                group.leave()
            }
            group.enter()
            thread.stackSize = 8 << 20
            thread.start()
        }
        group.wait()
        return box.results.map { $0! }
    }
}

@Suite("Federated runs")
struct FederationTests {
    static func run(_ federation: String, users: Int = 12, strategy: String = #"["naive"]"#, extra: String = "") throws -> ResolvedRun {
        let json = """
        {"name": "fed", "seed": 5,
         "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 20,
                      "phases": ["morning", "night", "morning"]},
         "population": {"users": \(users), "quantiles": [0, 0.5, 1]},
         "model": {"hidden": [8]}, "optimizer": {"type": "sgd", "lr": 0.1},
         "training": {"batch_size": 16}, "strategy": \(strategy), \(extra)
         "federation": \(federation)}
        """
        return try ExperimentFile.parse(data: Data(json.utf8)).runs[0]
    }

    /// Everything a federated run computes except wall times: the federation's series, the
    /// evaluated clients' metrics and matrices, the final model, and the run-level work and
    /// energy (rows, steps, extra gradient steps, plugin FLOPs: what a checkpoint must carry).
    static func fingerprint(_ r: RunResult) -> String {
        var f = r.federation!
        f.setupSeconds = 0
        f.roundSeconds = 0
        f.clientTrainSeconds = 0
        f.config.jobs = 0  // threads: not part of the numbers
        let p = r.population!, o = r.outcome!.progress
        let work = "\(o.samplesProcessed)|\(o.steps)|\(o.extraSteps)|\(o.extraFLOPs)|\(r.device?.trainingJoules.bitPattern ?? 0)"
        return "\(f)|\(p.values)|\(p.matrices)|\(r.outcome!.finalModel.parameters.map(\.bitPattern))|\(r.outcome!.accuracy)|\(work)"
    }

    @Test("one client, one round, one full-batch step: the global model is plain training's model")
    func oneClientOneStep() throws {
        let run = try Self.run(#"{"rounds": 1, "clients_per_round": 1, "local_steps": 1}"#, users: 1)
        var config = run.config
        config.training.batchSize = 1000
        config.training.shuffle = false
        let resolved = ResolvedRun(config: config)
        let result = FederationRunner.execute(resolved)
        #expect(result.status == .completed, "\(result.message)")

        // Plain training of client 0's data (all of it arrives in the single round): one step.
        let population = try #require(config.population)
        var rng = RandomSource(seed: population.seed ?? config.seed, stream: "population.user.0")
        var modelRNG = rng.derived("model")
        let seed = modelRNG.next()
        let options = (config.scenario.options as! HabitDriftScenario).user(0, spread: population.spread, rng: &rng)
        let stream = try options.makeStream(seed: seed)
        var all = Samples(dimension: stream.dimension)
        for e in stream.experiences { all.append(e.train) }
        all.routes = nil
        let spec = try config.model.spec(inputs: stream.dimension, head: stream.head, experiences: 3)
        var plain = Trainer(spec: spec, optimizer: config.optimizer.spec, options: config.training.options, plugins: [], seed: config.seed)
        let start = plain.model.parameters
        let one = ExperienceStream(name: "all", featureNames: stream.featureNames, head: stream.head,
                                   experiences: [Experience(index: 0, name: "all", train: all, test: stream.experiences[0].test)])
        _ = try plain.run(one, source: LocalRoundSource(steps: 1), resumingFrom: nil, stopAfter: nil)
        let global = result.outcome!.finalModel.parameters
        #expect(global != start)
        // FedAvg hands back Δ = local − start and the server adds it: start + (local − start), which
        // equals local up to one rounding of the subtraction and one of the addition.
        for (g, p) in zip(global, plain.model.parameters) {
            #expect(abs(g - p) <= 2 * Float.ulpOfOne * max(abs(p), 1), "\(g) vs \(p)")
        }
        #expect(result.federation!.completed == [1] && result.federation!.bytesUp == [4 * global.count])
    }

    @Test("same seed, same bits: any number of threads and of ranks")
    func threadsAndRanksDoNotChangeTheNumbers() throws {
        let configs = [
            #"{"rounds": 6, "client_fraction": 0.5, "sampling": "poisson", "clip_norm": 0.5, "noise_multiplier": 0.8, "jobs": JOBS}"#,
            #"{"rounds": 6, "clients_per_round": 6, "share": "core", "aggregation": "krum", "byzantine": 1, "availability": "device", "encoding": "int8", "adversary_fraction": 0.2, "attack": "scale", "evaluate_every": 2, "evaluate_clients": 7, "jobs": JOBS}"#,
        ]
        for (k, text) in configs.enumerated() {
            let strategy = k == 1 ? #"[{"type": "replay", "capacity": 30}]"# : #"["naive"]"#
            let serial = FederationRunner.execute(try Self.run(text.replacingOccurrences(of: "JOBS", with: "1"), strategy: strategy))
            #expect(serial.status == .completed, "\(serial.message)")
            let reference = Self.fingerprint(serial)
            let threaded = FederationRunner.execute(try Self.run(text.replacingOccurrences(of: "JOBS", with: "3"), strategy: strategy))
            let same = Self.fingerprint(threaded) == reference
            #expect(same, "config \(k), 3 threads")
            for ranks in [2, 3] {
                let results = ThreadRanks.execute(try Self.run(text.replacingOccurrences(of: "JOBS", with: "2"), strategy: strategy), ranks: ranks)
                for r in results {
                    #expect(r.status == .completed, "\(r.message)")
                    let same = Self.fingerprint(r) == reference
                    #expect(same, "config \(k), \(ranks) ranks")
                }
            }
        }
    }

    @Test("a client whose device never allows training never takes part")
    func neverAvailableClientsNeverTakePart() throws {
        let r = FederationRunner.execute(try Self.run(
            #"{"rounds": 8, "client_fraction": 0.5, "availability": "device", "device_mix": {"always": 0.5, "never": 0.5}, "when": {"charging": true, "idle": false, "wifi": false}}"#,
            users: 16))
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        let never = f.devicePattern.indices.filter { f.devicePattern[$0] == "never" }
        let always = f.devicePattern.indices.filter { f.devicePattern[$0] == "always" }
        #expect(!never.isEmpty && !always.isEmpty)
        #expect(never.allSatisfy { f.participations[$0] == 0 && f.clientBytesUp[$0] == 0 })
        #expect(never.contains { f.invitations[$0] > 0 })  // invited, but never available
        #expect(always.allSatisfy { f.participations[$0] == f.invitations[$0] })
        #expect(zip(f.available, f.invited).allSatisfy { $0 <= $1 } && f.completed == f.available)
        #expect(f.participations.reduce(0, +) == f.completed.reduce(0, +))
    }

    @Test("DP-FedAvg: ε after every round is the accountant's for q, σ and that many rounds; clipping without noise gives ∞")
    func privacyIsAccountedEveryRound() throws {
        let r = FederationRunner.execute(try Self.run(
            #"{"rounds": 5, "client_fraction": 0.25, "sampling": "poisson", "clip_norm": 1, "noise_multiplier": 1.1, "delta": 1e-4}"#))
        let f = try #require(r.federation)
        for k in 0..<5 {
            var a = RDPAccountant()
            a.compose(samplingRate: 0.25, noiseMultiplier: 1.1, rounds: k + 1)
            #expect(f.epsilon[k] == a.epsilon(delta: 1e-4).epsilon)
        }
        #expect(zip(f.epsilon, f.epsilon.dropFirst()).allSatisfy { $0 < $1 })
        let clipOnly = FederationRunner.execute(try Self.run(#"{"rounds": 2, "clients_per_round": 3, "clip_norm": 1}"#))
        #expect(clipOnly.federation!.epsilon.allSatisfy { $0 == .infinity })
        let none = FederationRunner.execute(try Self.run(#"{"rounds": 2, "clients_per_round": 3}"#))
        #expect(none.federation!.epsilon.allSatisfy { $0.isNaN })
    }

    @Test("local-only, FedPer and personal fine-tuning keep personal models; only the shared part travels")
    func sharingModes() throws {
        let local = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 4, "share": "none"}"#))
        #expect(local.status == .completed, "\(local.message)")
        #expect(local.federation!.bytesUp.allSatisfy { $0 == 0 })
        // Local-only: the server model never moves.
        let initial = Trainer(spec: local.outcome!.finalModel.spec, optimizer: try Self.run("{\"rounds\": 1}").config.optimizer.spec,
                              options: TrainingOptions(), plugins: [], seed: 5).model.parameters
        #expect(local.outcome!.finalModel.parameters == initial)
        let fedper = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 4, "share": "core"}"#))
        let f = try #require(fedper.federation)
        // hidden [8] on 10 features: core = 10·8 + 8 = 88 parameters, head 8·1 + 1 = 9 (binary).
        #expect(f.sharedParameters == 88 && f.totalParameters == 97)
        #expect(f.bytesUp.allSatisfy { $0 == 4 * 88 * 4 })
        #expect(fedper.population!.values.count > 0 && fedper.metrics != nil)
    }

    @Test("adapters-only sharing sends exactly the adapter parameters; LoRA blocks likewise")
    func adaptersOnlySharing() throws {
        for (strategy, kind) in [(#"[{"type": "adapters", "bottleneck": 2, "routing": "context", "context_feature": "weekend_tomorrow"}]"#, "adapter"),
                                 (#"[{"type": "lora", "rank": 2, "routing": "context", "context_feature": "weekend_tomorrow"}]"#, "lora")] {
            let r = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 4, "share": "adapters"}"#,
                                                          strategy: strategy))
            #expect(r.status == .completed, "\(kind): \(r.message)")
            let f = try #require(r.federation)
            let model = r.outcome!.finalModel
            var expected = 0
            for layer in model.layers {
                if case .adapter = layer.kind { expected += layer.parameterCount }
                if let lr = layer.lowRank { expected += lr.copies * lr.rank * (layer.inputs + layer.outputs) }
            }
            #expect(expected > 0 && f.sharedParameters == expected && f.sharedParameters < f.totalParameters, "\(kind)")
            #expect(f.bytesUp.allSatisfy { $0 == 4 * 4 * expected }, "\(kind)")
        }
    }

    @Test("bytes on the wire: float16 halves, int8 is one byte plus a scale, secure aggregation charges keys, shares and a dense ring")
    func communicationBytes() throws {
        let p = 97  // hidden [8] on 10 features, binary head
        let half = FederationRunner.execute(try Self.run(#"{"rounds": 2, "clients_per_round": 3, "encoding": "float16"}"#)).federation!
        #expect(half.bytesUp == [3 * 2 * p, 3 * 2 * p] && half.bytesDown == [3 * 4 * p, 3 * 4 * p])
        let int8 = FederationRunner.execute(try Self.run(#"{"rounds": 2, "clients_per_round": 3, "encoding": "int8"}"#)).federation!
        #expect(int8.bytesUp == [3 * (p + 4), 3 * (p + 4)])
        let secure = FederationRunner.execute(try Self.run(#"{"rounds": 2, "clients_per_round": 3, "secure_aggregation": true, "encoding": "int8"}"#)).federation!
        // Per participant (m = 3): up 64 + (m − 1)·80 + 4p, down 4p + (m − 1)·(64 + 80).
        #expect(secure.bytesUp == [3 * (64 + 2 * 80 + 4 * p), 3 * (64 + 2 * 80 + 4 * p)])
        #expect(secure.bytesDown == [3 * (4 * p + 2 * 144), 3 * (4 * p + 2 * 144)])
        let prox = FederationRunner.execute(try Self.run(#"{"rounds": 3, "clients_per_round": 3, "proximal_mu": 0.5}"#))
        let plain = FederationRunner.execute(try Self.run(#"{"rounds": 3, "clients_per_round": 3}"#))
        #expect(prox.status == .completed && prox.outcome!.finalModel.parameters != plain.outcome!.finalModel.parameters)
        // The proximal pull shortens the updates.
        #expect(prox.federation!.meanUpdateNorm.reduce(0, +) < plain.federation!.meanUpdateNorm.reduce(0, +))
    }

    @Test("bad federation blocks are errors naming the key")
    func validation() throws {
        let cases: [(String, String)] = [
            (#"{"rounds": 3, "aggregation": "median", "clip_norm": 1}"#, ".federation.aggregation"),
            (#"{"rounds": 3, "client_fraction": 0.2, "clip_norm": 1, "noise_multiplier": 1}"#, ".federation.sampling"),
            (#"{"rounds": 3, "noise_multiplier": 1, "sampling": "poisson", "client_fraction": 0.1}"#, ".federation.noise_multiplier"),
            (#"{"rounds": 3, "trim_fraction": 0.2}"#, ".federation.trim_fraction"),
            (#"{"rounds": 3, "share": "adapters"}"#, ".federation.share"),
            (#"{"rounds": 3, "share": "core", "personal": "global"}"#, ".federation.personal"),
            (#"{"rounds": 3, "device_mix": {"always": 1}}"#, ".federation.device_mix"),
            (#"{"rounds": 3, "availability": "device", "device_mix": {"always": 0.5, "sometimes": 0.5}}"#, ".federation.device_mix"),
            (#"{"rounds": 0}"#, ".federation.rounds"),
            (#"{"rounds": 3, "clients_per_round": 40}"#, ".federation.clients_per_round"),
        ]
        for (text, path) in cases {
            do {
                _ = try Self.run(text)
                Issue.record("\(text) was accepted; expected an error naming \(path)")
            } catch {
                #expect("\(error)".contains(path), "\(text): \(error)")
            }
        }
        let noPopulation = """
        {"name": "f", "scenario": {"type": "habit_drift"}, "federation": {"rounds": 2}}
        """
        #expect(throws: (any Error).self) { _ = try ExperimentFile.parse(data: Data(noPopulation.utf8)) }
    }

    @Test("the results file has the federation group, readable per round and per client")
    func resultsFile() throws {
        let file = try ExperimentFile.parse(data: Data("""
        {"name": "fed", "seed": 5,
         "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 20, "phases": ["morning", "night"]},
         "population": {"users": 6}, "model": {"hidden": [8]},
         "federation": {"rounds": 4, "clients_per_round": 3, "evaluate_every": 2, "evaluate_clients": 4}}
        """.utf8))
        let r = RunExecutor.execute(file.runs[0])
        #expect(r.status == .completed, "\(r.message)")
        try withScenarioTempDir { dir in
            let path = dir + "/fed.h5"
            try ResultsWriter.writeExperiment([r], experiment: file, to: path)
            let h5 = try HDF5File.open(path: path)
            let g = try h5.root.openGroup("runs/\(r.runId)/federation")
            #expect(try g.openDataset("completed").read(as: Int64.self) == [3, 3, 3, 3])
            #expect(try g.openDataset("evaluated_round").read(as: Int64.self) == [1, 3])
            #expect(try g.openDataset("participations").shape == [6])
            #expect(try g.openDataset("evaluated_client").read(as: Int64.self).count == 4)
            let users = try h5.root.openGroup("runs/\(r.runId)/population").openDataset("user").read(as: Int64.self)
            #expect(users == r.federation!.evaluatedClients.map(Int64.init))
            try h5.close()
        }
    }
}
