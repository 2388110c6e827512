import ContinualCore
import ContinualFederated
import ContinualHDF5
import ContinualMetrics
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 29: FedBuff (buffered asynchronous aggregation) in the federation — zero delay with
/// K = clients per round is synchronous FedAvg, device delays make stale updates whose staleness
/// and weights follow the definition, dropped clients contribute nothing and are counted, and
/// the run is the same with any number of ranks.
@Suite("FedBuff in the federation")
struct FedBuffTests {
    static func run(_ federation: String) throws -> ResolvedRun {
        try PersonalisedFederationTests.run(federation)
    }

    /// Seconds of one local round of `rows` rows in `steps` steps on the default device.
    static func roundSeconds(rows: Int, steps: Int) throws -> Double {
        let clean = FederationRunner.execute(try run(#"{"rounds": 1, "share": "none"}"#))
        let flops = EnergyEstimate(session: TrainingTraffic(model: clean.outcome!.finalModel, optimizer: .sgd(learningRate: 0.1)),
                                   rows: rows, steps: steps, trainableParameters: nil, extraFLOPs: 0,
                                   profile: DeviceConfig().profile).flops
        return Double(flops) / DeviceConfig().profile.flopsPerSecond
    }

    @Test("zero delay and K = clients_per_round with sample weights is synchronous FedAvg, bit for bit")
    func zeroDelayIsFedAvg() throws {
        let sync = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 5}"#))
        let buffered = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 5, "fedbuff": {"buffer_size": 5, "delay": "none", "weighting": "samples"}}"#))
        #expect(sync.status == .completed && buffered.status == .completed, "\(buffered.message)")
        #expect(buffered.outcome!.finalModel.parameters.map(\.bitPattern) == sync.outcome!.finalModel.parameters.map(\.bitPattern))
        #expect(buffered.population!.matrices == sync.population!.matrices)
        let t = try #require(buffered.federation?.fedbuff)
        #expect(t.stepRound == Array(0..<6))
        #expect(t.stepStaleness.allSatisfy { $0 == [0, 0, 0, 0, 0] })
        #expect(t.stalenessHistogram == [30] && t.busy == [0, 0, 0, 0, 0, 0])
        #expect(t.inFlightAtEnd == 0 && t.bufferedAtEnd == 0)
        // The paper's uniform weights are another server update (clients' sizes differ per round).
        let uniform = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 5, "fedbuff": {"buffer_size": 5, "delay": "none"}}"#))
        let b = sync.outcome!.finalModel.parameters
        #expect(uniform.status == .completed && uniform.federation!.fedbuff!.stepRound.count == 6)
        // A smaller buffer steps more often than once per round.
        let small = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 5, "fedbuff": {"buffer_size": 2, "delay": "none"}}"#))
        let s = try #require(small.federation?.fedbuff)
        #expect(s.stepRound.count == 15 && s.bufferedAtEnd == 0)
        #expect(small.outcome!.finalModel.parameters != b)
    }

    @Test("device delays: staleness is the server steps taken since each client's download, weighted 1/sqrt(1+τ)")
    func staleness() throws {
        let S = try Self.roundSeconds(rows: 30, steps: 2)
        let text = #"{"rounds": 10, "clients_per_round": 4, "fedbuff": {"buffer_size": 3, "round_seconds": \#(S), "slowdown_spread": 1.5}}"#
        let r = FederationRunner.execute(try Self.run(text))
        #expect(r.status == .completed, "\(r.message)")
        let t = try #require(r.federation?.fedbuff)
        #expect(t.stepRound.count > 3)
        #expect(t.stepStaleness.flatMap { $0 }.contains { $0 > 0 }, "\(t.stepStaleness)")
        #expect(t.busy.reduce(0, +) > 0, "\(t.busy)")
        for k in t.stepRound.indices {
            #expect(t.stepClients[k].count == 3)
            for (j, d) in t.stepDownloadRounds[k].enumerated() {
                // The version downloaded in round d: the steps taken in earlier rounds.
                let downloaded = t.stepRound.filter { $0 < d }.count
                #expect(t.stepStaleness[k][j] == k - downloaded)
                #expect(abs(t.stepWeights[k][j] - 1 / Double(1 + t.stepStaleness[k][j]).squareRoot()) < 1e-15)
                #expect(d <= t.stepRound[k])
            }
            if k > 0 { #expect(t.stepTime[k] >= t.stepTime[k - 1]) }
        }
        // Every upload is applied, in flight or buffered at the end.
        let f = r.federation!
        #expect(f.completed.reduce(0, +) == 3 * t.stepRound.count + t.inFlightAtEnd + t.bufferedAtEnd)
        for k in f.invited.indices { #expect(f.completed[k] + t.busy[k] == f.invited[k]) }
        // Asynchrony changes the model; ranks and threads do not.
        let sync = FederationRunner.execute(try Self.run(#"{"rounds": 10, "clients_per_round": 4}"#))
        #expect(r.outcome!.finalModel.parameters != sync.outcome!.finalModel.parameters)
        for rank in ThreadRanks.execute(try Self.run(text), ranks: 3) {
            let same = FederationTests.fingerprint(rank) == FederationTests.fingerprint(r)
            #expect(same)
        }
        var one = try Self.run(text)
        one.config.federation!.jobs = 1
        #expect(FederationTests.fingerprint(FederationRunner.execute(one)) == FederationTests.fingerprint(r))
    }

    @Test("dropped clients contribute nothing to any buffer and are counted")
    func dropouts() throws {
        let p = 0.4
        let r = FederationRunner.execute(try Self.run(#"{"rounds": 8, "clients_per_round": 6, "dropout_probability": \#(p), "fedbuff": {"buffer_size": 3, "delay": "none"}}"#))
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        let t = try #require(f.fedbuff)
        #expect(f.dropped.reduce(0, +) > 0 && !t.stepRound.isEmpty)
        for k in f.invited.indices { #expect(f.completed[k] + f.dropped[k] == f.invited[k]) }
        #expect(f.clientDropouts.reduce(0, +) == f.dropped.reduce(0, +))
        #expect(f.completed.reduce(0, +) == 3 * t.stepRound.count + t.bufferedAtEnd + t.inFlightAtEnd)
        // Every buffered (client, round) drew "no dropout" from the run's failure stream (seed 5).
        for k in t.stepClients.indices {
            for (id, round) in zip(t.stepClients[k], t.stepDownloadRounds[k]) {
                var failure = RandomSource(seed: 5, stream: "federation.dropout.\(round).\(id)")
                #expect(failure.uniform() >= p, "client \(id) dropped in round \(round) but reached the buffer")
            }
        }
        // Everyone drops: no step, the model stays initial, every dropout counted.
        let all = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 6, "dropout_probability": 1, "fedbuff": {"buffer_size": 1}}"#))
        let a = try #require(all.federation)
        #expect(a.fedbuff!.stepRound.isEmpty && a.dropped == a.invited && a.aggregated.allSatisfy { !$0 })
        #expect(all.outcome!.finalModel.parameters == (try ClientFailureTests.initial()))
    }

    @Test("the server steps, staleness histogram and busy counts are in the results file")
    func recorded() throws {
        let S = try Self.roundSeconds(rows: 30, steps: 2)
        let file = try ExperimentFile.parse(data: Data("""
        {"name": "fedbuff", "seed": 5,
         "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 20, "phases": ["morning", "night"]},
         "population": {"users": 8}, "model": {"hidden": [8]},
         "federation": {"rounds": 6, "clients_per_round": 4, "fedbuff": {"buffer_size": 2, "round_seconds": \(S)}}}
        """.utf8))
        let r = RunExecutor.execute(file.runs[0])
        #expect(r.status == .completed, "\(r.message)")
        let t = try #require(r.federation?.fedbuff)
        try withScenarioTempDir { dir in
            let path = dir + "/fedbuff.h5"
            try ResultsWriter.writeExperiment([r], experiment: file, to: path)
            let h5 = try HDF5File.open(path: path)
            let g = "runs/\(r.runId)/federation/fedbuff/"
            let staleness: [Int64] = try h5.root.openDataset(g + "step_staleness").read()
            let histogram: [Int64] = try h5.root.openDataset(g + "staleness_histogram").read()
            let clients: [Int64] = try h5.root.openDataset(g + "step_clients").read()
            #expect(staleness == t.stepStaleness.flatMap { $0 }.map(Int64.init))
            #expect(clients == t.stepClients.flatMap { $0 }.map(Int64.init))
            #expect(histogram.reduce(0, +) == Int64(2 * t.stepRound.count))
            #expect(h5.root.exists(g + "mean_staleness") && h5.root.exists(g + "busy"))
            try h5.close()
        }
    }

    @Test("FedBuff settings that cannot work are refused with their key")
    func refused() {
        PersonalisedFederationTests.refused(#"{"rounds": 3, "fedbuff": {"buffer_size": 0}}"#, ".federation.fedbuff.buffer_size")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "fedbuff": {}}"#, "buffer_size")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "fedbuff": {"buffer_size": 2, "staleness_exponent": -1}}"#, ".federation.fedbuff.staleness_exponent")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "fedbuff": {"buffer_size": 2, "delay": "none", "slowdown_spread": 1}}"#, ".federation.fedbuff.slowdown_spread")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "fedbuff": {"buffer_size": 2, "weighting": "loss"}}"#, ".federation.fedbuff.weighting")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "aggregation": "median", "fedbuff": {"buffer_size": 2}}"#, ".federation.fedbuff")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "round_deadline": 1, "fedbuff": {"buffer_size": 2}}"#, ".federation.fedbuff")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "secure_aggregation": true, "fedbuff": {"buffer_size": 2}}"#, ".federation.fedbuff")
    }
}
