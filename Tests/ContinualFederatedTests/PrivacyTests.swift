import ContinualCore
import ContinualFederated
import Foundation
import Testing

/// Clipping, DP-FedAvg's noisy mean, and the RDP accountant against closed forms and against
/// values from Google's dp-accounting (the Python test compares a whole grid through the CLI).
@Suite struct PrivacyTests {
    func norm(_ v: [Float]) -> Double { v.reduce(0.0) { $0 + Double($1) * Double($1) }.squareRoot() }

    @Test func clippedNormsNeverExceedTheBound() {
        var rng = RandomSource(seed: 11)
        for trial in 0..<2000 {
            let d = 1 + rng.uniformInt(below: 300)
            let scale = [1e-30, 1e-3, 1, 7, 1e6, 1e30][trial % 6]
            var v = (0..<d).map { _ in Float(rng.normal() * scale) }
            let before = v
            let bound = [0.1, 1, 3.7, 1e5][trial % 4]
            let factor = clipToNorm(&v, bound: bound)
            #expect(norm(v) <= bound)
            if norm(before) <= bound {
                #expect(v == before && factor == 1)
            } else {
                // Same direction, at the bound (within Float rounding).
                #expect(zip(v, before).allSatisfy { $0 == $1 * factor })
                #expect(norm(v) > bound * (1 - 1e-6))
            }
        }
    }

    @Test func noiselessDPAggregationIsTheClippedSumOverExpectedClients() throws {
        let updates = [ClientUpdate(delta: [3, 4], samples: 10), ClientUpdate(delta: [0.3, 0.4], samples: 1)]
        var rng = RandomSource(seed: 1)
        // C = 1: (3, 4) → (0.6, 0.8); (0.3, 0.4) unchanged. Sum (0.9, 1.2) / 4 expected clients.
        let mean = try GaussianAggregation(clipNorm: 1, noiseMultiplier: 0).aggregate(updates, expectedClients: 4, random: &rng)
        #expect(abs(Double(mean[0]) - 0.225) < 1e-7 && abs(Double(mean[1]) - 0.3) < 1e-7)
    }

    @Test func dpNoiseHasTheStatedStandardDeviationAndIsFixedBySeed() throws {
        let d = 40_000
        let updates = [ClientUpdate(delta: [Float](repeating: 0, count: d), samples: 1)]
        let mechanism = GaussianAggregation(clipNorm: 2, noiseMultiplier: 1.5)
        var a = RandomSource(seed: 5), b = RandomSource(seed: 5)
        let x = try mechanism.aggregate(updates, expectedClients: 10, random: &a)
        #expect(try x == mechanism.aggregate(updates, expectedClients: 10, random: &b))
        // Expected sd σ·C / (qN) = 0.3. The sample sd of 40,000 normals has relative standard
        // error 1/√(2·40,000) ≈ 0.35 %; 2 % is over 5 standard errors.
        let m = x.reduce(0.0) { $0 + Double($1) } / Double(d)
        let sd = (x.reduce(0.0) { $0 + (Double($1) - m) * (Double($1) - m) } / Double(d - 1)).squareRoot()
        #expect(abs(sd - 0.3) / 0.3 < 0.02)
        #expect(abs(m) < 5 * 0.3 / Double(d).squareRoot())
    }

    @Test func gaussianMechanismRDPIsAlphaOverTwoSigmaSquared() {
        for a in [1.5, 2, 7, 32.5, 1024] {
            #expect(RDPAccountant.subsampledGaussianRDP(q: 1, sigma: 0.7, order: a) == a / (2 * 0.7 * 0.7))
        }
        #expect(RDPAccountant.subsampledGaussianRDP(q: 0, sigma: 0.7, order: 3) == 0)
        #expect(RDPAccountant.subsampledGaussianRDP(q: 0.1, sigma: 0, order: 3) == .infinity)
    }

    @Test func orderTwoMatchesItsClosedForm() {
        // A₂ = (1−q)² + 2q(1−q) + q² e^{1/σ²} = 1 + q²(e^{1/σ²} − 1).
        for (q, s) in [(0.01, 1.1), (0.3, 0.8), (0.9, 4.0)] {
            let closed = log1p(q * q * expm1(1 / (s * s)))
            let r = RDPAccountant.subsampledGaussianRDP(q: q, sigma: s, order: 2)
            #expect(abs(r - closed) <= 1e-12 * closed)
        }
    }

    @Test func fractionalSeriesAgreesWithTheIntegerSumNearIntegerOrders() {
        // Two different formulas (binomial sum vs erfc-tailed series) must meet at integer α.
        for (q, s) in [(0.01, 1.1), (0.05, 2.0), (0.2, 1.0)] {
            for a in [2.0, 3, 8, 20] {
                let exact = RDPAccountant.subsampledGaussianRDP(q: q, sigma: s, order: a)
                let near = RDPAccountant.subsampledGaussianRDP(q: q, sigma: s, order: a + 1e-9)
                #expect(abs(near - exact) <= 1e-6 * exact, "q \(q) σ \(s) α \(a): \(near) vs \(exact)")
            }
        }
    }

    /// Reference ε from Google's dp-accounting 0.6.0 (`RdpAccountant`, `PoissonSampledDpEvent` of a
    /// `GaussianDpEvent`, default orders), computed once; the CI's Python test recomputes a grid.
    @Test(arguments: [
        (0.01, 1.1, 10_000, 1e-5, 5.632010670081592, 4.7),
        (0.1, 0.8, 100, 1e-6, 13.95042830217513, 2.5),
        (0.001, 2.0, 1000, 1e-8, 0.2599131170823472, 55.0),
        (1.0, 5.0, 50, 1e-5, 7.077391578166641, 4.2),
        (0.5, 0.5, 3, 1e-5, 17.778565960647917, 2.2),
    ])
    func epsilonMatchesDPAccounting(_ c: (Double, Double, Int, Double, Double, Double)) {
        var acc = RDPAccountant()
        acc.compose(samplingRate: c.0, noiseMultiplier: c.1, rounds: c.2)
        let (eps, order) = acc.epsilon(delta: c.3)
        #expect(abs(eps - c.4) <= 1e-6 * c.4, "ε \(eps), dp-accounting \(c.4)")
        #expect(order == c.5)
    }

    @Test func epsilonGrowsWithRoundsAndShrinksWithNoise() {
        var last = 0.0
        var acc = RDPAccountant()
        for _ in 0..<10 {
            acc.compose(samplingRate: 0.05, noiseMultiplier: 1.2, rounds: 50)
            let e = acc.epsilon(delta: 1e-5).epsilon
            #expect(e > last)
            last = e
        }
        var lastNoise = Double.infinity
        for s in [0.6, 0.9, 1.3, 2.0, 4.0] {
            var a = RDPAccountant()
            a.compose(samplingRate: 0.05, noiseMultiplier: s, rounds: 100)
            let e = a.epsilon(delta: 1e-5).epsilon
            #expect(e < lastNoise)
            lastNoise = e
        }
        // Nothing spent: ε = 0 at any δ, including δ = 0.
        #expect(RDPAccountant().epsilon(delta: 1e-5).epsilon == 0)
        #expect(RDPAccountant().epsilon(delta: 0).epsilon == 0)
    }
}
