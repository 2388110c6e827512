import ContinualCore
import ContinualHDF5
import ContinualScenarios
import Foundation
import Testing
@testable import ContinualExperiments

/// Hyperparameter selection on validation data (`"tune"`, issue 40 item 3): the validation split
/// is carved from training data only, the choice never depends on a test set, and the results
/// file records the grid, the scores, the choice and the compute.
@Suite("Tuning on a validation split")
struct TuningTests {
    func stream() throws -> ExperienceStream {
        var o = SplitDigitsScenario(setting: .class)
        o.path = digitsPath
        return try o.makeStream(seed: 0)
    }

    @Test("the split is stratified, disjoint, drawn from training data only, and reproducible")
    func carve() throws {
        let s = try stream()
        let split = ValidationSplit(fraction: 0.25, experiences: 2, seed: 3)
        let v = try split.apply(to: s), again = try split.apply(to: s)
        #expect(v == again && v.experiences.count == 2)
        for (orig, cut) in zip(s.experiences, v.experiences) {
            #expect(cut.train.count + cut.test.count == orig.train.count)
            // Every validation row is a training row of the original experience.
            let trainRows = Set((0..<orig.train.count).map { Array(orig.train.row($0)) })
            for i in 0..<cut.test.count {
                let row = Array(cut.test.row(i))
                #expect(trainRows.contains(row))
            }
            // Stratified: each label keeps round(fraction · n) of its n samples in validation.
            for label in Set(orig.train.labels) {
                let n = orig.train.labels.filter { $0 == label }.count
                let held = cut.test.labels.filter { $0 == label }.count
                #expect(held == Int((0.25 * Double(n)).rounded()))
            }
        }
        #expect(try ValidationSplit(fraction: 0.25, seed: 4).apply(to: s) != ValidationSplit(fraction: 0.25, seed: 3).apply(to: s))
        #expect(throws: ScenarioError.self) { try ValidationSplit(experiences: 6).apply(to: s) }
    }

    func experiment(path: String, grid: String = "[0.0001, 0.01]") -> String {
        """
        {"name": "tune_test", "seed": 1,
         "scenario": {"type": "split_digits", "path": "\(path)", "setting": "class"},
         "model": {"hidden": [16]}, "optimizer": {"type": "adam", "lr": 0.001},
         "training": {"steps_per_experience": 6, "batch_size": 32},
         "tune": {"parameters": {"optimizer.lr": \(grid)}, "validation_fraction": 0.2, "experiences": 2, "seeds": [7, 8]},
         "variants": [
           {"name": "naive", "strategy": ["naive"]},
           {"name": "ewc", "strategy": [{"type": "ewc", "lambda": 10}], "tune": {"parameters": {"strategy[0].lambda": [1, 100]}}},
           {"name": "paper", "strategy": ["naive"], "tune": null}
         ],
         "sweep": {"parameters": {"seed": [1, 2]}}}
        """
    }

    func tune(_ text: String, path: String) async throws -> (ExperimentFile, [TuningRecord]) {
        let file = try ExperimentFile.parse(data: Data(text.utf8), path: path)
        let records = try await Tuner.tune(file, jobs: 2)
        let tuned = try ExperimentFile.parse(data: Data(text.utf8), path: path, chosen: try Tuner.choices(records, file: path))
        return (tuned, records)
    }

    @Test("grids merge per variant; null turns tuning off; chosen values reach every sweep point")
    func expansion() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.path("e.json")
        let file = try ExperimentFile.parse(data: Data(experiment(path: digitsPath).utf8), path: exp)
        #expect(file.tuneTargets.map(\.variant) == ["naive", "ewc"])
        #expect(file.tuneTargets[1].spec.grid.parameters.map(\.path.text).sorted() == ["optimizer.lr", "strategy[0].lambda"])
        let trials = try Tuner.trials(file)
        #expect(trials.count == (2 + 4) * 2)
        #expect(trials.allSatisfy { $0.run.config.validationSplit == ValidationSplit(fraction: 0.2, experiences: 2, seed: 0) })
        #expect(Set(trials.map(\.run.config.seed)) == [7, 8])
        let (tuned, records) = try await tune(experiment(path: digitsPath), path: exp)
        for r in records {
            let chosen = try #require(r.chosen)
            #expect(chosen == TuningRecord.best(r.meanScores))
            #expect(r.meanScores.allSatisfy { $0.isFinite && $0 <= r.meanScores[chosen] })
            #expect(r.totalFLOPs > 0)
            for run in tuned.runs where run.variant == r.variant {
                #expect(run.config.validationSplit == nil)
                #expect(run.config.optimizer.learningRate == Float(r.points[chosen][r.parameters.firstIndex(of: "optimizer.lr")!].numberValue!))
            }
        }
        #expect(tuned.runs.filter { $0.variant == "paper" }.allSatisfy { $0.config.optimizer.learningRate == 0.001 })
    }

    @Test("a poisoned test set changes neither the scores nor the choice")
    func poisonedTestSet() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let bad = try poisonedDigits(in: dir)
        let (_, clean) = try await tune(experiment(path: digitsPath), path: dir.path("a.json"))
        let (_, dirty) = try await tune(experiment(path: bad), path: dir.path("b.json"))
        #expect(clean.map(\.chosen) == dirty.map(\.chosen))
        for (a, b) in zip(clean, dirty) {
            #expect(a.scores.flatMap { $0 }.map(\.bitPattern) == b.scores.flatMap { $0 }.map(\.bitPattern))
        }
    }

    @Test("bad blocks name their key path")
    func errors() throws {
        func message(_ tune: String) -> String {
            let text = """
            {"name": "t", "scenario": {"type": "split_digits", "path": "\(digitsPath)"}, "tune": \(tune),
             "sweep": {"parameters": {"seed": [1, 2]}}}
            """
            do { _ = try ExperimentFile.parse(data: Data(text.utf8), path: "x.json"); return "" } catch { return "\(error)" }
        }
        #expect(message(#"{"parameters": {"seed": [1, 2]}}"#).contains("selection seeds go in \"seeds\""))
        #expect(message(#"{"paramters": {}}"#).contains(".tune.paramters"))
        #expect(message(#"{"parameters": {"optimizer.lr": [0.1]}, "validation_fraction": 1.5}"#).contains(".tune.validation_fraction"))
        #expect(message(#"{"parameters": {"optimizer.lr": [0.1]}, "seeds": [1, 1]}"#).contains("twice"))
    }

    @Test("the results file stores the grid, scores, choice and FLOPs under /tuning")
    func stored() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("e.json", experiment(path: digitsPath))
        let out = dir.path("r.h5")
        let v = try runCLI(["validate", exp])
        #expect(v.status == 0 && v.stdout.contains("tuning: 2 variant(s), 12 selection runs"), "\(v.stdout)")
        let r = try runCLI(["sweep", exp, "-o", out, "--jobs", "2"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("tuning 2 variant(s): 12 selection runs"))
        let file = try HDF5File.open(path: out)
        defer { try? file.close() }
        let g = try file.root.openGroup("tuning").openGroup("ewc")
        let scores = try g.openDataset("scores").read(as: Double.self)
        #expect(scores.count == 8 && scores.allSatisfy(\.isFinite))
        let record = try #require(try g.attributes.string("record_json"))
        #expect(record.contains("\"chosen\"") && record.contains("total_training_flops"))
    }
}

/// The digits archive with every test set corrupted (labels shifted by 3, pixels inverted),
/// written into `dir`: a selection that reads a test sample scores differently on it.
func poisonedDigits(in dir: TemporaryDirectory) throws -> String {
    var poisoned = try ScenarioArchive.read(path: digitsPath)
    for i in poisoned.experiences.indices {
        var t = poisoned.experiences[i].test
        t.labels = t.labels.map { ($0 + 3) % 10 }
        t.features = t.features.map { 1 - $0 }
        poisoned.experiences[i].test = t
    }
    let path = dir.path("poisoned.h5")
    try ScenarioArchive.write(poisoned, to: path)
    return path
}
