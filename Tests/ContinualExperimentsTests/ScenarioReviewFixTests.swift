import ContinualCore
import ContinualHDF5
import ContinualScenarios
import Foundation
import Testing
@testable import ContinualExperiments

/// Regression tests for the scenario review: populations with unequal T, archive order beyond
/// 1000 experiences, binary datasets, prequential joint, split_digits task without heads, CSV.
@Suite("Scenario review fixes (experiments)")
struct ScenarioReviewFixTests {
    static func notificationPopulation(cut: String, users: Int) -> String {
        """
        {"name": "np", "seed": 2,
         "scenario": {"type": "notification_engagement", "train_per_experience": 40, "test_per_experience": 20,
                      "phases": ["morning_reader", "evening_reader"], "cut": \(cut)},
         "training": {"epochs": 1}, "population": {"users": \(users), "jobs": 2}}
        """
    }

    @Test("a population whose users get different numbers of experiences fails cleanly, never crashes")
    func populationUnequalT() throws {
        // Built in code: the config-time check would refuse it.
        let file = try ExperimentFile.parse(data: Data(Self.notificationPopulation(cut: #""week""#, users: 1).utf8))
        var config = file.runs[0].config
        config.population = PopulationConfig(users: 6)
        config.population!.jobs = 2
        let r = PopulationExecutor.execute(ResolvedRun(config: config), population: config.population!)
        let ts = Set(try #require(r.population).finalAccuracy.map(\.count))
        #expect(ts.count > 1)  // the premise: users really differ in T
        #expect(r.status == .failed)
        #expect(r.message.contains("different numbers of experiences"), "\(r.message)")
        // The run-level numbers come from the users with user 0's T only.
        let outcome = try #require(r.outcome)
        #expect(outcome.accuracy.count == r.experienceNames.count && outcome.accuracy.allSatisfy { $0.count == outcome.accuracy.count })
        #expect(r.metrics.map { !$0.acc.isNaN } == true)
    }

    @Test("calendar cuts of notification_engagement are refused for populations, naming the key path")
    func populationCutRefused() throws {
        for cut in [#""week""#, #""month""#] {
            do {
                _ = try ExperimentFile.parse(data: Data(Self.notificationPopulation(cut: cut, users: 6).utf8))
                Issue.record("expected a ConfigError for cut \(cut)")
            } catch let e as ConfigError {
                #expect(e.location == ".scenario.cut", "\(e)")
            }
        }
        // Allowed: one user, or a fixed-size cut (T is the same for everyone).
        _ = try ExperimentFile.parse(data: Data(Self.notificationPopulation(cut: #""week""#, users: 1).utf8))
        let fixed = try ExperimentFile.parse(data: Data(Self.notificationPopulation(cut: "25", users: 3).utf8))
        #expect(RunExecutor.execute(fixed.runs[0]).status == .completed)
    }

    @Test("archives with more than 1000 experiences read back in stream order")
    func archiveManyExperiences() throws {
        let T = 1002
        let experiences = (0..<T).map { i in
            Experience(index: i, name: "e\(i)", train: Samples(dimension: 1, features: [Float(i)], labels: [0]),
                       test: Samples(dimension: 1, features: [Float(i)], labels: [1]))
        }
        let stream = ExperienceStream(name: "many", featureNames: ["x"], head: .binary, experiences: experiences)
        try withScenarioTempDir { dir in
            let path = dir + "/many.h5"
            try ScenarioArchive.write(stream, to: path)
            let back = try ScenarioArchive.read(path: path)
            #expect(back.experiences.map(\.name) == experiences.map(\.name))
            #expect(back == stream)
        }
        #expect(ScenarioArchive.groupName(7, count: T) == "0007" && ScenarioArchive.groupName(7, count: 5) == "007")
    }

    @Test("an archive whose group names sort wrongly as text is still read in numeric order")
    func archiveNumericOrder() throws {
        try withScenarioTempDir { dir in
            let path = dir + "/names.h5"
            let f = try HDF5File.create(path: path)
            let a = f.root.attributes
            try a.set("format", "continualkit-scenario")
            try a.set("format_version", Int64(1))
            try a.set("head", "binary")
            try a.set("classes", Int64(2))
            _ = try f.root.write(["x"], name: "feature_names")
            let g = try f.root.createGroup("experiences")
            for i in 0..<11 {
                let e = try g.createGroup(String(i))  // "10" < "2" as text
                for split in ["train", "test"] {
                    let s = try e.createGroup(split)
                    _ = try s.write([Float(i)], shape: [1, 1], name: "features")
                    _ = try s.write([Int32(0)], shape: [1], name: "labels")
                }
            }
            try f.close()
            let back = try ScenarioArchive.read(path: path)
            #expect(back.experiences.map { $0.train.features[0] } == (0..<11).map(Float.init))
        }
    }

    @Test("a binary dataset refuses labels above 1, naming the file and the first offending row")
    func binaryLabels() throws {
        try withScenarioTempDir { dir in
            let path = dir + "/three.csv"
            try "experience,split,x,label\n0,train,1,0\n0,train,2,1\n0,test,3,0\n1,train,4,1\n1,test,5,3\n".write(toFile: path, atomically: true, encoding: .utf8)
            var d = DatasetScenario(path: path)
            d.head = .binary
            let error = try d.makeStreamError()
            #expect(error.contains("experience 1 (\"experience_1\") test row 0 has label 3"), "\(error)")
            #expect(error.hasPrefix(path))
            d.head = .auto
            #expect(try d.makeStreamError() == "no error")
        }
    }

    @Test("CSV: a UTF-8 byte order mark is ignored, quoted fields and empty splits are clear errors")
    func csvDetails() throws {
        try withScenarioTempDir { dir in
            func read(_ text: String) -> String {
                let path = dir + "/d.csv"
                try? text.write(toFile: path, atomically: true, encoding: .utf8)
                return ((try? DatasetScenario(path: path).makeStreamError()) ?? "").replacingOccurrences(of: path, with: "d.csv")
            }
            let good = "experience,split,x,label\n0,train,1,0\n0,test,2,1\n"
            #expect(read("\u{FEFF}" + good) == "no error")
            #expect(read(good.replacingOccurrences(of: "0,test,2,1", with: "0,test,\"2,5\",1"))
                    .hasPrefix("d.csv:3, column 3: quoted fields with commas or quotes inside are not supported"))
            #expect(read(good + "1,train,3,0\n") .contains("experience 1 (\"experience_1\"): its test set is empty"))
        }
    }

    @Test("prequential joint predicts only each experience's own rows (as many positions as naive)")
    func prequentialJoint() throws {
        func run(_ strategy: String) throws -> RunResult {
            let file = try PopulationAndPrequentialTests.experiment(#""strategy": [""# + strategy + #""]"#,
                training: #"{"mode": "prequential", "window": 20, "record_every": 1, "batch_size": 4}"#)
            return RunExecutor.execute(file.runs[0])
        }
        let naive = try #require(try run("naive").prequential), joint = try #require(try run("joint").prequential)
        #expect(joint.position.count == naive.position.count)
        #expect(joint.experienceStarts == naive.experienceStarts)
        #expect(joint.position.last == 2 * 60)
    }

    @Test("split_digits task setting without multi_head is refused, naming .model.multi_head")
    func taskNeedsHeads() throws {
        let json = #"{"name": "t", "scenario": {"type": "split_digits", "setting": "task"}}"#
        do {
            _ = try ExperimentFile.parse(data: Data(json.utf8))
            Issue.record("expected a ConfigError")
        } catch let e as ConfigError {
            #expect(e.location == ".model.multi_head", "\(e)")
        }
        let ok = #"{"name": "t", "scenario": {"type": "split_digits", "setting": "task"}, "model": {"multi_head": true}}"#
        _ = try ExperimentFile.parse(data: Data(ok.utf8))
        // Configs built in code are refused by the executor.
        let config = RunConfig(name: "t", seed: 0, scenario: ScenarioSpec(SplitDigitsScenario(setting: .task)), strategy: [])
        let r = RunExecutor.execute(ResolvedRun(config: config))
        #expect(r.status == .failed && r.message.hasPrefix(".model.multi_head"), "\(r.message)")
    }
}
