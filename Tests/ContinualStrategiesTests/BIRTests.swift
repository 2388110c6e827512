@testable import ContinualCore
@testable import ContinualStrategies
import Foundation
import Testing

@Suite("BIR") struct BIRTests {
    /// A small generator (hidden [5, 4] → decoder 4, 5; 3 classes; latent 2) moved off its
    /// initialisation, with rows: two one-hot class weights and one soft row.
    static func fixture(conditional: Bool = true, gateProportion: Double = 0.5)
        -> (gen: FeedbackGenerator, h: [Float], x: [Float], pi: [Float], w: [Float], noise: [Float]) {
        var rng = RandomSource(seed: 9), gates = RandomSource(seed: 4)
        var gen = FeedbackGenerator(hidden: [5, 4], outputs: 3, classes: 3, latent: 2, conditional: conditional,
                                    gateProportion: gateProportion, reconstruction: .gaussian, rng: &rng, gateRNG: &gates)
        gen.parameters = gen.parameters.map { $0 + Float(rng.uniform() - 0.5) * 0.6 }
        let n = 3
        let h = (0..<(n * 4)).map { _ in Float(rng.uniform()) * 1.5 }
        let x = (0..<(n * 3)).map { _ in Float(rng.normal()) }
        let pi: [Float] = [0, 1, 0, 1, 0, 0, 0.2, 0.5, 0.3]
        let noise = (0..<(n * 2)).map { _ in Float(rng.normal()) }
        return (gen, h, x, pi, [0.5, 0.3, 0.2], noise)
    }

    /// The KL estimate of each row against a float64 recomputation in the z-form:
    /// Σ_j log N(z_j; μ_j, σ_j²) − log Σ_c π_c Π_j N(z_j; m_cj, e^{s_cj}) with plain sums of exponentials.
    @Test func klAgainstFloat64Recomputation() {
        let (gen, h, _, pi, _, noise) = Self.fixture()
        let ws = gen.toZ.makeWorkspace(capacity: 3)
        h.withUnsafeBufferPointer { gen.toZ.forward($0.baseAddress!, count: 3, route: 0, workspace: ws) }
        let e = ws.logits, Z = 2
        var z = [Float](repeating: 0, count: 6)
        for i in 0..<3 { for j in 0..<Z { z[i * Z + j] = e[i * 4 + j] + Float(_exp(0.5 * Double(e[i * 4 + Z + j]))) * noise[i * Z + j] } }
        func logNormal(_ v: Double, _ m: Double, _ lv: Double) -> Double { -0.5 * _log(2 * .pi) - 0.5 * lv - 0.5 * (v - m) * (v - m) / _exp(lv) }
        for i in 0..<3 {
            var dz = [Double](repeating: 0, count: 6), dlv = dz, dp = [Double](repeating: 0, count: 12)
            let got = gen.klEstimate(row: i, z: z, e: e, noise: noise, pi: pi[(i * 3)..<(i * 3 + 3)], scale: 1,
                                     dz: &dz, dlv: &dlv, dPrior: &dp)
            var logQ = 0.0, p = 0.0
            for j in 0..<Z { logQ += logNormal(Double(z[i * Z + j]), Double(e[i * 4 + j]), Double(e[i * 4 + Z + j])) }
            for c in 0..<3 {
                var q = 0.0
                for j in 0..<Z { q += logNormal(Double(z[i * Z + j]), Double(gen.priorMeans[c * Z + j]), Double(gen.priorLogVariances[c * Z + j])) }
                p += Double(pi[i * 3 + c]) * _exp(q)
            }
            let want = logQ - _log(p)
            #expect(abs(got - want) < 1e-5 * max(1, abs(want)), "row \(i): \(got) vs \(want)")
        }
    }

    /// With a one-hot class, the estimate averaged over the noise is the closed-form KL to that
    /// class's mode (and not to another's).
    @Test func klEstimateAveragesToTheClassModesClosedForm() {
        var (gen, _, _, _, _, _) = Self.fixture()
        gen.priorMeans = [0.5, -1, 2, 0.3, -0.7, 1.1]
        gen.priorLogVariances = [0.2, -0.4, 0.5, 0.1, -0.3, 0.6]
        let mu: [Float] = [0.4, -0.6], lv: [Float] = [-0.5, 0.3]
        var rng = RandomSource(seed: 3)
        let samples = 40_000
        for y in 0..<3 {
            var e: [Float] = mu + lv, sum = 0.0
            let pi = ArraySlice((0..<3).map { Float($0 == y ? 1 : 0) })
            for _ in 0..<samples {
                let eps = [Float(rng.normal()), Float(rng.normal())]
                let z = (0..<2).map { mu[$0] + Float(_exp(0.5 * Double(lv[$0]))) * eps[$0] }
                var a = [Double](repeating: 0, count: 2), b = a, c = [Double](repeating: 0, count: 12)
                sum += e.withUnsafeMutableBufferPointer {
                    gen.klEstimate(row: 0, z: z, e: $0.baseAddress!, noise: eps, pi: pi, scale: 1, dz: &a, dlv: &b, dPrior: &c)
                }
            }
            var closed = 0.0
            for j in 0..<2 {
                let m = Double(gen.priorMeans[y * 2 + j]), s = Double(gen.priorLogVariances[y * 2 + j])
                closed += 0.5 * (s - Double(lv[j]) + (_exp(Double(lv[j])) + (Double(mu[j]) - m) * (Double(mu[j]) - m)) / _exp(s) - 1)
            }
            #expect(abs(sum / Double(samples) - closed) < 0.03, "class \(y): \(sum / Double(samples)) vs \(closed)")
        }
    }

    /// ∂(Σ w_i (reconstruction_i + KL_i))/∂θ (toZ, gated decoder, prior) and ∂/∂h against central
    /// differences with the noise fixed, conditional and not.
    @Test(arguments: [true, false]) func gradientMatchesFiniteDifferences(conditional: Bool) {
        let (gen, h, x, pi, w, noise) = Self.fixture(conditional: conditional)
        var g = [Float](repeating: 0, count: gen.parameterCount), dh = [Float](repeating: 0, count: h.count)
        _ = g.withUnsafeMutableBufferPointer { gp in
            dh.withUnsafeMutableBufferPointer { gen.loss(h: h, x: x, pi: pi, weights: w, noise: noise, gradient: gp.baseAddress!, hiddenGradient: $0.baseAddress!) }
        }
        // 2e-3: a 1e-2 step moved one decoder pre-activation across ReLU's kink (one bias, 0.117 vs 0.105).
        let step: Float = 2e-3
        let theta = gen.parameters
        for i in theta.indices {
            var plus = gen, minus = gen
            var p = theta, m = theta
            p[i] += step; m[i] -= step
            plus.parameters = p; minus.parameters = m
            let numeric = (plus.loss(h: h, x: x, pi: pi, weights: w, noise: noise) - minus.loss(h: h, x: x, pi: pi, weights: w, noise: noise)) / Double(2 * step)
            #expect(abs(numeric - Double(g[i])) < 3e-3 * max(1, abs(numeric)), "parameter \(i): \(g[i]) vs \(numeric)")
        }
        for i in h.indices {
            var p = h, m = h
            p[i] += step; m[i] -= step
            let numeric = (gen.loss(h: p, x: x, pi: pi, weights: w, noise: noise) - gen.loss(h: m, x: x, pi: pi, weights: w, noise: noise)) / Double(2 * step)
            #expect(abs(numeric - Double(dh[i])) < 3e-3 * max(1, abs(numeric)), "h \(i): \(dh[i]) vs \(numeric)")
        }
        if conditional { #expect(g.suffix(12).filter { $0 != 0 }.count >= 8, "the prior's used modes get a gradient") }
    }

    /// A class's decoder units outside its mask are exactly zero, in every gated layer; inside
    /// the mask they follow ReLU. The masks are drawn from the seeded stream with about
    /// `gate_proportion` of the units off, the same for the same stream.
    @Test func gatesZeroTheUnitsOutsideTheClassMask() {
        var rng = RandomSource(seed: 1), gateRNG = RandomSource(seed: 2)
        let gen = FeedbackGenerator(hidden: [300, 200], outputs: 6, classes: 4, latent: 3, conditional: true, gateProportion: 0.8,
                                    reconstruction: .gaussian, rng: &rng, gateRNG: &gateRNG)
        var again = RandomSource(seed: 2), r2 = RandomSource(seed: 1)
        let twin = FeedbackGenerator(hidden: [300, 200], outputs: 6, classes: 4, latent: 3, conditional: true, gateProportion: 0.8,
                                     reconstruction: .gaussian, rng: &r2, gateRNG: &again)
        #expect(twin.gates == gen.gates)
        let off = gen.gates.flatMap { $0 }.filter { $0 == 0 }.count, all = gen.gates.reduce(0) { $0 + $1.count }
        #expect(abs(Double(off) / Double(all) - 0.8) < 0.03, "\(off) of \(all) off")
        #expect(gen.gates[0][0..<200] != gen.gates[0][200..<400], "classes get different masks")
        for c in 0..<4 {
            let z = (0..<(5 * 3)).map { _ in Float(rng.normal()) }
            var pi = [Float](repeating: 0, count: 20)
            for i in 0..<5 { pi[i * 4 + c] = 1 }
            let (spaces, _, _) = gen.decode(z, pi: pi, count: 5)
            for k in 0..<2 {
                let w = gen.decoder[k].logitCount, y = spaces[k + 1].activation(0), pre = spaces[k].logits
                for i in 0..<5 {
                    for u in 0..<w {
                        let v = y[i * w + u]
                        if gen.gates[k][c * w + u] == 0 { #expect(v.bitPattern == 0, "class \(c) layer \(k) unit \(u): \(v)") } else {
                            #expect(v == max(pre[i * w + u], 0))
                        }
                    }
                }
            }
        }
    }

    /// The distillation term on hand-computed rows, and its gradient against central differences.
    @Test func distillationByHandAndFiniteDifferences() {
        // Previous logits [1, −1, (unseen) 5] at T = 2: targets softmax([0.5, −0.5]) = [0.7311, 0.2689, 0].
        let previous: [Float] = [1, -1, 5]
        let t = previous.withUnsafeBufferPointer { FeedbackGenerator.softTargets(logits: $0.baseAddress!, seen: [true, true, false], temperature: 2) }
        #expect(abs(t[0] - 1 / (1 + _exp(-1))) < 1e-12 && t[2] == 0)
        let z: [Float] = [2, 0, -2]
        let (loss, g) = z.withUnsafeBufferPointer { FeedbackGenerator.distillation(logits: $0.baseAddress!, targets: t, active: nil, temperature: 2) }
        // q = softmax([1, 0, −1]); loss = −4 Σ t_c log q_c; gradient 2(q − t).
        let one: Double = 1
        let lse: Double = _log(_exp(one) + one + _exp(-one))
        let q: [Double] = [_exp(one - lse), _exp(-lse), _exp(-one - lse)]
        let want: Double = -4 * (t[0] * (one - lse) - t[1] * lse)
        #expect(abs(loss - want) < 1e-9)
        for c in 0..<3 { #expect(abs(g[c] - 2 * (q[c] - t[c])) < 1e-9) }
        // Active classes {0, 1} only: the third logit is out of the softmax and gets no gradient.
        let (_, ga) = z.withUnsafeBufferPointer { FeedbackGenerator.distillation(logits: $0.baseAddress!, targets: t, active: [true, true, false], temperature: 2) }
        #expect(ga[2] == 0 && abs(ga[0] + ga[1]) < 1e-12)
        for c in 0..<3 {
            var p = z, m = z
            p[c] += 1e-3; m[c] -= 1e-3
            let lp = p.withUnsafeBufferPointer { FeedbackGenerator.distillation(logits: $0.baseAddress!, targets: t, active: nil, temperature: 2).loss }
            let lm = m.withUnsafeBufferPointer { FeedbackGenerator.distillation(logits: $0.baseAddress!, targets: t, active: nil, temperature: 2).loss }
            #expect(abs((lp - lm) / 2e-3 - g[c]) < 1e-3)
        }
    }
}
