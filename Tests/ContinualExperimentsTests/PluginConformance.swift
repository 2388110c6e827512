import ContinualCore
import ContinualExperiments
import ContinualScenarios
import ContinualStrategies
import Foundation

/// The checks every strategy plugin must pass. Each returns the problems it found (empty =
/// conforms), so the suite can run them over every registered plugin and also show them failing
/// on deliberately broken plugins. A new method registered in `Registry.strategies` gets all of
/// them without writing a test.
enum PluginConformance {
    /// Options a type needs beyond `{"type": name}` to run on the suite's small model, if any.
    static let exampleOptions: [String: String] = [:]

    static let training = TrainingOptions(epochs: 2, batchSize: 16)

    /// The two streams every check runs on: binary habit drift (domain-incremental) and a
    /// 4-class class-incremental stream of Gaussian blobs ({0, 1}, {2}, {3}). A plugin may refuse
    /// a head it is not made for (`TrainingError.invalid` from `prepare`: iCaRL refuses binary
    /// heads); the check then skips that stream, but every plugin must accept at least one.
    static func streams() throws -> [ExperienceStream] {
        let habit = try HabitDriftScenario(trainPerExperience: 96, testPerExperience: 32,
                                           phases: ["morning", "night", "weekend_only"].map { HabitPhase.presets[$0]! })
            .makeStream(seed: 7)
        var rng = RandomSource(seed: 19)
        var centres: [[Float]] = []
        for _ in 0..<4 { centres.append((0..<10).map { _ in Float(rng.normal() * 1.5) }) }
        func samples(_ classes: [Int32], _ n: Int) -> Samples {
            var s = Samples(dimension: 10)
            for i in 0..<n {
                let y = classes[i % classes.count]
                s.features += centres[Int(y)].map { $0 + Float(rng.normal()) }
                s.labels.append(y)
            }
            return s
        }
        let parts: [[Int32]] = [[0, 1], [2], [3]]
        let experiences = parts.enumerated().map { i, c in
            Experience(index: i, name: "classes_" + c.map(String.init).joined(), train: samples(c, 96), test: samples(c, 32))
        }
        let blobs = ExperienceStream(name: "blobs", featureNames: (0..<10).map { "f\($0)" }, head: .multiclass(classes: 4),
                                     experiences: experiences)
        return [habit, blobs]
    }

    /// Runs `body` on every stream the plugins accept; nil when they accept none.
    static func onEachStream(_ make: () -> [any StrategyPlugin], _ body: (ExperienceStream) throws -> Void) throws -> Int {
        var accepted = 0
        for stream in try streams() {
            var probe = trainer(make, mode: .batch, stream: stream)
            do {
                _ = try probe.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: 0)
            } catch let error as TrainingError where error.isConfigurationProblem {
                continue
            }
            accepted += 1
            try body(stream)
        }
        return accepted
    }

    /// The strategy JSON of a registered type with its example options.
    static func json(_ type: any PluginOptions.Type, extra: String = "") -> String {
        var fields = ["\"type\": \"\(type.typeName)\""]
        if let e = exampleOptions[type.typeName] { fields.append(e) }
        if !extra.isEmpty { fields.append(extra) }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    /// Parses an experiment around one strategy entry; returns the run or the error text. Task
    /// identity is allowed: the suite checks mechanics, on any method.
    static func parse(strategy: String) -> Result<ResolvedRun, Error> {
        let text = """
        {"name": "conformance", "seed": 3, "allow_task_labels": true,
         "scenario": {"type": "habit_drift", "train_per_experience": 96, "test_per_experience": 32,
                      "phases": ["morning", "night", "weekend_only"]},
         "model": {"hidden": [8]}, "optimizer": {"type": "sgd", "lr": 0.05},
         "training": {"epochs": 2, "batch_size": 16}, "strategy": [\(strategy)]}
        """
        return Result { try ExperimentFile.parse(data: Data(text.utf8)).runs[0] }
    }

    /// A source of work the suite runs every check under.
    enum Mode: String, CaseIterable { case batch, prequential, sessions }

    static func trainer(_ make: () -> [any StrategyPlugin], mode: Mode, stream: ExperienceStream) -> Trainer {
        let observers: [any LoopObserver] = mode == .prequential ? [PrequentialProbe(window: 20, dimension: stream.dimension)] : []
        let spec = MLPSpec(inputs: stream.dimension, hidden: [8], head: stream.head)
        return Trainer(spec: spec, optimizer: .adam(learningRate: 0.01), options: training, plugins: make(),
                       observers: observers, seed: 11)
    }

    static func run(_ trainer: inout Trainer, mode: Mode, stream: ExperienceStream, resume: TrainerCheckpoint? = nil,
                    stopAfter: Int? = nil) throws -> TrainingOutcome {
        switch mode {
        case .batch: return try trainer.run(stream, source: EpochSource(), resumingFrom: resume, stopAfter: stopAfter)
        case .prequential: return try trainer.run(stream, source: StreamSource(), resumingFrom: resume, stopAfter: stopAfter)
        case .sessions:
            // Sessions of 48 training rows each, cut across the phases (as a daily schedule does).
            var sessions: [Experience] = []
            var all = Samples(dimension: stream.dimension)
            for e in stream.experiences { all.append(e.train) }
            var start = 0
            while start < all.count {
                let rows = Array(start..<min(start + 48, all.count))
                let s = all.subset(rows)
                sessions.append(Experience(index: sessions.count, name: "session_\(sessions.count)", train: s, test: s))
                start += 48
            }
            return try trainer.run(stream, source: SessionSource(sessions: sessions), resumingFrom: resume, stopAfter: stopAfter)
        }
    }

    /// Everything about an outcome that must be bit-identical (wall times excluded).
    static func fingerprint(_ o: TrainingOutcome, _ t: Trainer) -> String {
        func bits(_ v: [Double]) -> [UInt64] { v.map(\.bitPattern) }
        var s = "\(o.accuracy.map(bits))|\(bits(o.initialAccuracy))|\(bits(o.randomAccuracy))|\(o.lossCurve.map(bits))"
        s += "|\(o.penaltyCurve.map(bits))|\(o.steps)|\(o.samplesProcessed)|\(o.trainSetSizes)|\(o.extraFLOPsDescription)"
        s += "|\(o.finalModel.parameters.map(\.bitPattern))|\(t.optimizer.first.map(\.bitPattern))"
        for (name, r) in o.pluginReports {
            s += "|\(name):" + r.attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            s += r.arrays.sorted { $0.key < $1.key }.map { "\($0.key)=\(bits($0.value.values))" }.joined(separator: ",")
        }
        for o in t.observers {
            let state = o.checkpointState()
            s += "|\(o.name):" + state.doubles.sorted { $0.key < $1.key }.map { "\($0.key)=\(bits($0.value))" }.joined(separator: ",")
            s += state.ints.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        }
        return s
    }

    // MARK: The checks

    /// Stop after every experience k, encode the checkpoint, decode it, resume in a fresh trainer:
    /// the result equals the uninterrupted run, for every work source.
    static func checkpointRoundTrip(_ make: () -> [any StrategyPlugin]) -> [String] {
        var problems: [String] = []
        do {
            let accepted = try onEachStream(make) { stream in
            for mode in Mode.allCases {
                var whole = trainer(make, mode: mode, stream: stream)
                let expected = fingerprint(try run(&whole, mode: mode, stream: stream), whole)
                let T = mode == .sessions ? 6 : stream.experiences.count
                for k in 0..<(T - 1) {
                    var first = trainer(make, mode: mode, stream: stream)
                    _ = try run(&first, mode: mode, stream: stream, stopAfter: k)
                    guard let cp = first.checkpoint else { problems.append("\(mode): no checkpoint after \(k)"); continue }
                    let bytes = cp.encoded()
                    let decoded = try TrainerCheckpoint(decoding: bytes)
                    if decoded.encoded() != bytes { problems.append("\(mode): checkpoint after \(k) does not survive encoding") }
                    var second = trainer(make, mode: mode, stream: stream)
                    let resumed = fingerprint(try run(&second, mode: mode, stream: stream, resume: decoded), second)
                    if resumed != expected { problems.append("\(stream.name) \(mode): resuming after experience \(k) is not bit-identical") }
                }
            }
            }
            if accepted == 0 { problems.append("the plugin refuses every stream of the suite") }
        } catch {
            problems.append("training failed: \(error)")
        }
        return problems
    }

    /// Two runs with the same seed give the same bits.
    static func deterministic(_ make: () -> [any StrategyPlugin]) -> [String] {
        do {
            var problems: [String] = []
            _ = try onEachStream(make) { stream in
                var a = trainer(make, mode: .batch, stream: stream), b = trainer(make, mode: .batch, stream: stream)
                let fa = fingerprint(try run(&a, mode: .batch, stream: stream), a)
                let fb = fingerprint(try run(&b, mode: .batch, stream: stream), b)
                if fa != fb && problems.isEmpty { problems.append("two runs with the same seed differ") }
            }
            return problems
        } catch {
            return ["training failed: \(error)"]
        }
    }

    /// What a plugin keeps (its checkpoint state, which must hold everything it carries) is
    /// covered by the bytes it reports: stored samples + other state, allowing storage at a
    /// quarter of float32 size (int8 buffers) and 1 KiB of counters and generator states.
    /// A plugin declaring itself stateless keeps nothing and reports nothing.
    static func resourcesCoverState(_ make: () -> [any StrategyPlugin]) -> [String] {
        var problems: [String] = []
        do {
            _ = try onEachStream(make) { stream in
            for k in 0..<stream.experiences.count {
                var t = trainer(make, mode: .batch, stream: stream)
                _ = try t.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: k)
                for p in t.plugins {
                    let state = p.checkpointState().byteCount
                    let r = p.resources
                    let reported = r.storedSampleBytes + r.stateBytes
                    if state > 4 * reported + 1024 {
                        problems.append("\(p.name) keeps \(state) bytes of state after experience \(k) but reports \(reported) (stored samples \(r.storedSampleBytes), state \(r.stateBytes))")
                    }
                    if p is any StatelessPlugin && (state > 0 || r != .none) {
                        problems.append("\(p.name) declares itself stateless but keeps \(state) bytes / reports \(r)")
                    }
                    if r.storedSampleBytes < 0 || r.stateBytes < 0 || r.extraRowsPerBatch < 0 || r.extraFLOPsPerStep < 0
                        || r.extraFLOPsPerExperience < 0 {
                        problems.append("\(p.name) reports negative resources \(r)")
                    }
                }
            }
            }
        } catch {
            problems.append("training failed: \(error)")
        }
        return problems
    }

    /// With its strength set to 0 the method is bit-identical to naive fine-tuning.
    static func zeroStrengthIsNaive(_ type: any PluginOptions.Type) -> [String] {
        guard let key = type.strengthKey else { return [] }
        switch parse(strategy: json(type, extra: "\"\(key)\": 0")) {
        case .failure(let e): return ["\(key) = 0 is refused: \(e)"]
        case .success(let run):
            do {
                var problems: [String] = []
                let make = { run.config.strategy.map { $0.options.makePlugin() } }
                _ = try onEachStream(make) { stream in
                    var a = trainer(make, mode: .batch, stream: stream)
                    var n = trainer({ [] }, mode: .batch, stream: stream)
                    let oa = try a.run(stream), on = try n.run(stream)
                    if !(oa.finalModel.parameters == on.finalModel.parameters && oa.accuracy == on.accuracy) {
                        problems.append("\(stream.name): \(key) = 0 is not bit-identical to naive")
                    }
                }
                return problems
            } catch {
                return ["training failed: \(error)"]
            }
        }
    }

    /// The options decode from JSON, encode and decode to the same value; an unknown key is
    /// refused with its key path.
    static func optionsJSON(_ type: any PluginOptions.Type) -> [String] {
        var problems: [String] = []
        switch parse(strategy: json(type)) {
        case .failure(let e): problems.append("default options do not decode: \(e)")
        case .success(let run):
            let spec = run.config.strategy[0]
            do {
                let data = try JSONEncoder().encode(spec)
                let again = try JSONDecoder().decode(StrategySpec.self, from: data)
                if again != spec { problems.append("options change in a JSON round trip") }
            } catch {
                problems.append("options do not round-trip through JSON: \(error)")
            }
        }
        switch parse(strategy: json(type, extra: "\"bogus_option\": 1")) {
        case .success: problems.append("an unknown key is accepted")
        case .failure(let e):
            let text = "\(e)"
            if !(text.contains("strategy[0]") && text.contains("bogus_option")) {
                problems.append("the unknown-key error does not name its path: \(text)")
            }
        }
        return problems
    }
}

extension TrainingOutcome {
    var extraFLOPsDescription: String { "\(progress.extraFLOPs)" }
}
