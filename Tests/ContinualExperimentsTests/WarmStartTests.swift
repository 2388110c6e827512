import ContinualCore
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// `model.init_from`: a run starts from another run's final parameters (all, or all but the
/// output layer), the source is recorded, and every way it can be wrong is a key-path error.
@Suite struct WarmStartTests {
    /// Trains the tiny experiment (runs "naive" and "joint") and writes `dir/global.h5`.
    static func source(_ dir: TemporaryDirectory) throws -> [RunResult] {
        let path = dir.write("source.json", tinyExperiment(name: "global"))
        let file = try ExperimentFile.load(path: path)
        let results = file.runs.map(RunExecutor.execute)
        try ResultsWriter.writeExperiment(results, experiment: file, to: dir.path("global.h5"))
        return results
    }

    /// The tiny experiment (same data: same seed) warm-started from `global.h5`, path relative
    /// to the experiment file.
    static func warm(_ dir: TemporaryDirectory, initFrom: String, hidden: String = "[8]") -> String {
        let json = tinyExperiment(name: "warm").replacingOccurrences(
            of: "\"model\": {\"hidden\": [8]}", with: "\"model\": {\"hidden\": \(hidden), \"init_from\": \(initFrom)}")
        return dir.write("warm-\(UUID().uuidString).json", json)
    }

    static func validationError(_ path: String) -> ConfigError? {
        do { _ = try ExperimentValidation.validate(path: path); return nil } catch let e as ConfigError { return e } catch {
            return ConfigError(location: "?", message: "\(error)")
        }
    }

    @Test func allStartsFromTheSourceModelAndIsRecorded() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let source = try Self.source(dir)
        let joint = try #require(source.first { $0.name == "joint" }?.outcome)
        let path = Self.warm(dir, initFrom: #"{"results": "global.h5", "run": "joint"}"#)
        let file = try ExperimentFile.load(path: path)
        let runs = file.runs.map(RunExecutor.execute)
        let naive = try #require(runs.first { $0.name == "naive" })
        #expect(naive.status == .completed, "\(naive.message)")
        // Before training, the warm model scores exactly what the source's final model scored on
        // the same test sets (same scenario seed): the loaded weights are the source's.
        #expect(naive.outcome?.initialAccuracy == joint.accuracy.last)
        // A cold start does not.
        let cold = try ExperimentFile.parse(data: Data(tinyExperiment(name: "warm").utf8)).runs.map(RunExecutor.execute)
        #expect(cold.first { $0.name == "naive" }?.outcome?.initialAccuracy != joint.accuracy.last)
        // Recorded: config_json and the run attribute.
        #expect(naive.run.canonicalJSON.contains("\"init_from\""))
        try ResultsWriter.writeExperiment(runs, experiment: file, to: dir.path("warm.h5"))
        let f = try HDF5File.open(path: dir.path("warm.h5"))
        defer { try? f.close() }
        let attribute = try f.root.openGroup("runs/\(naive.runId)").attributes.string("init_from")
        #expect(attribute == dir.path("global.h5") + "#joint (all)")
    }

    @Test func coreLoadsEveryLayerButTheOutputLayer() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let source = try Self.source(dir)
        let jointModel = try #require(source.first { $0.name == "joint" }?.outcome?.finalModel)
        let path = Self.warm(dir, initFrom: #"{"results": "global.h5", "run": "joint", "parts": "core"}"#)
        let run = try #require(try ExperimentFile.load(path: path).runs.first { $0.config.name == "naive" })
        let spec = jointModel.spec
        var rng = RandomSource(seed: run.config.seed, stream: "init")
        var model = MLP(spec: spec, rng: &rng)
        let fresh = model.parameters
        try RunExecutor.warmStart(&model, run.config, spec: spec)
        // 10 inputs → 8 hidden: 10·8 + 8 = 88 core parameters; the 9 of the output layer stay fresh.
        let core = spec.inputs * 8 + 8
        #expect(model.parameters.count == core + 9)
        #expect(Array(model.parameters.prefix(core)) == Array(jointModel.parameters.prefix(core)))
        #expect(Array(model.parameters.suffix(9)) == Array(fresh.suffix(9)))
        #expect(Array(model.parameters.prefix(core)) != Array(fresh.prefix(core)))
    }

    @Test func everyProblemIsAKeyPathErrorFromValidate() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        _ = try Self.source(dir)
        let cases: [(initFrom: String, hidden: String, location: String, says: String)] = [
            (#"{"results": "nope.h5", "run": "joint"}"#, "[8]", ".model.init_from.results", "no such results file"),
            (#"{"results": "global.h5", "run": "nobody"}"#, "[8]", ".model.init_from.run", "no run with id or name \"nobody\""),
            (#"{"results": "global.h5", "run": "joint"}"#, "[16]", ".model.init_from.run", "10→8→1 network"),
            (#"{"results": "global.h5", "run": "joint", "parts": "core"}"#, "[16]", ".model.init_from.run", "(10→8 vs 10→16)"),
            (#"{"results": "global.h5", "run": "joint", "parts": "core"}"#, "[]", ".model.init_from.run", "no hidden layer"),
            (#"{"results": "source.json", "run": "joint"}"#, "[8]", ".model.init_from.results", "cannot read"),
            (#"{"results": "global.h5"}"#, "[8]", ".model.init_from.run", "required key is missing"),
            (#"{"results": "global.h5", "run": "joint", "parts": "head"}"#, "[8]", ".model.init_from.parts", "allowed values: all, core"),
            (#"{"results": "global.h5", "run": "joint", "from": 1}"#, "[8]", ".model.init_from.from", "allowed keys: checkpoint, onnx, parts, results, run"),
            (#"{"results": "", "run": "joint"}"#, "[8]", ".model.init_from.results", "must not be empty"),
        ]
        for c in cases {
            let error = Self.validationError(Self.warm(dir, initFrom: c.initFrom, hidden: c.hidden))
            #expect(error?.location == c.location, "\(c.initFrom) hidden \(c.hidden): \(String(describing: error))")
            #expect(error?.message.contains(c.says) == true, "\(c.initFrom): \(String(describing: error))")
        }
        // The shape message names both shapes.
        let shape = Self.validationError(Self.warm(dir, initFrom: #"{"results": "global.h5", "run": "joint"}"#, hidden: "[16]"))
        #expect(shape?.message.contains("10→16→1") == true)
        // A valid warm start validates.
        #expect(Self.validationError(Self.warm(dir, initFrom: #"{"results": "global.h5", "run": "joint"}"#)) == nil)
    }

    @Test func coldStartRunIdsDoNotChange() throws {
        // init_from is omitted from the canonical JSON when absent.
        let run = try ExperimentFile.parse(data: Data(tinyExperiment().utf8)).runs[0]
        #expect(!run.canonicalJSON.contains("init_from"))
    }
}
