import Foundation
import Testing
import ContinualCore
import ContinualHDF5
import ContinualScenarios
import ContinualStrategies
@testable import ContinualExperiments

/// Stop after experience k, save to HDF5, resume: bit-identical to an uninterrupted run; damaged
/// checkpoints are rejected with a clear message.
@Suite struct CheckpointTests {
    static let spec = MLPSpec(inputs: 10, hidden: [8])

    func stream() throws -> ExperienceStream {
        try HabitDriftScenario(trainPerExperience: 120, testPerExperience: 40,
                               phases: ["morning", "night", "reminder_fatigue", "morning"].map { HabitPhase.presets[$0]! })
            .makeStream(seed: 6)
    }

    func trainer(_ plugin: () -> any StrategyPlugin, optimizer: OptimizerSpec, reset: Bool) -> Trainer {
        Trainer(spec: Self.spec, optimizer: optimizer,
                options: TrainingOptions(epochs: 3, batchSize: 16, resetOptimizerPerExperience: reset),
                plugins: [plugin()], seed: 11)
    }

    static func plugin(_ name: String) -> any StrategyPlugin {
        switch name {
        case "naive": return Naive()
        case "joint": return Joint()
        // Sampled Fisher: the plugin's own random stream must survive the checkpoint too.
        case "ewc": return EWC(options: EWC.Options(lambda: 50, fisher: .sample))
        case "online_ewc": return EWC(options: EWC.Options(lambda: 50, mode: .online, gamma: 0.9))
        case "si": return SynapticIntelligence(options: SynapticIntelligence.Options(c: 1))
        // Replay: buffer contents, policy counters, both random streams and the batch-sampling
        // permutation must survive; int8 also its per-feature ranges.
        case "replay_reservoir": return Replay(options: Replay.Options(capacity: 30))
        case "replay_class_balanced_int8":
            return Replay(options: Replay.Options(capacity: 25, precision: .int8, policy: .classBalanced))
        case "replay_herding_float16":
            return Replay(options: Replay.Options(capacityBytes: 400, precision: .float16, policy: .coresetHerding))
        case "replay_kcenter": return Replay(options: Replay.Options(capacity: 20, policy: .coresetKCenter))
        case "adapters": return Adapters(options: Adapters.Options())
        case "adapters_context":
            var o = Adapters.Options()
            o.routing = .context
            return Adapters(options: o)
        case "lora": return LoRA(options: LoRA.Options())
        case "last_layer": return LastLayer(options: LastLayer.Options())
        case "qat": return QuantizationAware(options: .init(startExperience: 1))
        default: return BitFit(options: BitFit.Options())
        }
    }

    @Test(arguments: ["naive", "joint", "ewc", "online_ewc", "si", "replay_reservoir", "replay_class_balanced_int8",
                      "replay_herding_float16", "replay_kcenter", "adapters", "adapters_context", "lora",
                      "last_layer", "bitfit", "qat"], [0, 1, 2])
    func stopAndResumeIsBitIdentical(strategy: String, k: Int) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let make: () -> any StrategyPlugin = { Self.plugin(strategy) }
        let s = try stream()
        // Adam state carried across experiences, so optimizer state must survive the checkpoint.
        let optimizer = OptimizerSpec.adam(learningRate: 0.01)
        var full = trainer(make, optimizer: optimizer, reset: false)
        let uninterrupted = try full.run(s)

        var first = trainer(make, optimizer: optimizer, reset: false)
        let partial = try first.run(s, resumingFrom: nil, stopAfter: k)
        #expect(partial.accuracy.count == k + 1)
        let checkpoint = try #require(first.checkpoint)
        #expect(checkpoint.experiencesDone == k + 1)
        let path = dir.path("ck.h5")
        try CheckpointFile.write(checkpoint, to: path)
        let loaded = try CheckpointFile.read(path: path)
        #expect(loaded == checkpoint)

        var second = trainer(make, optimizer: optimizer, reset: false)   // a fresh process
        let resumed = try second.run(s, resumingFrom: loaded, stopAfter: nil)
        #expect(second.checkpoint == nil)
        #expect(resumed == uninterrupted)                 // R, baselines, loss curves, final model, steps
        #expect(resumed.penaltyCurve == uninterrupted.penaltyCurve)
        #expect(resumed.samplesProcessed == uninterrupted.samplesProcessed)
        #expect(resumed.finalModel.parameters == uninterrupted.finalModel.parameters)
        #expect(second.optimizer == full.optimizer)
        // What the plugin reports (buffer contents, routing accuracy, accounting) is identical too.
        #expect(Self.bitIdentical(resumed.pluginReports.map(\.report), uninterrupted.pluginReports.map(\.report)))
    }

    /// Reports equal value for value, NaN included (routing accuracy is NaN until evaluated).
    static func bitIdentical(_ a: [PluginReport], _ b: [PluginReport]) -> Bool {
        func key(_ r: PluginReport) -> [String] {
            r.attributes.sorted { $0.key < $1.key }.map { k, v in
                if case .double(let d) = v { return "\(k)=\(d.bitPattern)" }
                return "\(k)=\(v)"
            } + r.arrays.sorted { $0.key < $1.key }.map { k, v in
                "\(k)=\(v.shape)\(v.values.map(\.bitPattern))\(v.attributes.sorted { $0.key < $1.key }.map { "\($0)" })"
            }
        }
        return a.map(key) == b.map(key)
    }

    // (A plugin without a checkpoint hook no longer compiles: `checkpointState()` is a
    // requirement of `StrategyPlugin`, and the conformance suite checks its round trip.)
    @Test func runningToTheEndLeavesNoCheckpoint() throws {
        var u = Trainer(spec: Self.spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: 1),
                        plugins: [], seed: 1)
        _ = try u.run(try stream(), resumingFrom: nil, stopAfter: nil)
        #expect(u.checkpoint == nil)
    }

    func savedCheckpoint(_ dir: TemporaryDirectory) throws -> (String, TrainerCheckpoint) {
        var t = trainer({ Naive() }, optimizer: .sgd(learningRate: 0.05, momentum: 0.9), reset: true)
        _ = try t.run(try stream(), resumingFrom: nil, stopAfter: 1)
        let cp = try #require(t.checkpoint)
        let path = dir.path("ck.h5")
        try CheckpointFile.write(cp, to: path)
        return (path, cp)
    }

    @Test func corruptedPayloadIsRejectedByTheChecksum() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let (path, _) = try savedCheckpoint(dir)
        var data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        // Find the payload by its magic bytes and flip one bit of a parameter after it.
        let magic = TrainerCheckpoint.magic
        let at = try #require((0...(data.count - magic.count)).first { Array(data[$0..<($0 + magic.count)]) == magic })
        data[at + 60] ^= 0x10
        try Data(data).write(to: URL(fileURLWithPath: path))
        do {
            _ = try CheckpointFile.read(path: path)
            Issue.record("a corrupted checkpoint was accepted")
        } catch let error as CheckpointError {
            // The payload is sealed with SHA-256 (16-digit FNV-1a only in older checkpoints).
            #expect(error.description.contains("corrupt") && error.description.contains("SHA-256"), "\(error)")
        }
    }

    /// Issue 41.5: a checkpoint sealed with a 16-digit FNV-1a checksum — an old file, or a forgery
    /// whose editor recomputed it — is refused, although the checksum matches its payload.
    @Test func fnvSealedCheckpointsAreRefusedEvenWhenTheChecksumMatches() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let (path, _) = try savedCheckpoint(dir)
        do {
            let file = try HDF5File.open(path: path, mode: .readWrite)
            let payload = try file.root.openDataset("payload").read(as: UInt8.self)
            try file.root.attributes.set("checksum", StableHash.hex(StableHash.fnv1a64(bytes: payload)))
        }
        #expect {
            _ = try CheckpointFile.read(path: path)
        } throws: { error in
            "\(error)".contains("FNV-1a") && "\(error)".contains("not read")
        }
    }

    /// With `CONTINUALKIT_RESULTS_KEY_FILE`, a checkpoint is sealed with HMAC-SHA256: a forgery
    /// whose editor recomputed the SHA-256 checksum resumes without the key and is refused with it.
    @Test func aKeyedSealCatchesAForgedCheckpointWithARecomputedChecksum() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let key = dir.path("k.key")
        #expect(FileManager.default.createFile(atPath: key, contents: Data((0..<32).map { UInt8($0) })))
        let keyed = [ResultsKey.variable: key]
        let exp = dir.write("e.json", tinyExperiment(name: "ck"))
        let ck = dir.path("ck.h5")
        let stop = try runCLI(["run", exp, "--variant", "naive", "--stop-after", "1", "--checkpoint", ck], environment: keyed)
        #expect(stop.status == 0, "\(stop.stderr)")
        #expect(try runCLI(["run", exp, "--variant", "naive", "--resume-from", ck, "-o", dir.path("a.h5")], environment: keyed).status == 0)
        // The forgery: one payload byte changed, the SHA-256 checksum recomputed.
        do {
            let file = try HDF5File.open(path: ck, mode: .readWrite)
            var payload = try file.root.openDataset("payload").read(as: UInt8.self)
            payload[payload.count - 5] ^= 0x01
            try file.root.delete("payload")
            _ = try file.root.write(payload, shape: [payload.count], name: "payload", compress: false)
            try file.root.attributes.set("checksum", SHA256.hex(SHA256.hash(payload)))
        }
        let refused = try runCLI(["run", exp, "--variant", "naive", "--resume-from", ck, "-o", dir.path("b.h5")], environment: keyed)
        #expect(refused.status == 2 && refused.stderr.contains("seal does not match"), "\(refused.status) \(refused.stderr)")
        let unkeyed = try runCLI(["export", ck, "--format", "onnx", "-o", dir.path("m.onnx")])
        #expect(!unkeyed.stderr.contains("seal"), "without a key the seal is not checked: \(unkeyed.stderr)")
    }

    @Test func truncatedFileIsRejectedWithAClearMessage() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let (path, _) = try savedCheckpoint(dir)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try CheckpointFile.read(path: path)
        } throws: { error in
            (error as? CheckpointError)?.description.contains("truncated") == true
        }
    }

    @Test func truncatedOrDamagedBytesNeverCrashTheDecoder() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let (_, cp) = try savedCheckpoint(dir)
        let bytes = cp.encoded()
        #expect(try TrainerCheckpoint(decoding: bytes) == cp)
        for cut in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 97)) {
            #expect(throws: CheckpointError.self) { _ = try TrainerCheckpoint(decoding: Array(bytes.prefix(cut))) }
        }
        var wrongVersion = bytes
        wrongVersion[TrainerCheckpoint.magic.count] = 7
        #expect(throws: CheckpointError.wrongVersion(found: 7, expected: TrainerCheckpoint.version)) { _ = try TrainerCheckpoint(decoding: wrongVersion) }
        // A huge length field (the parameter count, after version, seed and experience count)
        // must not allocate or crash.
        var hugeLength = bytes
        for k in 0..<8 { hugeLength[TrainerCheckpoint.magic.count + 24 + k] = 0x7f }
        #expect(throws: CheckpointError.self) { _ = try TrainerCheckpoint(decoding: hugeLength) }
    }

    @Test("extra gradient steps in a checkpoint's progress are appended and read back; without them the bytes are as before")
    func extraGradientStepsRoundTrip() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let (_, cp) = try savedCheckpoint(dir)
        #expect(cp.progress.extraSteps.isEmpty && !cp.progress.steps.isEmpty)
        let plain = cp.encoded()
        var with = cp
        with.progress.extraSteps = cp.progress.steps.map { 3 * $0 + 1 }
        let bytes = with.encoded()
        #expect(bytes.count == plain.count + 8 * (1 + cp.progress.steps.count))
        #expect(Array(bytes.prefix(plain.count)) == plain, "the tail is appended, nothing before it moves")
        #expect(try TrainerCheckpoint(decoding: bytes) == with)
        #expect(try TrainerCheckpoint(decoding: plain).progress.extraSteps.isEmpty)
        for cut in plain.count + 1..<bytes.count {
            #expect(throws: CheckpointError.self) { _ = try TrainerCheckpoint(decoding: Array(bytes.prefix(cut))) }
        }
    }

    @Test func resumingTheWrongRunIsRefused() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let (_, cp) = try savedCheckpoint(dir)
        var other = Trainer(spec: Self.spec, optimizer: .sgd(learningRate: 0.05, momentum: 0.9),
                            options: TrainingOptions(epochs: 3, batchSize: 16), plugins: [Naive()], seed: 12)
        #expect(throws: CheckpointError.self) { _ = try other.run(try stream(), resumingFrom: cp, stopAfter: nil) }
        var joint = Trainer(spec: Self.spec, optimizer: .sgd(learningRate: 0.05, momentum: 0.9),
                            options: TrainingOptions(epochs: 3, batchSize: 16), plugins: [Joint()], seed: 11)
        #expect(throws: CheckpointError.self) { _ = try joint.run(try stream(), resumingFrom: cp, stopAfter: nil) }
    }
}

/// The CLI path: `run --stop-after K --checkpoint`, then `run --resume-from`, equals one run.
@Suite struct CheckpointCLITests {
    @Test func stopAndResumeThroughTheCLIEqualsAnUninterruptedRun() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let json = tinyExperiment().replacingOccurrences(
            of: "{\"name\": \"joint\", \"strategy\": [\"joint\"]}",
            with: "{\"name\": \"replay\", \"strategy\": [{\"type\": \"replay\", \"capacity\": 40}, {\"type\": \"ewc\", \"lambda\": 10}]}")
        let exp = dir.write("e.json", json)
        let ck = dir.path("ck.h5")
        let stop = try runCLI(["run", exp, "--variant", "replay", "--stop-after", "0", "--checkpoint", ck])
        #expect(stop.status == 0, "\(stop.stderr)")
        #expect(stop.stdout.contains("stopped after experience 0 of 3"))
        let resumed = try runCLI(["run", exp, "--variant", "replay", "--resume-from", ck, "-q", "-o", dir.path("r.h5")])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let full = try runCLI(["run", exp, "--variant", "replay", "-q", "-o", dir.path("f.h5")])
        #expect(full.status == 0)
        let a = try ResultsReader.read(path: dir.path("r.h5")), b = try ResultsReader.read(path: dir.path("f.h5"))
        #expect(a.runs.map(\.runId) == b.runs.map(\.runId))
        #expect(a.runs[0].accuracy == b.runs[0].accuracy)
        #expect(a.runs[0].metrics == b.runs[0].metrics)

        // Another run's checkpoint, several runs without --variant, and a missing file are bad input.
        #expect(try runCLI(["run", exp, "--variant", "naive", "--resume-from", ck]).status == 2)
        #expect(try runCLI(["run", exp, "--resume-from", ck]).status == 2)
        #expect(try runCLI(["run", exp, "--variant", "replay", "--resume-from", dir.path("nope.h5")]).status == 2)
        #expect(try runCLI(["run", exp, "--variant", "replay", "--stop-after", "1"]).status == 2)
    }
}

/// Checkpoints from the CLI for every kind of run: prequential streams, device schedules
/// (stopping after a session) and populations (every user stops), each with a stateless and a
/// stateful strategy, resume to the same results as an uninterrupted run.
@Suite struct CheckpointEveryModeCLITests {
    static let modes: [(name: String, extra: String)] = [
        ("prequential", #""training": {"epochs": 1, "batch_size": 4, "mode": "prequential", "window": 50},"#),
        ("schedule", #""schedule": {"type": "daily", "samples_per_day": 40},"#),
        ("population", #""population": {"users": 4, "spread": 1.0},"#),
    ]

    @Test(arguments: ["prequential", "schedule", "population"], ["naive", "replay_ewc"])
    func stopAndResumeEqualsAnUninterruptedRun(mode: String, strategy: String) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let extra = Self.modes.first { $0.name == mode }!.extra
        var json = tinyExperiment(extra: extra)
        if mode == "prequential" { json = json.replacingOccurrences(of: "\"training\": {\"epochs\": 3, \"batch_size\": 16},", with: "") }
        json = json.replacingOccurrences(
            of: "{\"name\": \"joint\", \"strategy\": [\"joint\"]}",
            with: "{\"name\": \"replay_ewc\", \"strategy\": [{\"type\": \"replay\", \"capacity\": 40}, {\"type\": \"ewc\", \"lambda\": 10}]}")
        let exp = dir.write("e.json", json)
        let ck = dir.path("ck.h5")
        let stop = try runCLI(["run", exp, "--variant", strategy, "--stop-after", "1", "--checkpoint", ck])
        #expect(stop.status == 0, "\(stop.stdout)\(stop.stderr)")
        #expect(stop.stdout.contains("stopped"), "\(stop.stdout)")
        let resumed = try runCLI(["run", exp, "--variant", strategy, "--resume-from", ck, "-q", "-o", dir.path("r.h5")])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let full = try runCLI(["run", exp, "--variant", strategy, "-q", "-o", dir.path("f.h5")])
        #expect(full.status == 0, "\(full.stderr)")
        let a = try ResultsReader.read(path: dir.path("r.h5")), b = try ResultsReader.read(path: dir.path("f.h5"))
        #expect(a.runs.map(\.runId) == b.runs.map(\.runId))
        #expect(a.runs.first?.accuracy == b.runs.first?.accuracy)
        #expect(a.runs.first?.metrics == b.runs.first?.metrics)
        #expect(a.runs.first?.status == "completed")
    }
}
