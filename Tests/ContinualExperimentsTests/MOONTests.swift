import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// MOON (Li, He & Song 2021) against its equations: ℓ_con = −log(e^{s_g/τ} / (e^{s_g/τ} + e^{s_p/τ}))
/// on cosine similarities of penultimate representations, weighted by μ, and its gradient.
@Suite("MOON")
struct MOONTests {
    static let spec = MLPSpec(inputs: 3, hidden: [4, 3], activation: .tanh, head: .multiclass(classes: 2))

    /// The representation (second hidden layer's tanh activations) in double precision, from the
    /// parameters' layout: per layer W [inputs × outputs] row-major, then b.
    static func represent(_ p: [Double], _ x: [Double]) -> [Double] {
        var a = x, offset = 0
        for (inputs, outputs) in [(3, 4), (4, 3)] {
            a = (0..<outputs).map { u in
                tanh(p[offset + inputs * outputs + u] + (0..<inputs).reduce(0.0) { $0 + a[$1] * p[offset + $1 * outputs + u] })
            }
            offset += inputs * outputs + outputs
        }
        return a
    }

    static func cosine(_ a: [Double], _ b: [Double]) -> Double {
        let dot = zip(a, b).reduce(0.0) { $0 + $1.0 * $1.1 }
        let n = (a.reduce(0.0) { $0 + $1 * $1 } * b.reduce(0.0) { $0 + $1 * $1 }).squareRoot()
        return dot / max(n, 1e-8)
    }

    /// The paper's eq. 3, μ-weighted and averaged over the rows.
    static func loss(_ p: [Double], global: [Double], previous: [Double], x: [[Double]], mu: Double, tau: Double) -> Double {
        x.reduce(0.0) { total, row in
            let z = represent(p, row), sg = cosine(z, represent(global, row)), sp = cosine(z, represent(previous, row))
            return total - log(exp(sg / tau) / (exp(sg / tau) + exp(sp / tau)))
        } * mu / Double(x.count)
    }

    /// The term's value and the parameter gradient it adds, on `x` (4 rows, scale 1/4).
    static func term(model: MLP, global: [Float], previous: [Float], x: [[Float]], mu: Double, tau: Double) throws -> (Double, [Float]) {
        var model = model
        var term = MoonTerm(mu: mu, temperature: tau)
        try term.prepare(model: &model, context: RunContext(seed: 1, pluginIndex: 0, experienceCount: 1, dimension: 3,
                                                            head: spec.head, training: TrainingOptions(batchSize: 4)))
        term.global = global
        term.previous = previous
        var batch = Batch(dimension: 3, capacity: 4)
        for row in x { batch.append(features: row, label: 0, route: 0) }
        var logits = [Float](repeating: 0, count: 8), logitGradient = logits
        var gradient = [Float](repeating: 0, count: model.parameterCount)
        let value = logits.withUnsafeMutableBufferPointer { z in
            logitGradient.withUnsafeMutableBufferPointer { g in
                gradient.withUnsafeMutableBufferPointer { pg in
                    term.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<x.count)[...], route: 0, logits: UnsafePointer(z.baseAddress!),
                                                     logitGradient: g.baseAddress!, logitCount: 2, scale: 1 / Float(x.count), model: model,
                                                     experienceIndex: 0, parameterGradient: pg.baseAddress!))
                }
            }
        }
        #expect(logitGradient.allSatisfy { $0 == 0 }, "the term leaves the logits' gradient alone")
        return (value, gradient)
    }

    @Test("the term's value is eq. 3's and its gradient matches finite differences; the output layer gets none")
    func valueAndGradient() throws {
        var rng = RandomSource(seed: 3)
        let model = MLP(spec: Self.spec, rng: &rng)
        let P = 3 * 4 + 4 + 4 * 3 + 3
        let global = (0..<P).map { model.parameters[$0] + Float(0.3 * rng.normal()) }
        let previous = (0..<P).map { model.parameters[$0] + Float(0.3 * rng.normal()) }
        let x = (0..<4).map { _ in (0..<3).map { _ in Float(rng.normal()) } }
        let (value, gradient) = try Self.term(model: model, global: global, previous: previous, x: x, mu: 2, tau: 0.5)
        let p = model.parameters.prefix(P).map(Double.init), xs = x.map { $0.map(Double.init) }
        let g = global.map(Double.init), pr = previous.map(Double.init)
        #expect(abs(value - Self.loss(p, global: g, previous: pr, x: xs, mu: 2, tau: 0.5)) < 1e-5)
        #expect(value > 0)
        let eps = 1e-5
        for i in 0..<P {
            var a = p, b = p
            a[i] += eps
            b[i] -= eps
            let fd = (Self.loss(a, global: g, previous: pr, x: xs, mu: 2, tau: 0.5) - Self.loss(b, global: g, previous: pr, x: xs, mu: 2, tau: 0.5)) / (2 * eps)
            #expect(abs(fd - Double(gradient[i])) < 1e-4 + 1e-3 * abs(fd), "parameter \(i): fd \(fd), analytic \(gradient[i])")
        }
        #expect(gradient[P...].allSatisfy { $0 == 0 }, "the output layer is not part of the representation")
    }

    @Test("previous model = global model: ℓ_con = log 2 per row and no gradient; no previous model: no term")
    func degenerateCases() throws {
        var rng = RandomSource(seed: 4)
        let model = MLP(spec: Self.spec, rng: &rng)
        let global = Array(model.parameters.prefix(31)).map { $0 + 0.1 }
        let x = (0..<4).map { _ in (0..<3).map { _ in Float(rng.normal()) } }
        let (same, gradient) = try Self.term(model: model, global: global, previous: global, x: x, mu: 5, tau: 0.5)
        #expect(abs(same - 5 * log(2)) < 1e-12)
        #expect(gradient.allSatisfy { $0 == 0 })
        let (none, noGradient) = try Self.term(model: model, global: global, previous: [], x: x, mu: 5, tau: 0.5)
        #expect(none == 0 && noGradient.allSatisfy { $0 == 0 })
        // Large similarity gaps at a small temperature stay finite (softplus without overflow).
        let far = ContinualExperiments.MoonTerm.contrastive(z: [1, 0][...], global: [-1, 0][...], previous: [1, 0][...], temperature: 0.001)
        #expect(abs(far.loss - 2000) < 1e-9 && far.gradient.allSatisfy(\.isFinite))
    }

    @Test("a client's first round has no previous model: one round of MOON is FedAvg's, bit for bit; later rounds differ")
    func firstRoundIsFedAvg() throws {
        let fedavg = FederationRunner.execute(try FederationTests.run(#"{"rounds": 1, "clients_per_round": 6}"#))
        let moon = FederationRunner.execute(try FederationTests.run(#"{"rounds": 1, "clients_per_round": 6, "moon": {"mu": 5}}"#))
        #expect(moon.status == .completed, "\(moon.message)")
        #expect(moon.outcome!.finalModel.parameters == fedavg.outcome!.finalModel.parameters)
        let three = FederationRunner.execute(try FederationTests.run(#"{"rounds": 3, "clients_per_round": 12, "moon": {"mu": 5}}"#))
        let threeAvg = FederationRunner.execute(try FederationTests.run(#"{"rounds": 3, "clients_per_round": 12}"#))
        #expect(three.outcome!.finalModel.parameters != threeAvg.outcome!.finalModel.parameters)
    }

    @Test("bad MOON settings name their key and what is allowed")
    func settingsAreChecked() throws {
        for (federation, expected) in [
            (#"{"rounds": 2, "moon": {"mu": 0}}"#, ".federation.moon.mu: must be a finite number in (0, 1e6]"),
            (#"{"rounds": 2, "moon": {"mu": 1, "temperature": 0}}"#, ".federation.moon.temperature: must be in [0.001, 1000]"),
            (#"{"rounds": 2, "moon": {"mu": 1, "tau": 0.5}}"#, ".federation.moon.tau"),
            (#"{"rounds": 2, "personal": "pfedme", "moon": {"mu": 1}}"#, ".federation.moon: MOON's term joins the local loop"),
        ] {
            #expect {
                _ = try FederationTests.run(federation)
            } throws: { error in
                "\(error)".contains(expected)
            }
        }
    }
}
