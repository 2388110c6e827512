import ContinualCore
import ContinualHDF5
import ContinualMetrics
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 29: clients that drop out mid-round and stragglers that miss the round's deadline —
/// their updates never reach the aggregate, they are counted per round (and per client) in the
/// results, secure aggregation pays the dropout recovery, and runs without failure are unchanged.
@Suite("Client failure: dropouts and stragglers")
struct ClientFailureTests {
    static func run(_ federation: String) throws -> ResolvedRun {
        try PersonalisedFederationTests.run(federation)
    }

    /// The server's initial model (a local-only run's global model never moves).
    static func initial() throws -> [Float] {
        FederationRunner.execute(try run(#"{"rounds": 1, "share": "none"}"#)).outcome!.finalModel.parameters
    }

    @Test("when every client drops out, nothing reaches the server: the model stays initial, every dropout is counted")
    func everyoneDrops() throws {
        let r = FederationRunner.execute(try Self.run(#"{"rounds": 5, "clients_per_round": 6, "dropout_probability": 1}"#))
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        #expect(r.outcome!.finalModel.parameters == (try Self.initial()))
        #expect(f.completed.allSatisfy { $0 == 0 } && f.aggregated.allSatisfy { !$0 })
        #expect(f.dropped == f.invited)   // always available, new data every round
        #expect(f.bytesUp.allSatisfy { $0 == 0 })
        #expect(f.participations.allSatisfy { $0 == 0 })
        #expect(f.clientDropouts.reduce(0, +) == f.dropped.reduce(0, +))
        // The download and the training up to the drop were spent.
        #expect(f.bytesDown.allSatisfy { $0 > 0 } && f.trainingJoules.allSatisfy { $0 > 0 })
    }

    @Test("some dropouts: completed + dropped = started, per round and per client; the model differs from no failure")
    func someDrop() throws {
        let text = #"{"rounds": 8, "clients_per_round": 6, "dropout_probability": 0.4}"#
        let r = FederationRunner.execute(try Self.run(text))
        let f = try #require(r.federation)
        #expect(r.status == .completed, "\(r.message)")
        for k in f.invited.indices { #expect(f.completed[k] + f.dropped[k] == f.invited[k]) }
        #expect(f.dropped.reduce(0, +) > 0 && f.completed.reduce(0, +) > 0)
        #expect(f.participations.reduce(0, +) == f.completed.reduce(0, +))
        #expect(f.clientDropouts.reduce(0, +) == f.dropped.reduce(0, +))
        let clean = FederationRunner.execute(try Self.run(#"{"rounds": 8, "clients_per_round": 6}"#))
        #expect(r.outcome!.finalModel.parameters != clean.outcome!.finalModel.parameters)
        // Probability 0 is the run without failure, bit for bit (and the same config).
        let zero = FederationRunner.execute(try Self.run(#"{"rounds": 8, "clients_per_round": 6, "dropout_probability": 0}"#))
        #expect(FederationTests.fingerprint(zero) == FederationTests.fingerprint(clean))
        for rank in ThreadRanks.execute(try Self.run(text), ranks: 2) {
            let same = FederationTests.fingerprint(rank) == FederationTests.fingerprint(r)
            #expect(same)
        }
    }

    @Test("stragglers: a deadline no round meets discards every update; one every round meets changes nothing")
    func stragglers() throws {
        let late = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 5, "round_deadline": 1e-12}"#))
        let f = try #require(late.federation)
        #expect(late.status == .completed, "\(late.message)")
        #expect(f.stragglers == f.invited && f.completed.allSatisfy { $0 == 0 })
        #expect(late.outcome!.finalModel.parameters == (try Self.initial()))
        #expect(f.clientStraggles.reduce(0, +) == f.stragglers.reduce(0, +))
        let clean = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 5}"#))
        let generous = FederationRunner.execute(try Self.run(#"{"rounds": 4, "clients_per_round": 5, "round_deadline": 1e9}"#))
        #expect(generous.outcome!.finalModel.parameters == clean.outcome!.finalModel.parameters)
        #expect(generous.population!.matrices == clean.population!.matrices)
        #expect(generous.federation!.stragglers.allSatisfy { $0 == 0 })
        // A deadline near the rounds' time splits them (the slowdown is drawn per round and client).
        let flops = Double(EnergyEstimate(session: TrainingTraffic(model: clean.outcome!.finalModel, optimizer: .sgd(learningRate: 0.1)),
                                          rows: 16, steps: 1, trainableParameters: nil, extraFLOPs: 0,
                                          profile: DeviceConfig().profile).flops)
        let some = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 6, "round_deadline": \#(10 * flops / DeviceConfig().profile.flopsPerSecond), "straggler_spread": 2}"#))
        let s = try #require(some.federation)
        for k in s.invited.indices { #expect(s.completed[k] + s.stragglers[k] == s.invited[k]) }
        #expect(s.stragglers.reduce(0, +) > 0 && s.completed.reduce(0, +) > 0, "\(s.stragglers) \(s.completed)")
    }

    @Test("secure aggregation's dropout recovery: each survivor uploads a 32-byte share per dropout")
    func secureAggregationRecovery() throws {
        let r = FederationRunner.execute(try Self.run(#"{"rounds": 6, "clients_per_round": 6, "dropout_probability": 0.4, "secure_aggregation": true}"#))
        let f = try #require(r.federation)
        let p = f.sharedParameters
        var sawBoth = false
        for k in f.invited.indices {
            let c = f.completed[k], d = f.dropped[k], m = c + d
            let expected = m * (64 + (m - 1) * 80) + c * (4 * p + 32 * d)
            #expect(f.bytesUp[k] == expected, "round \(k): \(c) completed, \(d) dropped")
            if c > 0 && d > 0 { sawBoth = true }
        }
        #expect(sawBoth)
    }

    @Test("the per-round and per-client failure counts are in the results file; other runs' files do not change layout")
    func recorded() throws {
        let file = try ExperimentFile.parse(data: Data("""
        {"name": "fail", "seed": 5,
         "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 20, "phases": ["morning", "night"]},
         "population": {"users": 8}, "model": {"hidden": [8]},
         "federation": {"rounds": 4, "clients_per_round": 4, "dropout_probability": 0.5}}
        """.utf8))
        let r = RunExecutor.execute(file.runs[0])
        #expect(r.status == .completed, "\(r.message)")
        try withScenarioTempDir { dir in
            let path = dir + "/fail.h5"
            try ResultsWriter.writeExperiment([r], experiment: file, to: path)
            let h5 = try HDF5File.open(path: path)
            let dropped: [Int64] = try h5.root.openDataset("runs/\(r.runId)/federation/dropped").read()
            let perClient: [Int64] = try h5.root.openDataset("runs/\(r.runId)/federation/client_dropouts").read()
            #expect(dropped == r.federation!.dropped.map(Int64.init))
            #expect(perClient.reduce(0, +) == dropped.reduce(0, +) && dropped.reduce(0, +) > 0)
            #expect(h5.root.exists("runs/\(r.runId)/federation/stragglers"))
            try h5.close()
            // A run without failure keys writes neither dataset.
            let cleanFile = try ExperimentFile.parse(data: Data("""
            {"name": "clean", "seed": 5,
             "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 20, "phases": ["morning", "night"]},
             "population": {"users": 8}, "model": {"hidden": [8]},
             "federation": {"rounds": 2, "clients_per_round": 4}}
            """.utf8))
            let c = RunExecutor.execute(cleanFile.runs[0])
            try ResultsWriter.writeExperiment([c], experiment: cleanFile, to: dir + "/clean.h5")
            let h = try HDF5File.open(path: dir + "/clean.h5")
            #expect(!h.root.exists("runs/\(c.runId)/federation/dropped"))
            try h.close()
        }
    }

    @Test("bad failure settings are refused with their key")
    func refused() {
        PersonalisedFederationTests.refused(#"{"rounds": 3, "dropout_probability": 1.5}"#, ".federation.dropout_probability")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "round_deadline": 0}"#, ".federation.round_deadline")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "straggler_spread": 1}"#, ".federation.straggler_spread")
        PersonalisedFederationTests.refused(#"{"rounds": 3, "share": "none", "dropout_probability": 0.1}"#, ".federation.share")
    }
}
