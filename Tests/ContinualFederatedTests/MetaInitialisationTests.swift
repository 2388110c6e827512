import ContinualCore
import ContinualFederated
import Testing

/// Reptile, FOMAML and FedAvg outer steps against float64 softmax regression computed by hand
/// (PersonalisedFLTests' closed-form gradient), and the limits that pin them down.
@Suite struct MetaInitialisationTests {
    typealias P = PersonalisedFLTests

    static func model() -> MLP {
        var rng = RandomSource(seed: 5)
        return MLP(spec: P.linear, rng: &rng)
    }

    /// Two tasks with different label rules, so the tasks' adapted models differ.
    static func tasks(innerSteps: Int) -> [MetaInitialisation.Task] {
        let a = LocalRoundTests.data(seed: 1, count: 6), b = LocalRoundTests.data(seed: 2, count: 9)
        let qa = LocalRoundTests.data(seed: 3, count: 5), qb = LocalRoundTests.data(seed: 4, count: 7)
        var flipped = b
        flipped.labels = flipped.labels.map { ($0 + 1) % 3 }
        return [.init(inner: Array(repeating: a, count: innerSteps), query: qa),
                .init(inner: Array(repeating: flipped, count: innerSteps), query: qb)]
    }

    /// φ after `steps` float64 full-batch SGD steps of α from θ.
    static func adapted(_ theta: [Double], _ data: Samples, steps: Int, alpha: Double, layer: Layer) -> [Double] {
        var phi = theta
        for _ in 0..<steps {
            let g = P.gradient(phi, data, layer: layer)
            phi = phi.indices.map { phi[$0] - alpha * g[$0] }
        }
        return phi
    }

    @Test("Reptile: θ + ε·mean(φᵢ − θ), φᵢ = k SGD steps on task i's support, by hand in float64")
    func reptileOuterStep() {
        let m = Self.model(), layer = m.layers[0]
        let theta = m.parameters.map(Double.init)
        let (alpha, eps, k) = (0.3, 0.4, 3)
        let tasks = Self.tasks(innerSteps: k)
        let phis = tasks.map { Self.adapted(theta, $0.inner[0], steps: k, alpha: alpha, layer: layer) }
        let expected = theta.indices.map { i in theta[i] + eps * phis.map { $0[i] - theta[i] }.reduce(0, +) / 2 }
        var got = m
        let record = MetaInitialisation(method: .reptile, innerRate: Float(alpha), outerRate: Float(eps))
            .outerStep(&got, tasks: tasks, workspace: m.makeWorkspace(capacity: 4))
        #expect(record.rows == 3 * 6 + 3 * 9)
        for i in expected.indices { #expect(abs(Double(got.parameters[i]) - expected[i]) <= 2e-6, "parameter \(i)") }
        // The step moved θ by far more than the tolerance.
        #expect(zip(expected, theta).contains { abs($0 - $1) > 1e-2 })
    }

    @Test("FOMAML: θ − β·mean ∇L_query,i(φᵢ), the query gradient at the adapted parameters")
    func fomamlOuterStep() {
        let m = Self.model(), layer = m.layers[0]
        let theta = m.parameters.map(Double.init)
        let (alpha, beta, k) = (0.3, 0.7, 2)
        let tasks = Self.tasks(innerSteps: k)
        let grads = tasks.map { t in P.gradient(Self.adapted(theta, t.inner[0], steps: k, alpha: alpha, layer: layer), t.query, layer: layer) }
        let expected = theta.indices.map { i in theta[i] - beta * (grads[0][i] + grads[1][i]) / 2 }
        // Taking the query gradient at θ instead of φ (a wrong implementation) lands elsewhere.
        let atTheta = tasks.map { P.gradient(theta, $0.query, layer: layer) }
        let wrong = theta.indices.map { i in theta[i] - beta * (atTheta[0][i] + atTheta[1][i]) / 2 }
        #expect(zip(expected, wrong).contains { abs($0 - $1) > 1e-3 })
        var got = m
        let record = MetaInitialisation(method: .fomaml, innerRate: Float(alpha), outerRate: Float(beta))
            .outerStep(&got, tasks: tasks, workspace: m.makeWorkspace(capacity: 3))
        #expect(record.rows == 2 * 6 + 2 * 9 + 5 + 7)
        for i in expected.indices { #expect(abs(Double(got.parameters[i]) - expected[i]) <= 2e-6, "parameter \(i)") }
    }

    @Test("ε = 0 leaves θ exactly where it was; FedAvg is the mean of the adapted models (Reptile at ε = 1)")
    func limits() {
        let m = Self.model()
        let tasks = Self.tasks(innerSteps: 4)
        var frozen = m
        for _ in 0..<3 {
            MetaInitialisation(method: .reptile, innerRate: 0.5, outerRate: 0).outerStep(&frozen, tasks: tasks, workspace: m.makeWorkspace())
        }
        #expect(frozen.parameters == m.parameters)
        let layer = m.layers[0]
        let theta = m.parameters.map(Double.init)
        let phis = tasks.map { Self.adapted(theta, $0.inner[0], steps: 4, alpha: 0.5, layer: layer) }
        var avg = m
        MetaInitialisation(method: .fedavg, innerRate: 0.5, outerRate: 0.123).outerStep(&avg, tasks: tasks, workspace: m.makeWorkspace())
        for i in theta.indices { #expect(abs(Double(avg.parameters[i]) - (phis[0][i] + phis[1][i]) / 2) <= 2e-6) }
        var reptileOne = m
        MetaInitialisation(method: .reptile, innerRate: 0.5, outerRate: 1).outerStep(&reptileOne, tasks: tasks, workspace: m.makeWorkspace())
        #expect(reptileOne.parameters == avg.parameters)
    }

    @Test("k-step personalisation is k full-batch SGD steps; 0 steps is the initialisation")
    func adapt() {
        let m = Self.model(), layer = m.layers[0]
        let data = LocalRoundTests.data(seed: 9, count: 11)
        let ws = m.makeWorkspace(capacity: 4)
        #expect(MetaInitialisation.adapt(m, on: data, steps: 0, rate: 0.2, workspace: ws).parameters == m.parameters)
        let five = MetaInitialisation.adapt(m, on: data, steps: 5, rate: 0.2, workspace: ws)
        let expected = Self.adapted(m.parameters.map(Double.init), data, steps: 5, alpha: 0.2, layer: layer)
        for i in expected.indices { #expect(abs(Double(five.parameters[i]) - expected[i]) <= 2e-6) }
        // Steps compose: 2 then 3 is 5, bit for bit.
        let two = MetaInitialisation.adapt(m, on: data, steps: 2, rate: 0.2, workspace: ws)
        #expect(MetaInitialisation.adapt(two, on: data, steps: 3, rate: 0.2, workspace: ws).parameters == five.parameters)
    }
}
