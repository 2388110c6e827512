import ContinualCore
import ContinualHDF5
import ContinualStrategies
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 24: the training budget as a protocol knob (`training.steps_per_experience`), recorded
/// with every run, and DER/DER++ replay targets read before the batch's own rows enter the buffer.
@Suite struct TrainingBudgetTests {
    static let base = #""name": "x", "scenario": {"type": "habit_drift", "train_per_experience": 100, "test_per_experience": 40}"#

    func error(_ json: String) -> ConfigError? {
        do { _ = try ExperimentFile.parse(data: Data(json.utf8)); return nil } catch let e as ConfigError { return e } catch { return nil }
    }

    @Test("epochs and steps_per_experience together, a bad value, prequential and early stopping are refused at the key path")
    func validation() {
        let cases: [(String, String)] = [
            (#""training": {"epochs": 2, "steps_per_experience": 10}"#, "not both"),
            (#""training": {"steps_per_experience": 0}"#, "1...100000000"),
            (#""training": {"steps_per_experience": 10, "mode": "prequential"}"#, "batch"),
            (#""training": {"steps_per_experience": 10, "early_stopping": {"patience": 2}}"#, "early_stopping"),
        ]
        for (extra, words) in cases {
            let e = error(#"{\#(Self.base), \#(extra)}"#)
            #expect(e?.location == ".training.steps_per_experience", "\(extra): \(String(describing: e))")
            #expect(e?.message.contains(words) == true, "\(extra): \(String(describing: e))")
        }
        #expect(error(#"{\#(Self.base), "training": {"steps_per_experience": 10}}"#) == nil)
    }

    @Test("a steps budget gives every experience exactly that many steps, cutting the last epoch")
    func exactSteps() throws {
        // 100 training rows per experience, batch 16: 7 batches per epoch (the last of 4 rows).
        // 20 steps = 2 full epochs (14 steps, 200 rows) + 6 batches of 16 (96 rows) = 296 rows, 3 epochs.
        let file = try ExperimentFile.parse(data: Data(#"{\#(Self.base), "model": {"hidden": [8]}, "training": {"steps_per_experience": 20, "batch_size": 16}}"#.utf8))
        let r = RunExecutor.execute(file.runs[0])
        let o = try #require(r.outcome)
        #expect(o.steps.allSatisfy { $0 == 20 })
        #expect(o.samplesProcessed.allSatisfy { $0 == 296 })
        #expect(o.lossCurve.allSatisfy { $0.count == 3 })
        // The resolved config keeps the budget (and no epochs), so the run id records it.
        #expect(r.run.canonicalJSON.contains("\"steps_per_experience\":20") && !r.run.canonicalJSON.contains("\"epochs\""))
        // An epochs budget of the same run is unchanged: 2 epochs = 14 steps, 200 rows.
        let epochs = try ExperimentFile.parse(data: Data(#"{\#(Self.base), "model": {"hidden": [8]}, "training": {"epochs": 2, "batch_size": 16}}"#.utf8))
        let e = try #require(RunExecutor.execute(epochs.runs[0]).outcome)
        #expect(e.steps.allSatisfy { $0 == 14 } && e.samplesProcessed.allSatisfy { $0 == 200 })
    }

    @Test("training FLOPs per experience follow the cost model from rows, steps and the plugins' extra FLOPs")
    func flops() throws {
        let file = try ExperimentFile.parse(data: Data(#"{\#(Self.base), "model": {"hidden": [8]}, "training": {"steps_per_experience": 5, "batch_size": 10}, "strategy": [{"type": "ewc", "lambda": 10}]}"#.utf8))
        let r = RunExecutor.execute(file.runs[0])
        let o = try #require(r.outcome), c = try #require(r.costs)
        let budget = TrainingBudget(config: r.run.config.training, outcome: o, costs: c)
        // Hand count: 10 inputs → 8 → 1 (binary head), Adam.
        let perSample = c.flopsPerTrainingSample
        let perParameter = c.flopsPerOptimizerStep / c.trainableParameters
        for i in o.steps.indices {
            #expect(budget.trainingFLOPs[i] == 50 * perSample + 5 * perParameter * c.trainableParameters + o.progress.extraFLOPs[i])
        }
        #expect(o.progress.extraFLOPs.allSatisfy { $0 > 0 })  // EWC's Fisher pass is counted
        #expect(budget.kind == "steps_per_experience" && budget.value == 5 && budget.label == "5 steps/exp")
    }

    @Test("validate's estimate of a FLOPs budget is the work that budget buys, as a steps budget of the same FLOPs")
    func flopsBudgetEstimate() throws {
        // The FLOPs naive spends in 200 steps per experience, given as a FLOPs budget: the two
        // configs train the same rows, so their estimates must agree (a FLOPs budget used to be
        // estimated as one epoch: 100 rows instead of 2,000 per experience, 20× too little).
        let steps = try ExperimentFile.parse(data: Data(#"{\#(Self.base), "model": {"hidden": [8]}, "training": {"steps_per_experience": 200, "batch_size": 10}}"#.utf8))
        let r = RunExecutor.execute(steps.runs[0])
        let o = try #require(r.outcome), c = try #require(r.costs)
        let perExperience = TrainingBudget(config: r.run.config.training, outcome: o, costs: c).trainingFLOPs[0]
        let flops = try ExperimentFile.parse(data: Data(#"{\#(Self.base), "model": {"hidden": [8]}, "training": {"flops_per_experience": \#(perExperience), "batch_size": 10}}"#.utf8))
        let stream = try steps.runs[0].config.scenario.options.makeStream(seed: steps.runs[0].config.seed)
        let size = ScenarioSize.of(stream, key: ".scenario", generated: 0)
        let a = RunEstimate.of(steps.runs[0].config, size: size, cores: 1)
        let b = RunEstimate.of(flops.runs[0].config, size: size, cores: 1)
        #expect(b.work / a.work > 0.5 && b.work / a.work < 2, "steps: \(a.work), FLOPs budget: \(b.work)")
        #expect(b.flops / a.flops > 0.5 && b.flops / a.flops < 2, "steps: \(a.flops), FLOPs budget: \(b.flops)")
        #expect(b.workKey == ".training.flops_per_experience", "\(b.workKey)")
    }

    @Test("the results file records the budget, steps, epochs, samples and training FLOPs per experience")
    func resultsFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let file = try ExperimentFile.parse(data: Data(#"{\#(Self.base), "model": {"hidden": [8]}, "training": {"steps_per_experience": 9, "batch_size": 16}}"#.utf8))
        let r = RunExecutor.execute(file.runs[0])
        try ResultsWriter.writeExperiment([r], experiment: file, to: dir.path("b.h5"))
        let h5 = try HDF5File.open(path: dir.path("b.h5"), mode: .readOnly)
        defer { try? h5.close() }
        let g = try h5.root.openGroup("runs").openGroup(r.runId)
        #expect(try g.attributes.string("training_budget") == "steps_per_experience")
        #expect(try g.attributes.scalar("training_budget_value", as: Int64.self) == 9)
        let steps: [Int64] = try g.openDataset("steps").read()
        let epochs: [Int64] = try g.openDataset("epochs_run").read()
        let flops: [Int64] = try g.openDataset("training_flops").read()
        #expect(steps == [9, 9, 9, 9, 9])
        #expect(epochs == [2, 2, 2, 2, 2])  // 7 batches per epoch: 9 steps = one epoch and 2 batches of the next
        let budget = TrainingBudget(config: r.run.config.training, outcome: r.outcome!, costs: r.costs!)
        #expect(flops == budget.trainingFLOPs.map(Int64.init))
        let summary = try h5.root.openDataset("summary").readTable()
        let names = summary.columns.map(\.name)
        let row = summary.rows[0]
        #expect(row[names.firstIndex(of: "steps_per_experience")!].doubleValue == 9)
        #expect(row[names.firstIndex(of: "training_flops")!].doubleValue == Double(flops.reduce(0, +)))
        let stored = try ResultsReader.read(path: dir.path("b.h5")).runs[0]
        #expect(stored.steps == [9, 9, 9, 9, 9] && stored.budget == "9 steps/exp")
    }

    @Test("a FLOPs budget stops each experience at the first step that reaches it, for every strategy")
    func flopsBudget() throws {
        let budget = 2.0e6
        for strategy in [#""naive""#, #"{"type": "replay", "capacity": 50}"#, #"{"type": "der", "capacity": 50}"#] {
            let file = try ExperimentFile.parse(data: Data(#"{\#(Self.base), "model": {"hidden": [8]}, "training": {"flops_per_experience": \#(budget), "batch_size": 10}, "strategy": [\#(strategy)]}"#.utf8))
            let r = RunExecutor.execute(file.runs[0])
            let o = try #require(r.outcome), c = try #require(r.costs)
            let optimizerPerStep = c.flopsPerOptimizerStep  // every parameter trains (no plugin freezes any)
            for i in o.steps.indices {
                // The steps' FLOPs (these strategies have no per-experience pass, so extraFLOPs is
                // their per-step terms): at least the budget, and below it before the last step
                // (a step has at most 10 own + 32 replayed rows).
                let used = Double(o.samplesProcessed[i] * c.flopsPerTrainingSample + o.steps[i] * optimizerPerStep
                                  + o.progress.extraFLOPs[i])
                let lastStep = Double(42 * c.flopsPerTrainingSample + optimizerPerStep + o.progress.extraFLOPs[i] / max(o.steps[i], 1))
                #expect(o.steps[i] > 1)
                #expect(used >= budget && used - lastStep < budget, "\(strategy) experience \(i): \(used)")
            }
        }
        // Replay pays for its replayed rows: fewer steps than naive for the same FLOPs.
        let e = error(#"{\#(Self.base), "training": {"steps_per_experience": 5, "flops_per_experience": 1e6}}"#)
        #expect(e?.location == ".training.flops_per_experience" && e?.message.contains("one training budget") == true)
    }

    /// The issue's reproducer: a frozen model (Adam, learning rate 0) gives every replayed row the
    /// logits it was stored with, so DER's penalty (α = 1) must be exactly 0 at every step — also
    /// when the own rows evict slots drawn for replay in the same step (capacity 200 < stream).
    @Test("DER on a frozen model: penalty exactly 0 with eviction (targets read before own rows enter the buffer)")
    func derFrozen() throws {
        // Class-IL (one head) and task-IL with a head per experience: a multi-head batch mixes
        // routes, which the loop passes to the term route by route.
        let cases: [(SplitDigitsScenario.Setting, Int, OutputHead, Bool)] = [
            (.class, 1, .multiclass(classes: 10), false), (.class, 1, .multiclass(classes: 10), true),
            (.task, 5, .binary, false), (.task, 5, .binary, true),
        ]
        for (setting, heads, head, plusPlus) in cases {
            var options = SplitDigitsScenario(setting: setting)
            options.path = digitsPath
            let stream = try options.makeStream(seed: 0)
            let plugin = DarkExperienceReplay(plusPlus: plusPlus, alpha: 1, beta: 0, capacity: 200, replayPerBatch: 32)
            // Frozen: a learning rate of exactly 0 leaves every parameter unchanged. (A tiny rate
            // such as 1e-30 does not: zero biases become ±1e-30, and on a fused multiply-add path
            // fma(a, b, 1e-30) breaks the round-to-even tie of an exact product a·b that rounding
            // a·b first keeps — so logits move by one ulp on "avx2-fma" and not on "generic".)
            for path in Kernels.availablePaths {
                var t = Trainer(spec: MLPSpec(inputs: 64, hidden: [64, 64], head: head, heads: heads),
                                optimizer: .adam(learningRate: 0), options: TrainingOptions(stepsPerExperience: 30, batchSize: 32),
                                plugins: [plugin], seed: 4)
                let o = try Kernels.withPath(path) { try t.run(stream) }
                // The stream has ≈ 1,400 training rows and the buffer 200: slots are evicted.
                #expect(o.samplesProcessed[0] > 200)
                for (i, curve) in o.penaltyCurve.enumerated() {
                    #expect(curve.allSatisfy { $0 == 0 }, "\(path) \(setting) \(plusPlus ? "derpp" : "der") experience \(i): \(curve)")
                }
            }
        }
    }
}
