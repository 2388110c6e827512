// Every JSON and Swift snippet in README.md and docs/*.md is checked here, so that moving or
// editing the docs cannot leave a snippet that no longer works:
// - ```json blocks: a whole experiment file must parse and expand (`ExperimentFile.parse`, what
//   `continual validate` reads); a fragment (`"key": value, ...`) is put into a small base
//   experiment in place of that key and must parse there.
// - ```swift blocks: without their `import` lines they must appear verbatim in a Swift file of
//   this package (Sources/ or Tests/), which the build compiles; the checkpoint example's twin is
//   below and runs. Package manifests (`.package(url:`) must name this package's products.
//   Abbreviated code is fenced as ```swift excerpt and is not checked.
import ContinualCore
import ContinualScenarios
import ContinualStrategies
import ContinualExperiments
import ContinualMetrics
import Foundation
import Testing

/// Fine-tuning and EWC on a three-phase habit-drift stream: final accuracy (ACC) and backward transfer (BWT).
func compareNaiveAndEWC() throws -> [(name: String, acc: Double, bwt: Double)] {
    let stream = try HabitDriftScenario(trainPerExperience: 1000, testPerExperience: 200,
                                        phases: ["morning", "night", "morning"].map { HabitPhase.presets[$0]! })
        .makeStream(seed: 1)
    let strategies: [(String, [any StrategyPlugin])] = [("naive", [Naive()]), ("ewc", [EWC(options: EWC.Options(lambda: 1000))])]
    var rows: [(name: String, acc: Double, bwt: Double)] = []
    for (name, plugins) in strategies {
        var trainer = Trainer(spec: MLPSpec(inputs: 10, hidden: [16, 8]), optimizer: .adam(learningRate: 0.005),
                              options: TrainingOptions(epochs: 5), plugins: plugins, seed: 1)
        let outcome = try trainer.run(stream)
        let r = AccuracyMatrix(outcome.accuracy)      // r[i][j]: accuracy on experience j after training i
        rows.append((name, r.acc, r.bwt))
    }
    return rows
}

/// Trains experiences 0...k, saves a checkpoint file, then finishes the stream in a fresh Trainer.
func trainWithACheckpoint(stopAfter k: Int, checkpointPath: String) throws -> TrainingOutcome {
    let stream = try HabitDriftScenario(trainPerExperience: 500, testPerExperience: 100,
                                        phases: ["morning", "night", "morning"].map { HabitPhase.presets[$0]! })
        .makeStream(seed: 1)
    func makeTrainer() -> Trainer {
        Trainer(spec: MLPSpec(inputs: 10, hidden: [16, 8]), optimizer: .sgd(learningRate: 0.05, momentum: 0.9),
                options: TrainingOptions(epochs: 5), plugins: [EWC(options: EWC.Options(lambda: 10))], seed: 1)
    }
    var trainer = makeTrainer()
    _ = try trainer.run(stream, resumingFrom: nil, stopAfter: k)      // trains 0...k, then stops
    try CheckpointFile.write(trainer.checkpoint!, configJSON: "my-config-v1", to: checkpointPath)
    // Later, in a new process, with the same configuration:
    var again = makeTrainer()
    return try again.run(stream, resumingFrom: try CheckpointFile.read(path: checkpointPath), stopAfter: nil)
}

struct DocSnippet: CustomStringConvertible {
    var file: String
    var line: Int
    var language: String
    var text: String
    var description: String { "\(file):\(line) (\(language))" }
}

enum DocSnippets {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// README.md and every docs/*.md, relative to the package root.
    static func documents() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return ["README.md"] + docs
    }

    /// Fenced blocks of the documents, with the fence's info string as `language`.
    static func all() throws -> [DocSnippet] {
        var out: [DocSnippet] = []
        for name in try documents() {
            let text = try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)
            var open: (language: String, line: Int, lines: [String])?
            for (i, line) in text.components(separatedBy: "\n").enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if var block = open {
                    if trimmed == "```" {
                        out.append(DocSnippet(file: name, line: block.line, language: block.language,
                                              text: block.lines.joined(separator: "\n") + "\n"))
                        open = nil
                    } else {
                        block.lines.append(line)
                        open = block
                    }
                } else if trimmed.hasPrefix("```") {
                    open = (String(trimmed.dropFirst(3)), i + 1, [])
                }
            }
            #expect(open == nil, "\(name): a code block is never closed")
        }
        return out
    }

    /// A small experiment a fragment is put into.
    static var base: [String: Any] { [
        "name": "snippet",
        "scenario": ["type": "habit_drift", "train_per_experience": 60, "test_per_experience": 20] as [String: Any],
        "model": ["hidden": [8, 4]],
        "training": ["epochs": 1],
    ] }

    /// Parses a snippet as an experiment (whole, or a fragment in `base`); throws what `validate` would say.
    static func experiment(_ snippet: DocSnippet) throws -> ExperimentFile {
        let data = Data(snippet.text.utf8)
        if let whole = try? JSONSerialization.jsonObject(with: data) as? [String: Any], whole["scenario"] != nil {
            return try ExperimentFile.parse(data: data, path: snippet.description)
        }
        let wrapped = Data(("{" + snippet.text + "}").utf8)
        guard let fragment = try JSONSerialization.jsonObject(with: wrapped) as? [String: Any] else {
            throw ConfigError(file: snippet.description, location: "", message: "neither an experiment nor a fragment")
        }
        var merged = base
        for (k, v) in fragment { merged[k] = v }
        let json = try JSONSerialization.data(withJSONObject: merged, options: [.sortedKeys])
        return try ExperimentFile.parse(data: json, path: snippet.description)
    }
}

@Suite struct DocSnippetTests {
    @Test func everyJSONSnippetIsAValidExperimentOrFragment() throws {
        let snippets = try DocSnippets.all().filter { $0.language == "json" }
        #expect(snippets.count >= 20, "found only \(snippets.count) JSON snippets")
        for s in snippets {
            do {
                let file = try DocSnippets.experiment(s)
                #expect(!file.runs.isEmpty, "\(s): no runs")
            } catch {
                Issue.record("\(s): \(error)")
            }
        }
    }

    @Test func everySwiftSnippetIsCompiledCode() throws {
        let snippets = try DocSnippets.all().filter { $0.language == "swift" }
        #expect(snippets.count >= 2)
        var compiled = ""
        for folder in ["Sources", "Tests"] {
            let dir = DocSnippets.root.appendingPathComponent(folder)
            let walker = FileManager.default.enumerator(atPath: dir.path)
            while let p = walker?.nextObject() as? String {
                guard p.hasSuffix(".swift") else { continue }
                compiled += (try String(contentsOf: dir.appendingPathComponent(p), encoding: .utf8)) + "\n"
            }
        }
        let products = ["ContinualCore", "ContinualStrategies", "ContinualScenarios", "ContinualMetrics",
                        "ContinualHDF5", "ContinualExperiments", "ContinualOnDevice"]
        for s in snippets {
            if s.text.contains(".package(url:") {
                let named = products.filter { s.text.contains("\"\($0)\"") }
                #expect(!named.isEmpty, "\(s): a manifest that names none of the products")
                continue
            }
            let body = s.text.components(separatedBy: "\n").filter { !$0.hasPrefix("import ") }.joined(separator: "\n")
                .trimmingCharacters(in: .newlines)
            #expect(compiled.contains(body), "\(s): not found verbatim in Sources/ or Tests/ (keep the compiled twin identical)")
        }
    }

    @Test func blocksAreLabelled() throws {
        // An unlabelled block could hide JSON or Swift from the checks above.
        let allowed: Set<String> = ["json", "swift", "swift excerpt", "sh", "text", "python", "csv", "yaml", "bash"]
        for s in try DocSnippets.all() {
            #expect(allowed.contains(s.language), "\(s): label the block (one of \(allowed.sorted()))")
        }
    }

    @Test func librarySnippetRunsAndEWCForgetsLess() throws {
        let rows = try compareNaiveAndEWC()
        #expect(rows.map(\.name) == ["naive", "ewc"])
        #expect(rows.allSatisfy { $0.acc > 0.3 && $0.acc <= 1 })
        #expect(rows[1].bwt > rows[0].bwt)
    }

    @Test func checkpointSnippetResumesBitIdentically() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let resumed = try trainWithACheckpoint(stopAfter: 0, checkpointPath: dir.path("learner.ckpt.h5"))
        let stream = try HabitDriftScenario(trainPerExperience: 500, testPerExperience: 100,
                                            phases: ["morning", "night", "morning"].map { HabitPhase.presets[$0]! })
            .makeStream(seed: 1)
        var whole = Trainer(spec: MLPSpec(inputs: 10, hidden: [16, 8]), optimizer: .sgd(learningRate: 0.05, momentum: 0.9),
                            options: TrainingOptions(epochs: 5), plugins: [EWC(options: EWC.Options(lambda: 10))], seed: 1)
        #expect(try whole.run(stream) == resumed)
    }
}
