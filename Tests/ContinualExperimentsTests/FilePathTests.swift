import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 15 item 3: paths written in an experiment file are relative to that file.
@Suite struct FilePathTests {
    static let csv = """
    experience,split,hour,steps,label
    0,train,0.5,1.0,1
    0,test,0.25,2.0,0
    1,train,0.75,3.5,1
    1,test,0.1,-1,1
    """

    @Test("a relative dataset path and output follow the experiment file, not the working directory")
    func relativeToTheFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try FileManager.default.createDirectory(atPath: dir.path("data"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir.path("exp"), withIntermediateDirectories: true)
        _ = dir.write("data/x.csv", Self.csv)
        let exp = dir.write("exp/e.json", """
        {"name": "rel", "output": "../out/rel.h5", "scenario": {"type": "dataset", "path": "../data/x.csv"},
         "model": {"hidden": [4]}, "training": {"epochs": 1}}
        """)
        let file = try ExperimentFile.load(path: exp)
        #expect(file.output == dir.url.standardizedFileURL.appendingPathComponent("out/rel.h5").path)
        let options = try #require(file.runs[0].config.scenario.options as? DatasetScenario)
        #expect(options.path == dir.url.standardizedFileURL.appendingPathComponent("data/x.csv").path)
        // The canonical JSON (and the run id) keep the path as written.
        #expect(file.runs[0].canonicalJSON.contains(#""path":"../data/x.csv""#))
        // From the package root (the test's working directory for the CLI): runs, writes next to the file.
        let r = try runCLI(["run", exp, "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.path("out/rel.h5")))
    }

    @Test("absolute paths are unchanged")
    func absolute() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let data = dir.write("x.csv", Self.csv)
        let exp = dir.write("e.json", #"{"name": "abs", "output": "/tmp/abs-out.h5", "scenario": {"type": "dataset", "path": "\#(data)"}}"#)
        let file = try ExperimentFile.load(path: exp)
        #expect(file.output == "/tmp/abs-out.h5")
        #expect((file.runs[0].config.scenario.options as? DatasetScenario)?.path == data)
    }

    @Test("continual run /abs/path/Experiments/split_digits.json from another directory behaves as from the repository root")
    func shippedExperimentFromElsewhere() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = packageRoot.appendingPathComponent("Experiments/split_digits.json").path
        let v = try runCLI(["validate", exp], in: dir.url)
        #expect(v.status == 0, "\(v.stderr)")
        // One experience of one variant (the data loads and trains; a full run takes a minute in debug).
        let r = try runCLI(["run", exp, "--variant", "class_seed=1", "--stop-after", "0", "--checkpoint", dir.path("ck.h5")], in: dir.url)
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.contains("stopped after experience 0 of 5"), "\(r.stdout)")
        #expect(FileManager.default.fileExists(atPath: dir.path("ck.h5")))
    }
}
