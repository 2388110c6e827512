import ContinualCore
import ContinualExport
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// `model.init_from` from an exported ONNX model and from a checkpoint, and `StoredModel` (what
/// `continual export` rebuilds from a results file).
@Suite struct WarmStartExportTests {
    /// `dir/global.h5` (runs naive, joint), `dir/global.onnx` (joint's final model) and
    /// `dir/global_int8.onnx`; returns joint's outcome.
    static func sources(_ dir: TemporaryDirectory) throws -> TrainingOutcome {
        let source = try WarmStartTests.source(dir)
        let joint = try #require(source.first { $0.name == "joint" }?.outcome)
        let network = try ExportedNetwork(model: joint.finalModel, route: 0)
        try Data(ONNXExport.modelProto(network)).write(to: URL(fileURLWithPath: dir.path("global.onnx")))
        let int8 = try ExportedNetwork(model: joint.finalModel, route: 0, int8: .perChannel)
        try Data(ONNXExport.modelProto(int8)).write(to: URL(fileURLWithPath: dir.path("global_int8.onnx")))
        try Data(ONNXExport.modelProto(try network.core())).write(to: URL(fileURLWithPath: dir.path("global_core.onnx")))
        return joint
    }

    static func loaded(_ path: String) throws -> (MLP, MLP) {
        let run = try #require(try ExperimentFile.load(path: path).runs.first { $0.config.name == "naive" })
        let stream = try run.config.scenario.options.makeStream(seed: run.config.seed)
        let spec = try run.config.model.spec(inputs: stream.dimension, head: stream.head, experiences: stream.experiences.count)
        var rng = RandomSource(seed: run.config.seed, stream: "init")
        let fresh = MLP(spec: spec, rng: &rng)
        var model = fresh
        try RunExecutor.warmStart(&model, run.config, spec: spec)
        return (fresh, model)
    }

    @Test func onnxStartsFromTheExportedModel() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let joint = try Self.sources(dir)
        let path = WarmStartTests.warm(dir, initFrom: #"{"onnx": "global.onnx"}"#)
        let runs = try ExperimentFile.load(path: path).runs.map(RunExecutor.execute)
        let naive = try #require(runs.first { $0.name == "naive" })
        #expect(naive.status == .completed, "\(naive.message)")
        // Before training the warm model scores what the exported model scored: same weights.
        #expect(naive.outcome?.initialAccuracy == joint.accuracy.last)
        #expect(try Self.loaded(path).1.parameters == joint.finalModel.parameters)
        #expect(naive.run.canonicalJSON.contains(#""onnx":"global.onnx""#))
        // "core": all but the output layer from the file, the head fresh.
        let (fresh, core) = try Self.loaded(WarmStartTests.warm(dir, initFrom: #"{"onnx": "global.onnx", "parts": "core"}"#))
        let n = 10 * 8 + 8
        #expect(Array(core.parameters.prefix(n)) == Array(joint.finalModel.parameters.prefix(n)))
        #expect(Array(core.parameters.suffix(9)) == Array(fresh.parameters.suffix(9)))
        // A core-only export loads as "core".
        let (fresh2, fromCore) = try Self.loaded(WarmStartTests.warm(dir, initFrom: #"{"onnx": "global_core.onnx", "parts": "core"}"#))
        #expect(Array(fromCore.parameters.prefix(n)) == Array(joint.finalModel.parameters.prefix(n)))
        #expect(Array(fromCore.parameters.suffix(9)) == Array(fresh2.parameters.suffix(9)))
        // int8: the dequantised weights q·scale, i.e. what the int8 model computes with.
        let int8 = try Self.loaded(WarmStartTests.warm(dir, initFrom: #"{"onnx": "global_int8.onnx"}"#)).1
        let expected = try ExportedNetwork(model: joint.finalModel, route: 0, int8: .perChannel).denseStages.flatMap { $0.weights + $0.bias }
        #expect(int8.parameters == expected)
        #expect(int8.parameters != joint.finalModel.parameters)
    }

    /// A `low_rank` run's export (`continual export`: the model `StoredModel` rebuilds from the
    /// results file) stores its factorised layers as U and V (`dense<i>.u`, `.v`); `init_from`
    /// merges them into a plain network that predicts what the low-rank model predicts, to
    /// float32 rounding of (x·U)·V against x·(U·V). Both hidden layers are factorised.
    @Test func onnxOfALowRankRunStartsAPlainNetworkWithItsPredictions() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let json = tinyExperiment(name: "lowrank").replacingOccurrences(
            of: #""variants": [{"name": "naive", "strategy": "naive"}, {"name": "joint", "strategy": ["joint"]}]"#,
            with: #""variants": [{"name": "low_rank", "strategy": [{"type": "low_rank", "rank": 2, "start_experience": 1}]}]"#)
            .replacingOccurrences(of: #""model": {"hidden": [8]}"#, with: #""model": {"hidden": [8, 4]}"#)
        let file = try ExperimentFile.load(path: dir.write("lowrank.json", json))
        let run = try #require(file.runs.first)
        let result = RunExecutor.execute(run)
        #expect(result.status == .completed, "\(result.message)")
        try ResultsWriter.writeExperiment([result], experiment: file, to: dir.path("lowrank.h5"))
        let trained = try StoredModel.load(results: dir.path("lowrank.h5"), run: "low_rank").model
        #expect(trained.parameters == result.outcome?.finalModel.parameters)
        let network = try ExportedNetwork(model: trained, route: 0)
        // The file really holds factors (else this would test the plain path again).
        #expect(network.denseStages.map { $0.factors?.rank } == [2, 2, nil])
        try Data(ONNXExport.modelProto(network)).write(to: URL(fileURLWithPath: dir.path("lowrank.onnx")))
        try Data(ONNXExport.modelProto(try network.core())).write(to: URL(fileURLWithPath: dir.path("lowrank_core.onnx")))
        let warmJSON = { (initFrom: String) in
            dir.write("warm-\(UUID().uuidString).json", tinyExperiment(name: "warm").replacingOccurrences(
                of: #""model": {"hidden": [8]}"#, with: #""model": {"hidden": [8, 4], "init_from": \#(initFrom)}"#))
        }
        let (fresh, warm) = try Self.loaded(warmJSON(#"{"onnx": "lowrank.onnx"}"#))
        #expect(warm.parameters != fresh.parameters)
        #expect(warm.parameters.count == fresh.parameters.count)
        // "core" from the core-only export: the hidden layers merged from their factors, the
        // head fresh; the same hidden weights as from the whole file.
        let (freshCore, core) = try Self.loaded(warmJSON(#"{"onnx": "lowrank_core.onnx", "parts": "core"}"#))
        let n = 10 * 8 + 8 + 8 * 4 + 4
        #expect(Array(core.parameters.prefix(n)) == Array(warm.parameters.prefix(n)))
        #expect(Array(core.parameters.suffix(5)) == Array(freshCore.parameters.suffix(5)))
        let stream = try run.config.scenario.options.makeStream(seed: run.config.seed)
        let wsTrained = trained.makeWorkspace(capacity: 1), wsWarm = warm.makeWorkspace(capacity: 1)
        var worst: Float = 0, compared = 0
        for e in stream.experiences {
            for i in 0..<e.test.count {
                let x = Array(e.test.row(i))
                x.withUnsafeBufferPointer { trained.forward($0.baseAddress!, count: 1, route: 0, workspace: wsTrained) }
                x.withUnsafeBufferPointer { warm.forward($0.baseAddress!, count: 1, route: 0, workspace: wsWarm) }
                for j in 0..<trained.spec.head.logitCount {
                    let a = wsTrained.logits[j], b = wsWarm.logits[j]
                    worst = max(worst, abs(a - b) / max(1, abs(a)))
                    compared += 1
                }
            }
        }
        #expect(compared == 3 * 60)
        #expect(worst <= 1e-5, "largest relative logit difference \(worst)")
    }

    @Test func checkpointStartsFromTheLearnersParameters() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let sourcePath = dir.write("source.json", tinyExperiment(name: "global"))
        let run = try #require(try ExperimentFile.load(path: sourcePath).runs.first { $0.config.name == "joint" })
        let stopped = RunExecutor.execute(run, resumingFrom: RunCheckpoint?.none, stopAfter: 1)
        guard let checkpoint = stopped.checkpoint else {
            Issue.record("no checkpoint: \(stopped.message)")
            return
        }
        try CheckpointFile.write(checkpoint, configJSON: run.canonicalJSON, to: dir.path("joint.ckpt.h5"))
        let (fresh, model) = try Self.loaded(WarmStartTests.warm(dir, initFrom: #"{"checkpoint": "joint.ckpt.h5"}"#))
        #expect(model.parameters == checkpoint.parameters)
        #expect(model.parameters != fresh.parameters)
        // StoredModel rebuilds the same network from the checkpoint's config.
        let stored = try StoredModel.load(checkpoint: dir.path("joint.ckpt.h5"))
        #expect(stored.model.parameters == checkpoint.parameters && stored.config.name == "joint")
        #expect(stored.trainedExperiences == 2)
    }

    @Test func everyProblemIsAKeyPathError() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        _ = try Self.sources(dir)
        let cases: [(initFrom: String, hidden: String, location: String, says: String)] = [
            (#"{"onnx": "nope.onnx"}"#, "[8]", ".model.init_from.onnx", "no such ONNX model"),
            (#"{"onnx": "source.json"}"#, "[8]", ".model.init_from.onnx", "not an ONNX model"),
            (#"{"onnx": "global.onnx"}"#, "[16]", ".model.init_from.onnx", "ONNX model"),
            (#"{"onnx": "global.onnx", "parts": "core"}"#, "[16]", ".model.init_from.onnx", "(10→8 vs 10→16)"),
            (#"{"onnx": "global.onnx", "run": "joint"}"#, "[8]", ".model.init_from.run", "run goes with results"),
            (#"{"onnx": ""}"#, "[8]", ".model.init_from.onnx", "must not be empty"),
            (#"{"onnx": "global_core.onnx"}"#, "[8]", ".model.init_from.parts", "without its output layer"),
            (#"{"onnx": "global_core.onnx", "parts": "core"}"#, "[16]", ".model.init_from.onnx", "(10→8 vs 10→16)"),
            (#"{"results": "global.h5", "run": "joint", "onnx": "global.onnx"}"#, "[8]", ".model.init_from.onnx", "give one source"),
            (#"{"checkpoint": "nope.h5"}"#, "[8]", ".model.init_from.checkpoint", "no such checkpoint"),
            (#"{"checkpoint": "global.h5"}"#, "[8]", ".model.init_from.checkpoint", "cannot read checkpoint"),
            (#"{"checkpoint": "x.h5", "onnx": "global.onnx"}"#, "[8]", ".model.init_from.checkpoint", "give one source"),
        ]
        for c in cases {
            let error = WarmStartTests.validationError(WarmStartTests.warm(dir, initFrom: c.initFrom, hidden: c.hidden))
            #expect(error?.location == c.location, "\(c.initFrom) hidden \(c.hidden): \(String(describing: error))")
            #expect(error?.message.contains(c.says) == true, "\(c.initFrom): \(String(describing: error))")
        }
        // A shape mismatch names both shapes.
        let shape = WarmStartTests.validationError(WarmStartTests.warm(dir, initFrom: #"{"onnx": "global.onnx"}"#, hidden: "[16]"))
        #expect(shape?.message.contains("10→8→1") == true && shape?.message.contains("10→16→1") == true, "\(String(describing: shape))")
        #expect(WarmStartTests.validationError(WarmStartTests.warm(dir, initFrom: #"{"onnx": "global.onnx"}"#)) == nil)
    }

    /// What `continual export` exports: the run's own final model, adapters and LoRA included.
    @Test func storedModelIsTheRunsFinalModel() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let json = tinyExperiment(name: "peft").replacingOccurrences(
            of: #""variants": [{"name": "naive", "strategy": "naive"}, {"name": "joint", "strategy": ["joint"]}]"#,
            with: #""allow_task_labels": true, "variants": [{"name": "lora", "strategy": [{"type": "lora", "rank": 2, "routing": "task_id"}]}, {"name": "adapters", "strategy": [{"type": "adapters", "bottleneck": 3, "routing": "task_id"}]}, {"name": "last_layer", "strategy": [{"type": "last_layer"}]}]"#)
        let path = dir.write("peft.json", json)
        let file = try ExperimentFile.load(path: path)
        let results = file.runs.map(RunExecutor.execute)
        try ResultsWriter.writeExperiment(results, experiment: file, to: dir.path("peft.h5"))
        for r in results {
            #expect(r.status == .completed, "\(r.name): \(r.message)")
            let stored = try StoredModel.load(results: dir.path("peft.h5"), run: r.name)
            #expect(stored.model.spec == r.outcome?.finalModel.spec, "\(r.name)")
            #expect(stored.model.parameters == r.outcome?.finalModel.parameters, "\(r.name)")
            #expect(stored.onDeviceTrainableLayers == (r.name == "last_layer" ? [1] : nil))
        }
        #expect(throws: StoredModel.Failure.self) { try StoredModel.load(results: dir.path("peft.h5"), run: "nobody") }
    }
}
