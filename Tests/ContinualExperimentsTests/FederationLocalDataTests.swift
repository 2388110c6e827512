import ContinualCore
import ContinualHDF5
import ContinualStrategies
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 43: `"local_data": "all"` is standard federated learning (every client holds all its
/// data from the first round and each local round passes over all of it), beside the default
/// federated continual stream (samples arrive over the rounds, each trained once per epoch).
@Suite("Federated local data: streamed or held")
struct FederationLocalDataTests {
    @Test("held: everything arrives before round 1 ends, every round starts at 0, rows after the last round; the stream is unchanged")
    func schedules() {
        let held = ArrivalSchedule(trainSizes: [30, 20], rounds: 4, data: .all)
        #expect((0...4).map(held.arrival) == [0, 50, 50, 50, 50])
        #expect(held.start(37, round: 2) == 0 && held.rowRound == [3, 3])
        #expect((0..<4).map(held.finished) == [50, 50, 50, 50])
        let stream = ArrivalSchedule(trainSizes: [30, 20], rounds: 4)
        #expect((0...4).map(stream.arrival) == [0, 12, 25, 37, 50])
        #expect(stream.start(37, round: 3) == 37 && stream.rowRound == [2, 3])
        #expect((0..<4).map(stream.finished) == [12, 25, 37, 50] && (0..<4).map(stream.firstHeld) == [0, 0, 0, 0])
    }

    @Test("by experience: one block of rounds per experience (round r in block ⌊r·T/R⌋), each round on the block's experience only")
    func experienceBlocks() {
        // 3 experiences (the second empty for this client) over 7 rounds: blocks {0, 1, 2}, {3, 4}, {5, 6}.
        let s = ArrivalSchedule(trainSizes: [30, 0, 20], rounds: 7, data: .experience)
        #expect((0..<7).map(s.period) == [0, 0, 0, 1, 1, 2, 2])
        #expect(s.rowRound == [2, 4, 6])
        #expect((0...7).map(s.arrival) == [0, 30, 30, 30, 30, 30, 50, 50])
        // Each round starts at its experience's first sample, whatever the client trained before.
        #expect((0..<7).map { s.start(99, round: $0) } == [0, 0, 0, 30, 30, 30, 30])
        #expect((0..<7).map(s.firstHeld) == [0, 0, 0, 30, 30, 30, 30])
        // An experience is finished only by its block's last round.
        #expect((0..<7).map(s.finished) == [0, 0, 30, 30, 30, 30, 50])
        // As many rounds as experiences: one round each.
        let one = ArrivalSchedule(trainSizes: [5, 5], rounds: 2, data: .experience)
        #expect(one.rowRound == [0, 1] && (0...2).map(one.arrival) == [0, 5, 10] && one.finished(afterRound: 0) == 5)
    }

    static func experiment(localData: String) -> String {
        """
        {"name": "ld", "seed": 1, "scenario": {"type": "split_digits", "setting": "class", "classes_per_experience": 10},
         "population": {"users": 4}, "model": {"hidden": [16]}, "optimizer": {"type": "sgd", "lr": 0.05},
         "training": {"batch_size": 16}, "strategy": ["naive"],
         "federation": {"rounds": 3, "clients_per_round": 4, "local_epochs": 1, "availability": "always",
                        "partition": {"type": "dirichlet", "alpha": 0.5}, "local_data": "\(localData)"}}
        """
    }

    /// Samples trained per round, and the clients' training sizes, of a run of `experiment`.
    func trained(_ localData: String, in work: TemporaryDirectory) throws -> (perRound: [Int64], sizes: [Int64]) {
        let json = work.write("\(localData).json", Self.experiment(localData: localData)), out = work.path("\(localData).h5")
        let r = try runCLI(["run", json, "-o", out, "--quiet"])
        try #require(r.status == 0, "\(r.stderr)")
        let f = try HDF5File.open(path: out)
        defer { try? f.close() }
        let g = try f.root.openGroup("runs").openGroup(try f.root.openGroup("runs").childNames()[0]).openGroup("federation")
        #expect(try g.attributes.string("local_data") == localData)
        return (try g.openDataset("samples_trained").read(as: Int64.self), try g.openDataset("partition_train").read(as: Int64.self))
    }

    @Test("every client trains on all its samples in every round when held, on each sample once when streamed")
    func samplesTrainedPerRound() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let held = try trained("all", in: work), stream = try trained("stream", in: work)
        let total = held.sizes.reduce(0, +)
        #expect(total > 0 && held.sizes == stream.sizes)
        #expect(held.perRound == [total, total, total], "\(held.perRound)")
        #expect(stream.perRound.reduce(0, +) == total, "\(stream.perRound)")
    }

    @Test("by experience: every round of a block trains the block's experience; EWC consolidates once, at the block's end")
    func byExperienceRun() throws {
        let ewc = FederatedConsolidationTests.ewc
        // 9 rounds over the 3 experiences of 60 samples per user: blocks of 3 rounds.
        let run = FederationRunner.execute(try PersonalisedFederationTests.run(
            #"{"rounds": 9, "clients_per_round": 12, "local_data": "experience"}"#, strategy: ewc))
        let perRound = FederationRunner.execute(try PersonalisedFederationTests.run(
            #"{"rounds": 9, "clients_per_round": 12, "local_data": "experience", "consolidate": "round"}"#, strategy: ewc))
        #expect(run.status == .completed && perRound.status == .completed, "\(run.message) \(perRound.message)")
        #expect(run.federation!.samplesTrained == [Int](repeating: 12 * 60, count: 9), "\(run.federation!.samplesTrained)")
        // No penalty in any of block 0's rounds; a penalty in every later block.
        let e = run.outcome!.progress.penaltyCurve, r = perRound.outcome!.progress.penaltyCurve
        #expect(e[0] == [0] && e[1][0] > 0 && e[2][0] > 0, "\(e)")
        // Concluding after every round of a block penalises the block's own later rounds.
        #expect(r[0][0] > 0, "\(r)")
        // Threads and ranks do not change the numbers.
        for rank in ThreadRanks.execute(try PersonalisedFederationTests.run(
            #"{"rounds": 9, "clients_per_round": 12, "local_data": "experience"}"#, strategy: ewc), ranks: 2) {
            #expect(FederationTests.fingerprint(rank) == FederationTests.fingerprint(run))
        }
    }

    @Test("by experience: stopped inside a block or at its end and resumed, the run ends bit-identical",
          arguments: [#"{"rounds": 9, "clients_per_round": 12, "local_data": "experience"}"#,
                      #"{"rounds": 9, "clients_per_round": 5, "local_data": "experience", "personal": "local"}"#])
    func byExperienceResumes(_ federation: String) throws {
        let strategy = #"[{"type": "ewc", "lambda": 5}, {"type": "replay", "capacity": 30, "update": "experience_end"}]"#
        let run = try PersonalisedFederationTests.run(federation, strategy: strategy)
        let whole = FederatedConformanceTests.execute(run)[0]
        #expect(whole.status == .completed, "\(whole.message)")
        let reference = FederationTests.fingerprint(whole)
        // Round 1 is inside block 0, round 2 ends it, round 4 is inside block 1.
        for k in [1, 2, 4] {
            let stopped = FederatedConformanceTests.execute(run, stopAfter: k)[0]
            let cp = try FederatedConformanceTests.roundTrip(stopped.federationCheckpoint)
            let resumed = FederatedConformanceTests.execute(run, resume: cp)[0]
            #expect(FederationTests.fingerprint(resumed) == reference, "resumed after round \(k)")
        }
    }

    /// A client with 2 experiences of 20 samples over 6 rounds (3 per block), replay filled at
    /// experience ends with room for everything, and a hook counter.
    static func blockClient() throws -> FederatedClient {
        var rng = RandomSource(seed: 4)
        var features: [Float] = [], labels: [Int32] = []
        for k in 0..<40 {
            features += (0..<4).map { _ in Float(rng.uniform()) }
            labels.append(Int32(k % 3))
        }
        let data = Samples(dimension: 4, features: features, labels: labels)
        let replay = Replay(options: Replay.Options(capacity: 100, update: .experienceEnd))
        return try PersonalisedFederationTests.client([], data: data, plugins: [replay, HookCounter()],
                                                      schedule: ArrivalSchedule(trainSizes: [20, 20], rounds: 6, data: .experience))
    }

    /// Trains `c` in `rounds` as the federated path does (or, `personal`, as LocalTraining does,
    /// moving the personal cursor); after each, the replay's offered samples and the hook log.
    static func train(_ c: inout FederatedClient, rounds: [Int], personal: Bool = false) throws -> (offered: [Int64], events: [[String]]) {
        var scratch = LoopScratch()
        var offered: [Int64] = [], events: [[String]] = []
        for r in rounds {
            let lo = c.schedule.start(personal ? c.personalCursor : c.federatedCursor, round: r), end = c.schedule.arrival(r + 1)
            _ = try c.trainRound(on: c.data(lo, end, flip: nil), period: c.schedule.period(ofRound: r), round: r,
                                 pass: TrainingPass(epochs: 1, shuffle: true), scratch: &scratch,
                                 dataEnd: c.schedule.finished(afterRound: r))
            if personal { c.personalCursor = end } else { c.federatedCursor = end }
            guard case .int(let n)? = c.trainer.plugins[0].report().attributes["samples_offered"] else {
                Issue.record("replay reports no samples_offered")
                return (offered, events)
            }
            offered.append(n)
            events.append((c.trainer.plugins[1] as! HookCounter).events)
        }
        return (offered, events)
    }

    @Test("by experience: replay's buffer takes each experience once, at its block's end; a missed last round concludes before the next")
    func byExperienceHooks() throws {
        // Every plugin opens an experience in its block's first round and concludes it after the
        // last, on all of the experience's samples; the same when the personal cursor moves.
        for personal in [false, true] {
            var c = try Self.blockClient()
            let (offered, events) = try Self.train(&c, rounds: Array(0..<6), personal: personal)
            #expect(offered == [0, 0, 20, 20, 20, 40], "\(offered)")
            #expect(events[2] == ["open", "conclude 20"] && events[5] == ["open", "conclude 20", "open", "conclude 20"],
                    "\(events)")
        }
        // Missing block 0's last round: experience 0 is concluded before round 3 trains, not after.
        var c = try Self.blockClient()
        let (offered, events) = try Self.train(&c, rounds: [0, 1, 3])
        #expect(offered == [0, 0, 20], "\(offered)")
        #expect(events.last == ["open", "conclude 20", "open"], "\(events)")
    }

    @Test("by experience: strategies, algorithms and settings whose meaning breaks over a block are refused with their key")
    func byExperienceRefusals() {
        let exp = #"{"rounds": 9, "local_data": "experience"}"#
        PersonalisedFederationTests.refused(exp, ".strategy.0.update", strategy: #"[{"type": "replay", "capacity": 50}]"#)
        PersonalisedFederationTests.refused(#"{"rounds": 9, "local_data": "experience", "consolidate": "round"}"#, ".strategy.0.type",
                                            strategy: #"[{"type": "replay", "capacity": 50, "update": "experience_end"}]"#)
        PersonalisedFederationTests.refused(#"{"rounds": 9, "local_data": "experience", "fedbuff": {"buffer_size": 4}}"#,
                                            ".federation.local_data")
        for other in [#"{"type": "mir", "capacity": 50}"#, #"{"type": "gss", "capacity": 50}"#, #"{"type": "bic", "capacity": 50}"#] {
            PersonalisedFederationTests.refused(exp, ".strategy.0", strategy: "[\(other)]")
        }
        PersonalisedFederationTests.refused(#"{"rounds": 9, "local_data": "experience", "personal": "ditto"}"#, ".strategy.0",
                                            strategy: #"[{"type": "ewc", "lambda": 5}]"#)
    }

    /// Logs the experience hooks it sees (a conclusion with the samples it covers).
    struct HookCounter: StrategyPlugin {
        var name: String { "hook_counter" }
        var events: [String] = []
        mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws { events.append("open") }
        mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
            events.append("conclude \(context.experience.train.count)")
        }
        var resources: PluginResources { .none }
        func checkpointState() -> PluginState { PluginState() }
        mutating func restore(from state: PluginState) throws {}
    }
}
