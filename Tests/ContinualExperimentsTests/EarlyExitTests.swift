import Foundation
import Testing
import ContinualCore
import ContinualMetrics
import ContinualScenarios
import ContinualStrategies
@testable import ContinualExperiments

/// Early exit: the cascade's decisions, accuracy and FLOPs by hand; τ > 1 is the full model and
/// τ = 0 the exit head alone, in predictions and costs; the exit loss's gradient (exit head and
/// first layer) against central differences of an independent float64 implementation; the
/// sweep reported by a run agrees with the run's own evaluation.
@Suite struct EarlyExitTests {
    /// MLP 3-4-2-1 (binary head).
    func binaryModel(_ activation: Activation = .relu) -> MLP {
        let spec = MLPSpec(inputs: 3, hidden: [4, 2], activation: activation, head: .binary)
        var rng = RandomSource(seed: 5)
        return MLP(spec: spec, rng: &rng)
    }

    @Test func decisionsAccuracyAndFLOPsByHand() {
        let cascade = EarlyExitCascade(model: binaryModel(), rule: .maxProbability)
        // Exit logits → confidence max(σ(z), 1 − σ(z)): 0.881, 0.525, 0.622, 0.953.
        let exit: [Float] = [2.0, -0.1, 0.5, -3.0]
        let full: [Float] = [-1, 1, -1, 1]
        let d = cascade.decide(exitLogits: exit, fullLogits: full, count: 4, threshold: 0.8)
        #expect(d.exited == [true, false, false, true])
        #expect(d.classes == [1, 1, 0, 0])
        #expect(d.scores == [2.0, 1, -1, -3.0])
        let labels: [Int32] = [1, 1, 1, 0]
        #expect(zip(d.classes, labels).filter { $0 == $1 }.count == 3)
        // Layer 0: 2·3·4 + 4·(1 + 1) = 32; exit head 2·4·1 + 1 = 9; rest: 2·4·2 + 2·2 = 20 and 2·2 + 1 = 5.
        #expect(cascade.firstLayerFLOPs == 32 && cascade.exitHeadFLOPs == 9 && cascade.restFLOPs == 25)
        #expect(cascade.flopsPerPrediction(threshold: 0.8, exitRate: 0.5) == 32 + 9 + 12.5)
        // Bytes: layer 0 (12 + 4 weights, 3 inputs, 4 outputs), head (4 + 1, 1 logit), rest (8+2+2, 2+1+1).
        #expect(cascade.firstLayerBytes == 4 * 23 && cascade.exitHeadBytes == 4 * 6 && cascade.restBytes == 4 * 16)
        // τ = 0.5 lets every binary sample exit; τ = 0.9 only the last.
        #expect(cascade.decide(exitLogits: exit, fullLogits: full, count: 4, threshold: 0.5).exited == [true, true, true, true])
        #expect(cascade.decide(exitLogits: exit, fullLogits: full, count: 4, threshold: 0.9).exited == [false, false, false, true])
    }

    @Test func multiclassAndEntropyConfidenceByHand() {
        let spec = MLPSpec(inputs: 2, hidden: [3], head: .multiclass(classes: 3))
        var rng = RandomSource(seed: 1)
        let model = MLP(spec: spec, rng: &rng)
        let maxP = EarlyExitCascade(model: model, rule: .maxProbability)
        let ent = EarlyExitCascade(model: model, rule: .entropy)
        // Softmax of (ln 6, ln 3, ln 1) = (0.6, 0.3, 0.1).
        let z: [Float] = [Float(log(6.0)), Float(log(3.0)), 0]
        #expect(abs(maxP.confidence(z) - 0.6) < 1e-6)
        let h = -(0.6 * log(0.6) + 0.3 * log(0.3) + 0.1 * log(0.1))
        #expect(abs(ent.confidence(z) - (1 - h / log(3.0))) < 1e-6)
        // Uniform: max probability 1/3, entropy confidence 0.
        #expect(abs(maxP.confidence([0, 0, 0]) - 1.0 / 3) < 1e-12 && abs(ent.confidence([0, 0, 0])) < 1e-12)
        #expect(maxP.confidence([.nan, 0, 0]).isNaN)
        // Two samples: the first exits at τ 0.5 (class 0), the second (0.4, 0.35, 0.25) does not.
        let z2: [Float] = z + [Float(log(0.4)), Float(log(0.35)), Float(log(0.25))]
        let d = maxP.decide(exitLogits: z2, fullLogits: [0, 0, 5, 0, 5, 0], count: 2, threshold: 0.5)
        #expect(d.exited == [true, false] && d.classes == [0, 1] && d.scores == nil)
        #expect(!EarlyExitCascade.exits(confidence: .nan, threshold: 0))
    }

    /// Runs habit drift with the plugin; returns the result.
    func run(_ options: String, hidden: String = "[8, 4]") throws -> RunResult {
        let json = tinyExperiment()
            .replacingOccurrences(of: "\"model\": {\"hidden\": [8]}", with: "\"model\": {\"hidden\": \(hidden)}")
            .replacingOccurrences(of: "\"strategy\": \"naive\"", with: "\"strategy\": [{\"type\": \"early_exit\"\(options)}]")
        let file = try ExperimentFile.parse(data: Data(json.utf8))
        return RunExecutor.execute(file.runs[0])
    }

    /// The plugin's trained state: model and a prepared plugin whose exit head is the run's.
    func trained(_ options: EarlyExit.Options) throws -> (MLP, EarlyExit, ExperienceStream) {
        let stream = try HabitDriftScenario(trainPerExperience: 120, testPerExperience: 50,
                                            phases: ["morning", "night"].map { HabitPhase.presets[$0]! }).makeStream(seed: 4)
        let spec = MLPSpec(inputs: stream.dimension, hidden: [6, 4], head: stream.head)
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: 2, batchSize: 16),
                              plugins: [options.makePlugin()], seed: 2)
        _ = try trainer.run(stream)
        return (trainer.model, try #require(trainer.plugins[0] as? EarlyExit), stream)
    }

    @Test func thresholdAboveOneIsTheFullModelInPredictionsAndCosts() throws {
        let (model, plugin, stream) = try trained(.init(threshold: 1.1))
        var p = plugin
        for e in stream.experiences {
            let ws = model.makeWorkspace()
            let predicted = p.predictions(model: model, samples: e.test, experienceIndex: e.index, workspace: ws)
            let cascade = try #require(predicted)
            let full = TestEvaluation(model: model, samples: e.test, route: 0, workspace: ws)
            #expect(cascade.classes == full.predictions)
            #expect(cascade.scores == full.scores)
        }
        let c = try #require(plugin.cascade)
        #expect(c.flopsPerPrediction(threshold: 1.1, exitRate: 0.7) == Double(model.flopsPerPrediction))
        #expect(c.bytesPerPrediction(threshold: 1.1, exitRate: 0.7)
                == Double(TrainingTraffic(model: model, optimizer: .sgd(learningRate: 0.1)).bytesPerPrediction))
    }

    @Test func thresholdZeroIsTheExitHeadAlone() throws {
        let (model, plugin, stream) = try trained(.init(threshold: 0))
        var p = plugin
        let h = model.layers[0].outputs
        let block = plugin.parameterBlock
        for e in stream.experiences {
            let predicted = p.predictions(model: model, samples: e.test, experienceIndex: e.index, workspace: model.makeWorkspace())
            let got = try #require(predicted)
            // Independently: h1 = relu(x·W0 + b0) in float64, z = h1·We + be, class = z > 0.
            var mismatches = 0
            for i in 0..<e.test.count {
                let x = e.test.features[(i * e.test.dimension)..<((i + 1) * e.test.dimension)].map(Double.init)
                var z = Double(block[h])
                for u in 0..<h {
                    var a = Double(model.parameters[e.test.dimension * h + u])
                    for (k, xk) in x.enumerated() { a += xk * Double(model.parameters[k * h + u]) }
                    z += max(a, 0) * Double(block[u])
                }
                if (z > 0 ? 1 : 0) != got.classes[i] && abs(z) > 1e-4 { mismatches += 1 }
            }
            #expect(mismatches == 0)
        }
        let c = try #require(plugin.cascade)
        #expect(c.flopsPerPrediction(threshold: 0, exitRate: 1) == Double(c.firstLayerFLOPs + c.exitHeadFLOPs))
    }

    /// L(θ₀, W_e) = weight · (1/B) Σ ℓ(exit logits) in float64: an independent implementation.
    func exitLoss(_ p0: [Double], _ block: [Double], x: [[Double]], y: [Int32], hidden h: Int, k: Int,
                  activation: Activation, weight: Double) -> Double {
        let d = x[0].count
        var total = 0.0
        for (r, row) in x.enumerated() {
            var z = (0..<k).map { block[h * k + $0] }
            for u in 0..<h {
                var a = p0[d * h + u]
                for i in 0..<d { a += row[i] * p0[i * h + u] }
                let act = activation == .tanh ? tanh(a) : max(a, 0)
                for c in 0..<k { z[c] += act * block[u * k + c] }
            }
            if k == 1 {
                let t = Double(y[r])
                total += max(z[0], 0) - t * z[0] + log1p(exp(-abs(z[0])))
            } else {
                let m = z.max()!
                total += m + log(z.reduce(0) { $0 + exp($1 - m) }) - z[Int(y[r])]
            }
        }
        return weight * total / Double(x.count)
    }

    @Test(arguments: [true, false])
    func exitGradientMatchesFiniteDifferences(binary: Bool) throws {
        let k = binary ? 1 : 3
        let spec = MLPSpec(inputs: 3, hidden: [4, 3], activation: .tanh, head: binary ? .binary : .multiclass(classes: 3))
        var rng = RandomSource(seed: 9)
        var model = MLP(spec: spec, rng: &rng)
        var plugin = EarlyExit(options: .init(weight: 0.7))
        try plugin.prepare(model: &model, context: RunContext(seed: 1, pluginIndex: 0, experienceCount: 1, dimension: 3,
                                                              head: spec.head, training: TrainingOptions(batchSize: 4)))
        var batch = Batch(dimension: 3, capacity: 4)
        var xs: [[Double]] = [], ys: [Int32] = []
        for r in 0..<4 {
            let row = (0..<3).map { _ in Float(rng.normal()) }
            let y = Int32(r % (binary ? 2 : 3))
            batch.append(features: row, label: y, route: 0)
            xs.append(row.map(Double.init))
            ys.append(y)
        }
        var dummyLogits = [Float](repeating: 0, count: 4 * k), dummyGradient = dummyLogits
        let value = dummyLogits.withUnsafeMutableBufferPointer { z in
            dummyGradient.withUnsafeMutableBufferPointer { g in
                plugin.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<4)[...], route: 0, logits: UnsafePointer(z.baseAddress!),
                                                   logitGradient: g.baseAddress!, logitCount: k, scale: 0.25, model: model,
                                                   experienceIndex: 0))
            }
        }
        #expect(dummyGradient.allSatisfy { $0 == 0 }, "the exit loss leaves the final head's logit gradient alone")
        var gradient = [Float](repeating: 0, count: model.parameterCount)
        let penalty = model.parameters.withUnsafeBufferPointer { p in
            gradient.withUnsafeMutableBufferPointer { plugin.addPenalty(parameters: p, gradient: $0) }
        }
        #expect(penalty == 0)
        let p0 = model.parameters[0..<(3 * 4 + 4)].map(Double.init)
        let block = plugin.parameterBlock.map(Double.init)
        func loss(_ a: [Double], _ b: [Double]) -> Double {
            exitLoss(a, b, x: xs, y: ys, hidden: 4, k: k, activation: .tanh, weight: 0.7)
        }
        #expect(abs(value - loss(p0, block)) < 1e-5)
        let eps = 1e-5
        for i in p0.indices {
            var a = p0, b = p0
            a[i] += eps
            b[i] -= eps
            let fd = (loss(a, block) - loss(b, block)) / (2 * eps)
            #expect(abs(fd - Double(gradient[i])) < 1e-4 + 1e-3 * abs(fd), "first layer parameter \(i): fd \(fd), analytic \(gradient[i])")
        }
        #expect(gradient[16...].allSatisfy { $0 == 0 }, "only the first layer gets the exit loss's gradient")
        for i in block.indices {
            var a = block, b = block
            a[i] += eps
            b[i] -= eps
            let fd = (loss(p0, a) - loss(p0, b)) / (2 * eps)
            let g = Double(plugin.parameterBlockGradient[i])
            #expect(abs(fd - g) < 1e-4 + 1e-3 * abs(fd), "exit head parameter \(i): fd \(fd), analytic \(g)")
        }
        // A second penalty call without a new batch adds nothing (the gradient was consumed).
        var again = [Float](repeating: 0, count: model.parameterCount)
        _ = model.parameters.withUnsafeBufferPointer { p in again.withUnsafeMutableBufferPointer { plugin.addPenalty(parameters: p, gradient: $0) } }
        #expect(again.allSatisfy { $0 == 0 })
    }

    @Test func exitHeadOnlyTrainingLeavesTheFullPathAsWithoutThePlugin() throws {
        // joint false: the backbone trains exactly as naive; threshold > 1 evaluates it alone.
        let exitOnly = try run(", \"joint\": false, \"threshold\": 1.1")
        let naive = RunExecutor.execute(try ExperimentFile.parse(data: Data(tinyExperiment()
            .replacingOccurrences(of: "\"model\": {\"hidden\": [8]}", with: "\"model\": {\"hidden\": [8, 4]}").utf8)).runs[0])
        #expect(exitOnly.status == .completed && naive.status == .completed)
        #expect(exitOnly.outcome?.finalModel.parameters == naive.outcome?.finalModel.parameters)
        #expect(exitOnly.outcome?.accuracy == naive.outcome?.accuracy)
    }

    @Test func sweepAgreesWithTheRunsOwnEvaluation() throws {
        for tau in [0.0, 0.8, 1.1] {
            let r = try run(", \"threshold\": \(tau), \"thresholds\": [0, 0.8, 1.1]")
            #expect(r.status == .completed, "\(r.message)")
            let o = try #require(r.outcome)
            let report = try #require(o.pluginReports.first { $0.name == "early_exit" }?.report)
            let acc = try #require(report.arrays["accuracy"])
            #expect(acc.shape == [3, 3, 3])
            let q = [0.0, 0.8, 1.1].firstIndex(of: tau)!
            for i in 0..<3 {
                for j in 0..<3 { #expect(acc.values[(i * 3 + j) * 3 + q] == o.accuracy[i][j]) }
            }
            let exitRate = try #require(report.arrays["final_exit_rate"]?.values)
            #expect(exitRate[0] == 1 && exitRate[2] == 0 && exitRate[1] >= 0 && exitRate[1] <= 1)
            let flops = try #require(report.arrays["flops_per_prediction"]?.values)
            #expect(flops[2] == Double(o.finalModel.flopsPerPrediction) && flops[0] < flops[2])
            let joules = try #require(report.arrays["joules_per_prediction"]?.values)
            let bytes = try #require(report.arrays["bytes_per_prediction"]?.values)
            let profile = DeviceProfile.phoneNPU2023
            #expect(joules[2] == flops[2] * profile.joulesPerFLOP + bytes[2] * profile.joulesPerByte)
            #expect(joules[2] == r.device!.predictionEnergy.joules)
            #expect(report.arrays["latency_seconds_per_prediction"]?.values[2] == r.device!.predictionLatencySeconds)
            // ACC and forgetting at τ equal the run's own metrics at its threshold.
            #expect(report.arrays["acc"]?.values[q] == r.metrics?.acc)
            #expect(report.arrays["forgetting"]?.values[q] == r.metrics?.forgetting)
        }
    }

    @Test func exportIsRefusedWithAReason() {
        guard case .refused(let why) = EarlyExit.Options().predictionExport else {
            Issue.record("early_exit export was not refused")
            return
        }
        #expect(why.contains("exit head"))
    }

    @Test func badOptionsAndModelsNameTheProblem() throws {
        for (options, key) in [("\"weight\": 0", "weight"), ("\"threshold\": -0.1", "threshold"),
                               ("\"thresholds\": []", "thresholds"), ("\"thresholds\": [0.5, -1]", "thresholds"),
                               ("\"confidence\": \"margin\"", "confidence"), ("\"treshold\": 0.5", "treshold")] {
            let json = tinyExperiment().replacingOccurrences(
                of: "\"strategy\": \"naive\"", with: "\"strategy\": [{\"type\": \"early_exit\", \(options)}]")
            do {
                _ = try ExperimentFile.parse(data: Data(json.utf8), path: "x.json")
                Issue.record("\(options) was accepted")
            } catch let e as ConfigError {
                #expect(e.location == ".strategy[0].\(key)", "\(options): \(e)")
            } catch { Issue.record("\(error)") }
        }
        let noHidden = try run("", hidden: "[]")
        #expect(noHidden.status == .failed && noHidden.message.contains("no hidden layer"))
    }
}
