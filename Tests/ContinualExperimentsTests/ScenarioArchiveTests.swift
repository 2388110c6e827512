import ContinualCore
import ContinualScenarios
import Foundation
import Testing
@testable import ContinualExperiments

/// A fresh directory for one test, removed afterwards.
func withScenarioTempDir<R>(_ body: (String) throws -> R) throws -> R {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("ScenarioTests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url.path)
}

@Suite("Scenario import and export")
struct ScenarioArchiveTests {
    @Test("export → import round-trips every generated scenario exactly (features bit for bit)")
    func roundTrip() throws {
        var streams: [ExperienceStream] = [
            try HabitDriftScenario(trainPerExperience: 200, testPerExperience: 50).makeStream(seed: 3),
            try ScenarioCatalog.resolve(name: "app_usage", optionsText: #"{"train_per_experience": 300, "test_per_experience": 100, "cut": "week"}"#).options.makeStream(seed: 4),
            try ScenarioCatalog.resolve(name: "health_baseline", optionsText: "").options.makeStream(seed: 5),
            try ScenarioCatalog.resolve(name: "notification_engagement", optionsText: #"{"drift": "gradual"}"#).options.makeStream(seed: 6),
        ]
        // Routes and an empty test set survive too.
        var routed = streams[0]
        routed.experiences[1].train.routes = routed.experiences[1].train.labels.map { _ in 1 }
        routed.experiences[2].test = Samples(dimension: routed.dimension)
        streams.append(routed)
        try withScenarioTempDir { dir in
            for (i, s) in streams.enumerated() {
                let path = dir + "/s\(i).h5"
                try ScenarioArchive.write(s, to: path, optionsJSON: "{}")
                let back = try DatasetScenario(path: path).makeStream(seed: 99)
                #expect(back == s, "stream \(i) (\(s.name))")
                for (a, b) in zip(back.experiences, s.experiences) {
                    #expect(a.train.features.map(\.bitPattern) == b.train.features.map(\.bitPattern))
                    #expect(a.test.features.map(\.bitPattern) == b.test.features.map(\.bitPattern))
                }
            }
        }
    }

    @Test("the dataset scenario is usable from experiment JSON")
    func fromExperimentJSON() throws {
        try withScenarioTempDir { dir in
            let path = dir + "/h.h5"
            try ScenarioArchive.write(try HabitDriftScenario(trainPerExperience: 100, testPerExperience: 40).makeStream(seed: 1), to: path)
            let json = #"{"name": "ds", "scenario": {"type": "dataset", "path": "\#(path)"}, "training": {"epochs": 1}}"#
            let file = try ExperimentFile.parse(data: Data(json.utf8))
            let result = RunExecutor.execute(file.runs[0])
            #expect(result.status == .completed, "\(result.message)")
            #expect(result.outcome?.accuracy.count == 5)
        }
    }

    static let goodCSV = """
    experience,split,hour,steps,label
    0,train,0.5,1.0,1
    0,test,0.25,2.0,0
    1,train,0.75,3.5,2
    1,test,0.1,-1,1
    """

    func csvError(_ text: String, classes: Int? = nil) throws -> String {
        try withScenarioTempDir { dir in
            let path = dir + "/data.csv"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            var d = DatasetScenario(path: path)
            d.classes = classes
            do {
                _ = try d.makeStream(seed: 0)
                return "no error"
            } catch {
                return "\(error)".replacingOccurrences(of: path, with: "data.csv")
            }
        }
    }

    @Test("CSV layout reads experiences, splits, features and labels")
    func csvReads() throws {
        try withScenarioTempDir { dir in
            let path = dir + "/data.csv"
            try Self.goodCSV.write(toFile: path, atomically: true, encoding: .utf8)
            let s = try DatasetScenario(path: path).makeStream(seed: 0)
            #expect(s.featureNames == ["hour", "steps"])
            #expect(s.head == .multiclass(classes: 3))
            #expect(s.experiences.count == 2)
            #expect(s.experiences[1].train.features == [0.75, 3.5] && s.experiences[1].test.labels == [1])
        }
    }

    @Test("CSV errors name the file, line and column")
    func csvErrors() throws {
        #expect(try csvError(Self.goodCSV + "\n1,train,0.3,2") == "data.csv:6: ragged row: expected 5 columns as in the header, found 4")
        #expect(try csvError(Self.goodCSV + "\n1,train,abc,2,1")
                == #"data.csv:6, column 3 ("hour"): expected a finite number, found "abc""#)
        #expect(try csvError(Self.goodCSV.replacingOccurrences(of: ",label", with: ",y"))
                == "data.csv:1: missing column \"label\" in the header (found: experience, split, hour, steps, y)")
        #expect(try csvError(Self.goodCSV, classes: 2) == #"data.csv:4, column 5 ("label"): label 2 is out of range 0..<2"#)
        #expect(try csvError(Self.goodCSV + "\n1,valid,0.3,2,1")
                == #"data.csv:6, column 2 ("split"): split must be "train" or "test", found "valid""#)
        #expect(try csvError(Self.goodCSV + "\n1,train,0.3,2,1.5")
                == #"data.csv:6, column 5 ("label"): expected an integer class label, found "1.5""#)
        #expect(try csvError(Self.goodCSV + "\nx,train,0.3,2,1")
                == #"data.csv:6, column 1 ("experience"): expected an integer experience id, found "x""#)
        let missing = try DatasetScenario(path: "/nonexistent/x.csv").makeStreamError()
        #expect(missing == "/nonexistent/x.csv: no such file")
        let missingH5 = try DatasetScenario(path: "/nonexistent/x.h5").makeStreamError()
        #expect(missingH5 == "/nonexistent/x.h5: no such file")
    }

    @Test("dataset options are strict and checked")
    func datasetOptions() throws {
        #expect(throws: ConfigError.self) { try ScenarioCatalog.resolve(name: "dataset", optionsText: #"{"path": "a.txt"}"#) }
        #expect(throws: ConfigError.self) { try ScenarioCatalog.resolve(name: "dataset", optionsText: #"{"path": "a.csv", "colums": 3}"#) }
        #expect(throws: ConfigError.self) { try ScenarioCatalog.resolve(name: "dataset", optionsText: "") }
        #expect(throws: ConfigError.self) { try ScenarioCatalog.resolve(name: "no_such_scenario", optionsText: "") }
    }
}

extension DatasetScenario {
    func makeStreamError() throws -> String {
        do {
            _ = try makeStream(seed: 0)
            return "no error"
        } catch { return "\(error)" }
    }
}
