import ContinualCore
import ContinualFederated
import Testing

/// Server optimizers against their update rules worked by hand, and update encodings against
/// their stated error bounds and byte counts (float16 against Swift's own `Float16`).
@Suite struct ServerAndCommunicationTests {
    @Test func serverSGDWithRateOneIsFedAvg() {
        var x: [Float] = [1, 2, 3], state = ServerOptimizerState()
        ServerOptimizer.sgd().apply([0.5, -1, 0.25], to: &x, state: &state)
        #expect(x == [1.5, 1, 3.25])
        #expect(state.first.isEmpty && state.rounds == 1)
    }

    @Test func fedAvgMAccumulatesVelocity() {
        var x: [Float] = [0], state = ServerOptimizerState()
        let opt = ServerOptimizer.momentum(learningRate: 0.5, beta: 0.5)
        opt.apply([1], to: &x, state: &state)      // v = 1,    x = 0.5
        opt.apply([1], to: &x, state: &state)      // v = 1.5,  x = 1.25
        opt.apply([0], to: &x, state: &state)      // v = 0.75, x = 1.625
        #expect(x == [1.625] && state.first == [0.75])
        // β = 0 is plain server SGD.
        var a: [Float] = [1, -1], b = a, s1 = ServerOptimizerState(), s2 = ServerOptimizerState()
        for d: [Float] in [[0.3, 0.1], [-0.2, 0.7]] {
            ServerOptimizer.momentum(learningRate: 0.7, beta: 0).apply(d, to: &a, state: &s1)
            ServerOptimizer.sgd(learningRate: 0.7).apply(d, to: &b, state: &s2)
        }
        #expect(a == b)
    }

    @Test func fedAdamFirstStepByHand() {
        var x: [Float] = [0, 0, 0], state = ServerOptimizerState()
        let d: [Float] = [0.2, -0.05, 0]
        ServerOptimizer.adam(learningRate: 0.01, beta1: 0.9, beta2: 0.99, tau: 1e-3).apply(d, to: &x, state: &state)
        for i in 0..<3 {
            let m = (1 - Float(0.9)) * d[i], v = (1 - Float(0.99)) * d[i] * d[i]   // the rule's own rounding
            #expect(x[i] == 0.01 * m / (v.squareRoot() + 1e-3))
        }
        // m = 0.1Δ, √v = 0.1|Δ| ⇒ the step is ≈ η·sign(Δ) for |Δ| ≫ τ.
        #expect(abs(x[0] - 0.01 * 0.02 / 0.021) < 1e-7)
        #expect(x[2] == 0)
    }

    @Test func float16MatchesTheHardwareConversion() {
        #if !(os(macOS) && arch(x86_64))
        var rng = RandomSource(seed: 9)
        var values: [Float] = [0, -0, 1, -1, 65504, 65519, 65520, 1e9, -1e9, 6.1e-5, 5.96e-8, 2.98e-8, 2.99e-8, 1e-10,
                               .infinity, -.infinity, .leastNonzeroMagnitude, 0.1, 1.0 / 3.0]
        for _ in 0..<20_000 {
            values.append(Float(rng.normal()) * Float([1e-7, 1e-4, 1, 1e3, 7e4][rng.uniformInt(below: 5)]))
        }
        for v in values {
            #expect(Half.encode(v) == Float16(v).bitPattern, "\(v)")
            #expect(Half.decode(Half.encode(v)) == Float(Float16(v)), "\(v)")
        }
        #expect(Half.decode(Half.encode(.nan)).isNaN)
        #endif
    }

    @Test func encodingsKeepTheirErrorBoundsAndCountTheirBytes() {
        var rng = RandomSource(seed: 4)
        let delta = (0..<1000).map { _ in Float(rng.normal()) * 0.01 }
        #expect(UpdateEncoding.float32.encode(delta) == (delta, 4000))

        let (h, hb) = UpdateEncoding.float16.encode(delta)
        #expect(hb == 2000)
        #expect(zip(h, delta).allSatisfy { abs($0 - $1) <= abs($1) * 0x1p-11 || abs($1) < 6.2e-5 && abs($0 - $1) <= 0x1p-25 })

        let (q, qb) = UpdateEncoding.int8.encode(delta)
        let scale = delta.map(abs).max()! / 127
        #expect(qb == 1004)
        #expect(zip(q, delta).allSatisfy { abs($0 - $1) <= scale / 2 * (1 + 1e-5) })
        #expect(Set(q.map { ($0 / scale).rounded() }).count <= 255)
        #expect(UpdateEncoding.int8.encode([0, 0]) == ([0, 0], 6))

        let (t, tb) = UpdateEncoding.topK(fraction: 0.05).encode(delta)
        #expect(tb == 50 * 8)
        let kept = t.indices.filter { t[$0] != 0 }
        #expect(kept.count == 50 && kept.allSatisfy { t[$0] == delta[$0] })
        let threshold = kept.map { abs(delta[$0]) }.min()!
        #expect(delta.indices.filter { t[$0] == 0 }.allSatisfy { abs(delta[$0]) <= threshold })
        // Ties go to the lower index; k rounds up and is at least 1.
        #expect(UpdateEncoding.topK(fraction: 0.5).encode([1, -1, 1, 0.5]).decoded == [1, -1, 0, 0])
        #expect(UpdateEncoding.topK(fraction: 0.01).encode([0.1, 0.3, -0.2]) == ([0, 0.3, 0], 8))
    }
}

/// FedYogi and FedAdagrad (Reddi et al. 2021, Algorithm 2) against their update rules worked
/// step by step, and where they differ from FedAdam.
@Suite struct AdaptiveServerOptimizerTests {
    @Test func fedYogiTwoStepsByTheFormula() {
        var x: [Float] = [0, 0, 0], state = ServerOptimizerState()
        let opt = ServerOptimizer.yogi(learningRate: 0.1, beta1: 0.9, beta2: 0.99, tau: 1e-3)
        let d1: [Float] = [0.2, -0.05, 0], d2: [Float] = [0.01, 0.5, 0]
        opt.apply(d1, to: &x, state: &state)
        var m = [Float](repeating: 0, count: 3), v = m, expected = m
        for i in 0..<3 {
            // v₀ = 0 < Δ²: sign(v − Δ²) = −1, so v grows by (1 − β₂)Δ² (FedAdam's first step).
            m[i] = (1 - Float(0.9)) * d1[i]
            v[i] = 0 - (1 - Float(0.99)) * (d1[i] * d1[i]) * (d1[i] == 0 ? 0 : -1)
            expected[i] = 0.1 * m[i] / (v[i].squareRoot() + 1e-3)
        }
        #expect(zip(x, expected).allSatisfy { abs($0 - $1) <= 1e-6 * max(1, abs($1)) })
        opt.apply(d2, to: &x, state: &state)
        // Coordinate 0: v = 4e-4 > Δ² = 1e-4, so v *decreases* by (1 − β₂)Δ² (Adam would mix it).
        #expect(state.second[0] == v[0] - (1 - Float(0.99)) * (d2[0] * d2[0]))
        // Coordinate 1: v = 2.5e-5 < Δ² = 0.25, so v grows by (1 − β₂)Δ².
        #expect(state.second[1] == v[1] + (1 - Float(0.99)) * (d2[1] * d2[1]))
        for i in 0..<2 {
            let m2 = 0.9 * m[i] + (1 - Float(0.9)) * d2[i]
            #expect(abs(state.first[i] - m2) <= 1e-7)
            let want = expected[i] + 0.1 * m2 / (state.second[i].squareRoot() + 1e-3)
            #expect(abs(x[i] - want) <= 1e-5 * max(1, abs(want)), "coordinate \(i)")
        }
        #expect(x[2] == 0 && state.second[2] == 0)
        // FedAdam's second moment after the same two steps differs on coordinate 0.
        var y: [Float] = [0, 0, 0], adam = ServerOptimizerState()
        for d in [d1, d2] { ServerOptimizer.adam(learningRate: 0.1).apply(d, to: &y, state: &adam) }
        #expect(adam.second[0] != state.second[0])
    }

    @Test func fedAdagradAccumulatesSquares() {
        var x: [Float] = [1, -1], state = ServerOptimizerState()
        let opt = ServerOptimizer.adagrad(learningRate: 0.5, beta1: 0.5, tau: 0.01)
        opt.apply([0.4, -0.2], to: &x, state: &state)
        // m = 0.5Δ, v = Δ²: x = x₀ + η·0.5Δ / (|Δ| + τ).
        #expect(state.second == [Float(0.4) * 0.4, Float(0.2) * 0.2])
        #expect(x[0] == 1 + 0.5 * (0.5 * 0.4) / ((Float(0.4) * 0.4).squareRoot() + 0.01))
        opt.apply([0.4, 0], to: &x, state: &state)
        // v only grows: the second step on coordinate 0 is smaller than the first.
        #expect(state.second[0] == Float(0.4) * 0.4 + Float(0.4) * 0.4)
        #expect(state.second[1] == Float(0.2) * 0.2)
        let m0 = 0.5 * (0.5 * Float(0.4)) + 0.5 * 0.4
        #expect(abs(x[0] - (1 + 0.5 * (0.5 * 0.4) / (0.4 + 0.01) + 0.5 * m0 / ((0.32 as Float).squareRoot() + 0.01))) < 1e-6)
        #expect(ServerOptimizer.yogi(learningRate: 1).name == "fedyogi" && opt.name == "fedadagrad")
    }
}
