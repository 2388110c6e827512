import ContinualCore
import ContinualHDF5
import ContinualScenarios
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 43 item 3: a federation's knobs are selected by the same protocol as a continual
/// method's (`"tune"`, docs/tuning.md): validation samples carved from the training data before
/// the partition deals it out, scored by the personal ACC, test sets never read. Populations get
/// one carve per user.
@Suite("Tuning federations and populations on validation splits")
struct FederatedTuningTests {
    static func experiment(path: String) -> String {
        """
        {"name": "fed_tune", "seed": 1,
         "scenario": {"type": "split_digits", "path": "\(path)", "setting": "class", "classes_per_experience": 10},
         "population": {"users": 4}, "model": {"hidden": [16]}, "optimizer": {"type": "sgd", "lr": 0.05},
         "training": {"batch_size": 16}, "strategy": ["naive"],
         "federation": {"rounds": 3, "clients_per_round": 4, "local_epochs": 1, "availability": "always",
                        "local_data": "all", "partition": {"type": "dirichlet", "alpha": 0.5}},
         "tune": {"validation_fraction": 0.25, "seeds": [1000],
                  "parameters": {"federation.ditto_lambda": [0.01, 10]}},
         "variants": [{"name": "ditto", "federation": {"personal": "ditto", "ditto_lambda": 1}},
                      {"name": "fedavg", "tune": null}],
         "sweep": {"parameters": {"seed": [1, 2]}}}
        """
    }

    func tune(_ text: String, path: String) async throws -> [TuningRecord] {
        try await Tuner.tune(try ExperimentFile.parse(data: Data(text.utf8), path: path), jobs: 2)
    }

    @Test("validation samples are carved from the training pool before the partition: the clients train on the rest")
    func carvedBeforeThePartition() throws {
        let file = try ExperimentFile.parse(data: Data(Self.experiment(path: digitsPath).utf8), path: "e.json")
        let trial = try #require(try Tuner.trials(file).first)
        #expect(trial.run.config.validationSplit == ValidationSplit(fraction: 0.25))
        let r = FederationRunner.execute(trial.run)
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        let full = try FederationPartitionTests.digits(.class)
        var o = SplitDigitsScenario(setting: .class)
        o.path = digitsPath
        o.classesPerExperience = 10
        let whole = try o.makeStream(seed: 1)
        let carved = try ValidationSplit(fraction: 0.25).apply(to: whole)
        #expect(whole.experiences[0].train.count == full.experiences.map(\.train.count).reduce(0, +))
        // The clients' training shares add up to the training pool less the carve, not to all of it.
        #expect(f.partitionTrainCounts.map { $0.reduce(0, +) }.reduce(0, +) == carved.experiences[0].train.count)
        #expect(carved.experiences[0].train.count < whole.experiences[0].train.count)
        // Each client's evaluation set is a share of the carve (the test set is 1/3 of this size).
        let evaluated = f.partitionTestCounts.map { $0.reduce(0, +) }.reduce(0, +)
        #expect(evaluated == carved.experiences[0].test.count && evaluated != whole.experiences[0].test.count)
    }

    @Test("a poisoned test set changes neither the federated selection's scores nor its choice")
    func poisonedTestSet() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let bad = try poisonedDigits(in: dir)
        let clean = try await tune(Self.experiment(path: digitsPath), path: dir.path("a.json"))
        let dirty = try await tune(Self.experiment(path: bad), path: dir.path("b.json"))
        #expect(clean.count == 1 && clean[0].variant == "ditto")
        #expect(clean[0].scores.flatMap { $0 }.allSatisfy { $0.isFinite && $0 > 0.1 }, "\(clean[0].scores)")
        #expect(clean.map(\.chosen) == dirty.map(\.chosen))
        #expect(clean[0].scores.flatMap { $0 }.map(\.bitPattern) == dirty[0].scores.flatMap { $0 }.map(\.bitPattern))
        // The score is what a reported run would call personal ACC, on validation shares.
        #expect(clean[0].scores[0][0] != clean[0].scores[1][0])
    }

    @Test("each user of a population holds out different samples; one stream keeps the original carve")
    func perUserCarve() throws {
        var o = SplitDigitsScenario(setting: .class)
        o.path = digitsPath
        let s = try o.makeStream(seed: 0)
        let split = ValidationSplit(fraction: 0.2, experiences: 2, seed: 5)
        let plain = try split.apply(to: s), a = try split.apply(to: s, owner: "user 0"), b = try split.apply(to: s, owner: "user 1")
        #expect(a != b && a != plain)
        #expect(try split.apply(to: s, owner: "") == plain)
        for (x, y) in zip(a.experiences, b.experiences) {
            #expect(x.test.count == y.test.count && x.test.labels.sorted() == y.test.labels.sorted())   // same strata
        }
    }

    @Test("a population run evaluates every user on their own validation carve, and validate checks the carve")
    func populationRun() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let split = #""validation_split": {"fraction": 0.3, "experiences": 2},"#
        let exp = dir.write("p.json", tinyExperiment(extra: #""population": {"users": 3},"# + split))
        let r = try runCLI(["run", exp, "--variant", "naive", "-q", "-o", dir.path("p.h5")])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let file = try ExperimentFile.parse(data: Data(tinyExperiment(extra: #""population": {"users": 3},"# + split).utf8))
        let result = RunExecutor.execute(file.runs[0])
        #expect(result.status == .completed, "\(result.message)")
        #expect(try #require(result.population).matrices.allSatisfy { $0.count == 2 })
        let tooMany = dir.write("q.json", tinyExperiment(extra: #""validation_split": {"experiences": 9},"#))
        let v = try runCLI(["validate", tooMany])
        #expect(v.status != 0 && (v.stdout + v.stderr).contains(".validation_split"), "\(v.stdout)\(v.stderr)")
        let fewShot = tinyExperiment(extra: #""population": {"users": 4},"# + split
                                     + #""few_shot": {"method": "scratch", "held_out_users": 1},"#)
        #expect { try ExperimentFile.parse(data: Data(fewShot.utf8)) } throws: { "\($0)".contains("\"validation_split\"") }
    }
}
