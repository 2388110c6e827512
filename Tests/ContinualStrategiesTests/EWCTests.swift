import ContinualCore
import ContinualStrategies
import Testing

@Suite("EWC")
struct EWCTests {
    private func fisher(_ model: MLP, _ samples: Samples, _ estimator: EWC.Options.Estimator,
                        route: Int = 0, batchSize: Int = 32, seed: UInt64 = 1) -> [Double] {
        var rng = RandomSource(seed: seed)
        return EWC.fisherDiagonal(model: model, samples: samples, route: route, estimator: estimator,
                                  batchSize: batchSize, rng: &rng, workspace: model.makeWorkspace())
    }

    /// Hand-derived logistic regression: g_i = (σ(z_i) − y_i) [x_i, 1], so
    /// F_emp,j = mean_i (σ(z_i) − y_i)² x̃_ij² and F_exact,j = mean_i σ(z_i)(1 − σ(z_i)) x̃_ij².
    @Test func empiricalAndExactFisherMatchHandFormulaForLogisticModel() {
        let model = Fixture.logistic()
        let s = Fixture.samples
        let w = model.parameters.map(Double.init)
        var empirical = [Double](repeating: 0, count: 4)
        var exact = [Double](repeating: 0, count: 4)
        for i in 0..<s.count {
            let x = Fixture.row(s, i) + [1]
            let z = (0..<3).reduce(w[3]) { $0 + w[$1] * x[$1] }
            let p = Fixture.sigmoid(z)
            let r = p - Double(s.labels[i])
            for j in 0..<4 {
                empirical[j] += r * r * x[j] * x[j] / Double(s.count)
                exact[j] += p * (1 - p) * x[j] * x[j] / Double(s.count)
            }
        }
        let fe = fisher(model, s, .empirical)
        let fx = fisher(model, s, .exact)
        for j in 0..<4 {
            #expect(Fixture.close(fe[j], empirical[j], relative: 1e-5), "empirical F[\(j)] = \(fe[j]) vs \(empirical[j])")
            #expect(Fixture.close(fx[j], exact[j], relative: 1e-5), "exact F[\(j)] = \(fx[j]) vs \(exact[j])")
        }
        #expect(fe != fx)
    }

    /// A tanh hidden layer: per-sample gradients by float64 finite differences of −log p(y|x),
    /// squared and averaged, against the plugin's estimate (empirical and exact).
    @Test(arguments: [OutputHead.binary, .multiclass(classes: 3)])
    func fisherMatchesFiniteDifferencesOfLogLikelihood(head: OutputHead) {
        let model = Fixture.tanhNetwork(head: head)
        var s = Fixture.samples
        if case .multiclass = head { s.labels = [0, 2, 1, 2, 0] }
        let n = s.count, p = model.parameterCount
        var empirical = [Double](repeating: 0, count: p)
        var exact = [Double](repeating: 0, count: p)
        let ws = model.makeWorkspace()
        for i in 0..<n {
            let x = Fixture.row(s, i)
            let g = Fixture.finiteDifferenceGradient(model: model, x: x, label: Int(s.labels[i]))
            for j in 0..<p { empirical[j] += g[j] * g[j] / Double(n) }
            model.forward(s.features.withUnsafeBufferPointer { $0.baseAddress! + i * 3 }, count: 1, route: 0, workspace: ws)
            let probs = Loss.probabilities(head: head, logits: ws.logits)
            for (y, py) in probs.enumerated() {
                let gy = Fixture.finiteDifferenceGradient(model: model, x: x, label: y)
                for j in 0..<p { exact[j] += py * gy[j] * gy[j] / Double(n) }
            }
        }
        let fe = fisher(model, s, .empirical)
        let fx = fisher(model, s, .exact)
        let scale = empirical.max()!
        for j in 0..<p {
            #expect(Fixture.close(fe[j], empirical[j], relative: 1e-5, floor: 1e-9 * scale),
                    "empirical F[\(j)] = \(fe[j]) vs finite differences \(empirical[j])")
            #expect(Fixture.close(fx[j], exact[j], relative: 1e-5, floor: 1e-9 * scale),
                    "exact F[\(j)] = \(fx[j]) vs finite differences \(exact[j])")
        }
    }

    /// B identical samples: per-sample F = g², the same as one sample (not B·g², not g²/B).
    /// B different samples: per-sample F = mean g_i², which is NOT (mean g_i)², the squared
    /// batch gradient; the `batched` estimator gives exactly the latter, so the test sees the bug.
    @Test func identicalAndDifferentBatchesGiveThePerSampleFisher() {
        let model = Fixture.logistic()
        let s = Fixture.samples
        let one = s.subset([0])
        let identical = s.subset(Array(repeating: 0, count: 5))
        let grads: [[Double]] = (0..<s.count).map { i in
            let x = Fixture.row(s, i) + [1]
            let w = model.parameters.map(Double.init)
            let z = (0..<3).reduce(w[3]) { $0 + w[$1] * x[$1] }
            let r = Fixture.sigmoid(z) - Double(s.labels[i])
            return x.map { r * $0 }
        }
        let perSample = (0..<4).map { j in grads.reduce(0) { $0 + $1[j] * $1[j] } / 5 }
        let squaredMean = (0..<4).map { j in let m = grads.reduce(0) { $0 + $1[j] } / 5; return m * m }

        let fOne = fisher(model, one, .empirical)
        let fIdentical = fisher(model, identical, .empirical)
        let fDifferent = fisher(model, s, .empirical)
        let bIdentical = fisher(model, identical, .batched, batchSize: 5)
        let bDifferent = fisher(model, s, .batched, batchSize: 5)
        for j in 0..<4 {
            let g0 = grads[0][j] * grads[0][j]
            #expect(Fixture.close(fIdentical[j], g0, relative: 1e-5))
            #expect(Fixture.close(fOne[j], g0, relative: 1e-5))
            #expect(Fixture.close(bIdentical[j], g0, relative: 1e-5), "identical rows: batch mean = each gradient")
            #expect(Fixture.close(fDifferent[j], perSample[j], relative: 1e-5))
            #expect(Fixture.close(bDifferent[j], squaredMean[j], relative: 1e-5))
            // The two definitions really differ on this data (by far more than the tolerance).
            #expect(abs(perSample[j] - squaredMean[j]) > 0.1 * perSample[j])
        }
    }

    /// Batched estimator with batch size 1 is the empirical Fisher (the only case they agree in general).
    @Test func batchedWithBatchSizeOneIsEmpirical() {
        let model = Fixture.tanhNetwork()
        let a = fisher(model, Fixture.samples, .batched, batchSize: 1)
        let b = fisher(model, Fixture.samples, .empirical)
        for j in a.indices { #expect(Fixture.close(a[j], b[j], relative: 1e-6, floor: 1e-12)) }
    }

    /// Sampling labels from the model is an unbiased estimate of the exact Fisher.
    @Test func sampledFisherAveragesToExactFisher() {
        let model = Fixture.tanhNetwork(head: .multiclass(classes: 3))
        let many = Fixture.samples.subset((0..<40_000).map { $0 % 5 })
        let exact = fisher(model, many, .exact)
        let sampled = fisher(model, many, .sample, seed: 9)
        let scale = exact.max()!
        for j in exact.indices {
            #expect(abs(sampled[j] - exact[j]) < 0.05 * max(exact[j], 0.05 * scale), "F[\(j)] \(sampled[j]) vs \(exact[j])")
        }
        #expect(sampled != exact)
        // Same seed, same draws.
        #expect(fisher(model, many, .sample, seed: 9) == sampled)
    }

    /// On a multi-head model the Fisher flows only through the experience's own head.
    @Test func multiHeadFisherUsesTheExperiencesRoute() {
        let model = Fixture.tanhNetwork(heads: 2)
        let f = fisher(model, Fixture.samples, .exact, route: 1)
        let out = model.layers.last!
        #expect(f[out.parameterRange(route: 0)].allSatisfy { $0 == 0 })
        #expect(f[out.parameterRange(route: 1)].contains { $0 > 0 })
        #expect(f[0..<out.offset].contains { $0 > 0 })
    }

    /// Central differences of the penalty value match the gradient it adds (both conventions, both modes).
    @Test(arguments: [(true, EWC.Options.Mode.separate), (false, .separate), (true, .online), (false, .online)])
    func penaltyGradientPassesFiniteDifferenceCheck(half: Bool, mode: EWC.Options.Mode) {
        var rng = RandomSource(seed: 4)
        let p = 9
        var plugin = EWC(options: .init(lambda: 3.5, half: half, mode: mode, gamma: 0.7))
        for _ in 0..<2 {
            plugin.consolidate(fisher: (0..<p).map { _ in rng.uniform(0, 2) },
                               anchor: (0..<p).map { _ in Float(rng.uniform(-1, 1)) })
        }
        let theta = (0..<p).map { _ in Float(rng.uniform(-1, 1)) }
        var gradient = [Float](repeating: 0.25, count: p)
        _ = theta.withUnsafeBufferPointer { t in
            gradient.withUnsafeMutableBufferPointer { plugin.addPenalty(parameters: t, gradient: $0) }
        }
        func value(_ x: [Float]) -> Double {
            var scratch = [Float](repeating: 0, count: p)
            return x.withUnsafeBufferPointer { t in
                scratch.withUnsafeMutableBufferPointer { plugin.addPenalty(parameters: t, gradient: $0) }
            }
        }
        for i in 0..<p {
            var plus = theta, minus = theta
            plus[i] += 1e-2
            minus[i] -= 1e-2
            let numeric = (value(plus) - value(minus)) / Double(plus[i] - minus[i])
            let analytic = Double(gradient[i]) - 0.25
            #expect(Fixture.close(analytic, numeric, relative: 1e-4, floor: 1e-6), "∂/∂θ[\(i)]: \(analytic) vs \(numeric)")
        }
        // The value itself follows the documented formula.
        var expected = 0.0
        for term in plugin.terms {
            for i in 0..<p {
                let d = Double(theta[i]) - Double(term.anchor[i])
                expected += Double(term.fisher[i]) * d * d
            }
        }
        expected *= half ? 3.5 / 2 : 3.5
        #expect(Fixture.close(value(theta), expected, relative: 1e-6))
    }

    /// Online: one term, F = γ F_old + F_new, anchor = latest parameters; separate keeps every term.
    @Test func onlineModeDecaysTheRunningFisherByGamma() {
        let f1: [Double] = [1, 2, 4], f2: [Double] = [0.5, 0.25, 8], f3: [Double] = [1, 1, 1]
        let a1: [Float] = [0, 1, 2], a2: [Float] = [3, 4, 5], a3: [Float] = [6, 7, 8]
        var online = EWC(options: .init(mode: .online, gamma: 0.5))
        online.consolidate(fisher: f1, anchor: a1)
        online.consolidate(fisher: f2, anchor: a2)
        #expect(online.terms.count == 1)
        #expect(online.terms[0].fisher == [1.0, 1.25, 10])
        #expect(online.terms[0].anchor == a2)
        online.consolidate(fisher: f3, anchor: a3)
        #expect(online.terms[0].fisher == [1.5, 1.625, 6])   // 0.5·(0.5·F1 + F2) + F3
        #expect(online.terms[0].anchor == a3)
        #expect(online.lastFisher == f3)

        var full = EWC(options: .init(mode: .online, gamma: 1))
        full.consolidate(fisher: f1, anchor: a1)
        full.consolidate(fisher: f2, anchor: a2)
        #expect(full.terms[0].fisher == [1.5, 2.25, 12])

        var separate = EWC(options: .init(mode: .separate, gamma: 0.5))
        separate.consolidate(fisher: f1, anchor: a1)
        separate.consolidate(fisher: f2, anchor: a2)
        #expect(separate.terms.map(\.anchor) == [a1, a2])
        #expect(separate.terms.map(\.fisher) == [[1, 2, 4], [0.5, 0.25, 8]])
    }

    /// The report carries the convention and, below the size limit, the vectors.
    @Test func reportCarriesConventionAndImportance() throws {
        var plugin = EWC(options: .init(lambda: 2, half: false))
        plugin.consolidate(fisher: [1, 2], anchor: [3, 4])
        let r = plugin.report()
        #expect(r.attributes["penalty_convention"] == .string("lambda * sum_k sum_i F_k,i (theta_i - theta*_k,i)^2"))
        #expect(r.arrays["fisher"]?.values == [1, 2])
        #expect(r.arrays["anchor"]?.values == [3, 4])
        var quiet = EWC(options: .init(saveImportance: false))
        quiet.consolidate(fisher: [1, 2], anchor: [3, 4])
        #expect(quiet.report().arrays.isEmpty)
        #expect(EWC.Options().savesImportance(parameterCount: 99_999))
        #expect(!EWC.Options().savesImportance(parameterCount: 100_000))
    }
}
