import ContinualCore
import ContinualFederated
import Testing

/// pFedMe (Dinh et al. 2020): its local steps against a float64 hand computation of the paper's
/// bi-level update, its server step against the mean, and its λ → ∞ limit (plain SGD).
@Suite struct PFedMeRoundTests {
    typealias P = PersonalisedFLTests
    typealias L = LocalRoundTests

    /// The paper's local steps in float64 on full batches: K inner steps
    /// θ ← θ − ν(∇f(θ) + λ(θ − w)), then w ← w − ηλ(w − θ); θ starts at w and is warm-started.
    static func byHand(_ w0: [Double], _ data: Samples, layer: Layer, lambda: Double, inner: Int, nu: Double,
                       eta: Double, steps: Int) -> (w: [Double], theta: [Double]) {
        var w = w0, theta = w0
        for _ in 0..<steps {
            for _ in 0..<inner {
                let g = P.gradient(theta, data, layer: layer)
                theta = theta.indices.map { theta[$0] - nu * (g[$0] + lambda * (theta[$0] - w[$0])) }
            }
            w = w.indices.map { w[$0] - eta * lambda * (w[$0] - theta[$0]) }
        }
        return (w, theta)
    }

    @Test("two local steps of K = 3 inner steps each equal the paper's update computed in float64")
    func localStepsByHand() {
        var rng = RandomSource(seed: 43)
        let model = MLP(spec: P.linear, rng: &rng)
        let layer = model.layers[0]
        let data = L.data(seed: 8, count: 20)
        let w0 = model.parameters.map(Double.init)
        let lambda = 2.0, nu = 0.2, eta = 0.3
        let round = PFedMeRound(lambda: Float(lambda), innerSteps: 3, personalRate: Float(nu), rate: Float(eta))
        for steps in [1, 2] {
            // Full batches: every step sees the whole set, whatever the shuffle.
            let expected = Self.byHand(w0, data, layer: layer, lambda: lambda, inner: 3, nu: nu, eta: eta, steps: steps).w
            var m = model
            var shuffle = RandomSource(seed: 1)
            let record = round.train(&m, on: data, batchSize: data.count, steps: steps, shuffle: &shuffle)
            #expect(record.steps == steps && record.rows == steps * 3 * data.count)
            #expect(record.gradientSteps == steps * 3, "every inner step is a gradient evaluation and an update")
            for i in expected.indices {
                #expect(abs(Double(m.parameters[i]) - expected[i]) <= 2e-6, "\(steps) steps, parameter \(i)")
            }
            // The update moved w by far more than the tolerance.
            #expect(zip(expected, w0).contains { abs($0 - $1) > 1e-2 })
        }
        // The warm start matters: restarting θ at w each step gives another second step.
        let oneStep = Self.byHand(w0, data, layer: layer, lambda: lambda, inner: 3, nu: nu, eta: eta, steps: 1).w
        let cold = Self.byHand(oneStep, data, layer: layer, lambda: lambda, inner: 3, nu: nu, eta: eta, steps: 1).w
        let warm = Self.byHand(w0, data, layer: layer, lambda: lambda, inner: 3, nu: nu, eta: eta, steps: 2).w
        #expect(zip(cold, warm).contains { abs($0 - $1) > 1e-4 })
        // The personal model: K inner steps from w towards w on all of the data.
        var theta = w0
        for _ in 0..<3 {
            let g = P.gradient(theta, data, layer: layer)
            theta = theta.indices.map { theta[$0] - nu * (g[$0] + lambda * (theta[$0] - w0[$0])) }
        }
        let personal = round.personalise(model, on: data, workspace: model.makeWorkspace(capacity: 7))
        for i in theta.indices { #expect(abs(Double(personal.parameters[i]) - theta[i]) <= 2e-6, "θ̂ \(i)") }
    }

    @Test("the server step: β = 1 is the aggregate itself, w + it is the sample-weighted mean of the w_i; β mixes (1 − β)w + β·mean")
    func serverStep() throws {
        var rng = RandomSource(seed: 4)
        let w = (0..<12).map { _ in Float(rng.normal()) }
        let clients = (0..<5).map { _ in (0..<12).map { _ in Float(rng.normal()) } }
        let sizes = [3, 10, 1, 7, 4]
        let updates = zip(clients, sizes).map { c, n in ClientUpdate(delta: zip(c, w).map { $0 - $1 }, samples: n) }
        let aggregate = try AggregationRule.mean.aggregate(updates)
        #expect(PFedMeRound.serverUpdate(aggregate, beta: 1) == aggregate)
        let total = Double(sizes.reduce(0, +))
        let mean = w.indices.map { j in zip(clients, sizes).reduce(0.0) { $0 + Double($1.0[j]) * Double($1.1) } / total }
        for beta in [1.0, 0.5, 2.0] {
            let step = PFedMeRound.serverUpdate(aggregate, beta: Float(beta))
            for j in w.indices {
                let expected = (1 - beta) * Double(w[j]) + beta * mean[j]
                #expect(abs(Double(w[j] + step[j]) - expected) <= 1e-5, "β = \(beta), coordinate \(j)")
            }
        }
    }

    /// η-SGD on the same batches the round draws (the same shuffle), for the λ → ∞ limit.
    static func sgd(_ model: MLP, _ data: Samples, eta: Float, batch: Int, steps: Int, seed: UInt64) -> [Float] {
        var m = model
        var shuffle = RandomSource(seed: seed)
        var order = Array(0..<data.count)
        shuffle.shuffle(&order)
        var cursor = 0
        let ws = m.makeWorkspace(capacity: batch)
        for _ in 0..<steps {
            if cursor >= data.count {
                shuffle.shuffle(&order)
                cursor = 0
            }
            let rows = order[cursor..<min(cursor + batch, data.count)]
            cursor += rows.count
            let (g, _) = PerFedAvgRound.meanGradient(m, data, rows: rows, workspace: ws)
            for i in g.indices { m.parameters[i] -= eta * g[i] }
        }
        return m.parameters
    }

    @Test("λ → ∞ with ν = 1/λ: a local step is SGD at rate η on the same batch (FedAvg), and θ̂(w) → w")
    func largeLambdaIsSGD() {
        // With ν = 1/λ the inner step lands at θ = w − ∇f(θ′)/λ, so w ← w − η∇f(θ′) with
        // θ′ − w = O(1/λ): the difference to SGD shrinks like 1/λ. Tested at λ = 1000, 5 steps of
        // batch 8 (the order reshuffled once), MLP 4 → 8 → 3.
        var rng = RandomSource(seed: 12)
        let model = MLP(spec: L.spec, rng: &rng)
        let data = L.data(seed: 3, count: 24)
        let eta: Float = 0.2
        let plain = Self.sgd(model, data, eta: eta, batch: 8, steps: 5, seed: 77)
        func pfedme(_ lambda: Float, nu: Float) -> [Float] {
            var m = model
            var shuffle = RandomSource(seed: 77)
            _ = PFedMeRound(lambda: lambda, innerSteps: 4, personalRate: nu, rate: eta)
                .train(&m, on: data, batchSize: 8, steps: 5, shuffle: &shuffle)
            return m.parameters
        }
        let far = pfedme(1000, nu: 1.0 / 1000)
        let gap = zip(far, plain).map { abs($0 - $1) }.max()!
        #expect(gap <= 2e-4, "max |pFedMe − SGD| = \(gap)")
        // At λ = 1 pFedMe is far from SGD, so the comparison can fail.
        let near = pfedme(1, nu: 0.1)
        #expect(zip(near, plain).map { abs($0 - $1) }.max()! > 1e-2)
        // The moved distance is not negligible: SGD itself moved w.
        #expect(zip(plain, model.parameters).map { abs($0 - $1) }.max()! > 1e-2)
        // The personal model approaches w: ‖θ̂ − w‖∞ = O(1/λ).
        let personal = PFedMeRound(lambda: 1000, innerSteps: 4, personalRate: 1.0 / 1000, rate: eta)
            .personalise(model, on: data, workspace: model.makeWorkspace(capacity: 16))
        #expect(zip(personal.parameters, model.parameters).map { abs($0 - $1) }.max()! <= 2e-3)
        let loose = PFedMeRound(lambda: 1, innerSteps: 4, personalRate: 0.5, rate: eta)
            .personalise(model, on: data, workspace: model.makeWorkspace(capacity: 16))
        #expect(zip(loose.parameters, model.parameters).map { abs($0 - $1) }.max()! > 1e-2)
    }

    @Test("pFedMe's round takes one local step per batch of its epochs, or exactly local_steps")
    func stepCount() {
        let round = PFedMeRound(lambda: 15, innerSteps: 5, personalRate: 0.05, rate: 0.05)
        #expect(round.steps(samples: 100, batchSize: 16, epochs: 1, maxSteps: nil) == 7)
        #expect(round.steps(samples: 100, batchSize: 16, epochs: 2, maxSteps: nil) == 14)
        #expect(round.steps(samples: 5, batchSize: 16, epochs: 1, maxSteps: nil) == 1)
        #expect(round.steps(samples: 100, batchSize: 16, epochs: 1, maxSteps: 3) == 3)
    }
}
