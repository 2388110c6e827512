import Foundation
import Testing
import ContinualCore
import ContinualStrategies
@testable import ContinualExperiments

/// Low-rank factorisation: Eckart–Young's error, full rank reproduces the dense model, the
/// factors' gradients against finite differences, the factorised cost by hand, and runs that
/// match the dense run until the factorisation and are deterministic after it.
@Suite struct LowRankTests {
    /// MLP 5-6-4-3 (tanh, three classes) with deterministic pseudo-random weights.
    func model() -> MLP {
        let spec = MLPSpec(inputs: 5, hidden: [6, 4], activation: .tanh, head: .multiclass(classes: 3))
        var rng = RandomSource(seed: 7)
        return MLP(spec: spec, rng: &rng)
    }

    func context(experiences: Int = 3) -> RunContext {
        RunContext(seed: 5, pluginIndex: 0, experienceCount: experiences, dimension: 5, head: .multiclass(classes: 3),
                   training: TrainingOptions())
    }

    /// The model after `prepare` and the factorisation before experience 1.
    func factorised(_ options: LowRankFactorization.Options) throws -> (MLP, LowRankFactorization) {
        var m = model()
        var plugin = LowRankFactorization(options: options)
        try plugin.prepare(model: &m, context: context())
        try plugin.beforeExperience(model: &m, context: ExperienceContext(index: 1, experiences: [], route: 0))
        return (m, plugin)
    }

    func logits(_ m: MLP, _ x: [Float]) -> [Float] {
        let ws = m.makeWorkspace(capacity: 8)
        x.withUnsafeBufferPointer { m.forward($0.baseAddress!, count: x.count / 5, route: 0, workspace: ws) }
        return Array(UnsafeBufferPointer(start: ws.logits, count: x.count / 5 * 3))
    }

    let inputs: [Float] = (0..<20).map { Float(sin(Double($0) * 1.7)) }

    @Test func reconstructionErrorSquaredIsTheSumOfDiscardedSquaredSingularValues() {
        let rows = 9, columns = 7
        let w: [Float] = (0..<(rows * columns)).map { (i: Int) -> Float in
            let wave: Double = sin(Double(i * i) * 0.37)
            return Float(wave + 0.1 * Double(i % 5))
        }
        let sigma = TruncatedSVD(matrix: w, rows: rows, columns: columns).singularValues
        let total = w.reduce(0.0) { $0 + Double($1) * Double($1) }
        #expect(abs(sigma.reduce(0) { $0 + $1 * $1 } - total) < 1e-9 * total)
        for r in 1...columns {
            let f = LowRankFactorization.factorise(w, rows: rows, columns: columns, rank: r)
            let discarded = sigma[r...].reduce(0.0) { $0 + $1 * $1 }
            #expect(abs(f.error * f.error - discarded) <= 1e-6 * total, "rank \(r): ‖W−UV‖² \(f.error * f.error) vs Σσ² \(discarded)")
            #expect(abs(f.discarded * f.discarded - discarded) <= 1e-12 * total)
            // Balanced split: column k of U and row k of V both have norm √σ_k.
            for k in 0..<r {
                let uk = (0..<rows).reduce(0.0) { $0 + Double(f.u[$1 * r + k]) * Double(f.u[$1 * r + k]) }
                let vk = (0..<columns).reduce(0.0) { $0 + Double(f.v[k * columns + $1]) * Double(f.v[k * columns + $1]) }
                #expect(abs(uk - sigma[k]) < 1e-5 * sigma[0] && abs(vk - sigma[k]) < 1e-5 * sigma[0])
            }
        }
    }

    @Test func fullRankPredictsLikeTheDenseModel() throws {
        let dense = model()
        let (m, plugin) = try factorised(.init(rankFraction: 1))
        #expect(plugin.ranks == [5, 4] && plugin.layers == [0, 1])
        // The dense weights are exactly 0: the factors alone carry the layer.
        for l in [0, 1] {
            let o = m.layers[l].weightOffset(route: 0)
            #expect(m.parameters[o..<(o + m.layers[l].inputs * m.layers[l].outputs)].allSatisfy { $0 == 0 })
        }
        let a = logits(dense, inputs), b = logits(m, inputs)
        for (x, y) in zip(a, b) { #expect(abs(x - y) <= 1e-5, "\(x) vs \(y)") }
        // A low rank changes the predictions (the test above is not vacuous).
        let (low, _) = try factorised(.init(rank: 1))
        #expect(zip(a, logits(low, inputs)).contains { abs($0 - $1) > 1e-3 })
    }

    @Test func factorGradientsMatchFiniteDifferences() throws {
        let (m, _) = try factorised(.init(rank: 2))
        let labels: [Int32] = [0, 2, 1, 2]
        func loss(_ model: MLP) -> Double {
            var g = [Float](repeating: 0, count: model.parameterCount)
            let ws = model.makeWorkspace(capacity: 8)
            return inputs.withUnsafeBufferPointer { x in
                labels.withUnsafeBufferPointer { y in
                    g.withUnsafeMutableBufferPointer { model.lossAndGradient(features: x.baseAddress!, labels: y.baseAddress!, count: 4,
                                                                            route: 0, scale: 1, workspace: ws, gradient: $0.baseAddress!) }
                }
            }
        }
        var gradient = [Float](repeating: 0, count: m.parameterCount)
        let ws = m.makeWorkspace(capacity: 8)
        inputs.withUnsafeBufferPointer { x in
            labels.withUnsafeBufferPointer { y in
                gradient.withUnsafeMutableBufferPointer { _ = m.lossAndGradient(features: x.baseAddress!, labels: y.baseAddress!, count: 4,
                                                                                route: 0, scale: 1, workspace: ws, gradient: $0.baseAddress!) }
            }
        }
        var checked = 0
        for l in [0, 1] {
            for i in m.layers[l].lowRankRange(route: 0) {
                let h: Float = 1e-2
                var plus = m, minus = m
                plus.parameters[i] += h
                minus.parameters[i] -= h
                let fd = (loss(plus) - loss(minus)) / Double(2 * h)
                #expect(abs(fd - Double(gradient[i])) <= 2e-3 + 2e-3 * abs(fd), "parameter \(i): finite difference \(fd), backward \(gradient[i])")
                checked += 1
            }
        }
        #expect(checked == 2 * (5 + 6) + 2 * (6 + 4))
    }

    @Test func costCountsRankTimesInputsPlusOutputsPerFactorisedLayer() throws {
        let (m, _) = try factorised(.init(rank: 2))
        let tanh = Activation.tanh.flopsPerUnit
        let cost = LowRankCost(model: m, factorised: true)
        // 5-6 and 6-4 factorised at rank 2, the 4-3 output layer dense.
        #expect(cost.parameters == (2 * (5 + 6) + 6) + (2 * (6 + 4) + 4) + (4 * 3 + 3))
        #expect(cost.flopsPerPrediction == (2 * 2 * 11 + 6 * (1 + tanh)) + (2 * 2 * 10 + 4 * (1 + tanh)) + (2 * 12 + 3))
        let before = LowRankCost(model: m, factorised: false), dense = model()
        #expect(before.parameters == dense.parameterCount && before.flopsPerPrediction == dense.flopsPerPrediction)
    }

    func run(_ strategy: String) throws -> RunResult {
        let json = tinyExperiment().replacingOccurrences(of: "\"strategy\": \"naive\"", with: "\"strategy\": [\(strategy)]")
        let file = try ExperimentFile.parse(data: Data(json.utf8))
        return RunExecutor.execute(file.runs[0])
    }

    @Test func matchesTheDenseRunUntilTheFactorisationAndIsDeterministic() throws {
        let naive = try run("\"naive\"")
        let strategy = "{\"type\": \"low_rank\", \"rank\": 2, \"start_experience\": 2}"
        let a = try run(strategy), b = try run(strategy)
        let oa = try #require(a.outcome), ob = try #require(b.outcome), on = try #require(naive.outcome)
        // Experiences 0 and 1 train the dense layer: accuracies bit-identical to naive's.
        #expect(oa.progress.accuracy[0] == on.progress.accuracy[0] && oa.progress.accuracy[1] == on.progress.accuracy[1])
        #expect(oa.progress.accuracy[2] != on.progress.accuracy[2])
        #expect(oa.progress.accuracy == ob.progress.accuracy && oa.finalModel.parameters == ob.finalModel.parameters)
        // After it: W exactly 0 and frozen, the factors trained away from their SVD values.
        let m = oa.finalModel, layer = m.layers[0], w = layer.weightOffset(route: 0)
        #expect(m.parameters[w..<(w + layer.inputs * layer.outputs)].allSatisfy { $0 == 0 })
        let report = try #require(oa.pluginReports.first { $0.name == "low_rank" }?.report)
        #expect(report.arrays["rank"]?.values == [0, 0, 2])
        let params = try #require(report.arrays["model_parameters"]?.values)
        #expect(params[0] == Double(on.finalModel.parameterCount) && params[2] == Double(2 * (layer.inputs + 8) + 8 + 8 + 1))
        let error = try #require(report.arrays["reconstruction_error"]?.values)
        let discarded = try #require(report.arrays["layer_discarded_singular_norm"]?.values)
        #expect(error[0].isNaN && abs(error[2] - discarded[0]) <= 1e-4 * max(discarded[0], 1))
    }

    @Test func badOptionsNameTheirKeys() throws {
        for (options, key) in [("\"rank\": 0", "rank"), ("\"rank_fraction\": 1.5", "rank_fraction"),
                               ("\"rank\": 2, \"rank_fraction\": 0.5", "rank_fraction"),
                               ("\"start_experience\": -1", "start_experience"), ("\"rnk\": 2", "rnk")] {
            let json = tinyExperiment().replacingOccurrences(
                of: "\"strategy\": \"naive\"", with: "\"strategy\": [{\"type\": \"low_rank\", \(options)}]")
            do {
                _ = try ExperimentFile.parse(data: Data(json.utf8), path: "x.json")
                Issue.record("\(options) was accepted")
            } catch let e as ConfigError {
                #expect(e.location == ".strategy[0].\(key)", "\(options): \(e)")
            } catch { Issue.record("\(error)") }
        }
        // Checks that need the model's shape: validate's preflight names the key.
        for (options, key) in [("\"rank\": 9", "rank"), ("\"start_experience\": 3", "start_experience"),
                               ("\"rank\": 1, \"layers\": [2]", "layers")] {
            let json = tinyExperiment().replacingOccurrences(
                of: "\"strategy\": \"naive\"", with: "\"strategy\": [{\"type\": \"low_rank\", \(options)}]")
            let file = try ExperimentFile.parse(data: Data(json.utf8), path: "x.json")
            do {
                _ = try Preflight.check(file.runs[0])
                Issue.record("\(options) passed validate")
            } catch let e as ConfigError {
                #expect(e.location == ".strategy[0].\(key)", "\(options): \(e)")
                if key == "rank" { #expect(e.message.contains("min(inputs, outputs) = 8"), "\(e.message)") }
            }
        }
    }
}
