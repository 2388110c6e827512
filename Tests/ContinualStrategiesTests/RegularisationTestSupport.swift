import ContinualCore
import ContinualScenarios

/// Small fixtures shared by the EWC and SI tests: fixed networks, fixed samples, and an
/// independent float64 forward pass for finite differences.
enum Fixture {
    /// A one-layer logistic model (hidden: []) with 3 inputs and the given weights and bias.
    static func logistic(weights: [Float] = [0.4, -0.7, 0.25], bias: Float = 0.1) -> MLP {
        MLP(spec: MLPSpec(inputs: 3, hidden: [], head: .binary), parameters: weights + [bias])
    }

    /// Five fixed samples with 3 features (labels mixed).
    static let samples = Samples(
        dimension: 3,
        features: [0.5, -1.0, 2.0,
                   1.5, 0.3, -0.2,
                   -0.8, 0.9, 0.4,
                   0.1, -0.4, -1.2,
                   2.2, 1.1, 0.7],
        labels: [1, 0, 1, 0, 1])

    /// A tanh network 3-4-`head` with deterministic weights.
    static func tanhNetwork(head: OutputHead = .binary, heads: Int = 1, seed: UInt64 = 11) -> MLP {
        var rng = RandomSource(seed: seed, stream: "fixture")
        return MLP(spec: MLPSpec(inputs: 3, hidden: [4], activation: .tanh, head: head, heads: heads), rng: &rng)
    }

    /// −log p(label | x) computed in float64 from float64 parameters (independent of `MLP`).
    static func negativeLogLikelihood(spec: MLPSpec, parameters: [Double], x: [Double], label: Int, route: Int = 0) -> Double {
        var a = x
        let layers = spec.layers()
        for layer in layers {
            let w = layer.weightOffset(route: route), b = layer.biasOffset(route: route)
            var y = [Double](repeating: 0, count: layer.outputs)
            for o in 0..<layer.outputs {
                var s = parameters[b + o]
                for i in 0..<layer.inputs { s += a[i] * parameters[w + i * layer.outputs + o] }
                switch layer.activation {
                case .identity: y[o] = s
                case .tanh: y[o] = _tanh(s)
                case .relu: y[o] = max(s, 0)
                case .sigmoid: y[o] = 1 / (1 + _exp(-s))
                }
            }
            a = y
        }
        switch spec.head {
        case .binary:
            let z = a[0]
            // softplus(z) − y z
            return max(z, 0) + _log(1 + _exp(-abs(z))) - (label == 1 ? z : 0)
        case .multiclass:
            let m = a.max()!
            let lse = m + _log(a.reduce(0) { $0 + _exp($1 - m) })
            return lse - a[label]
        }
    }

    /// ∂(−log p(label|x))/∂θ by central differences in float64.
    static func finiteDifferenceGradient(model: MLP, x: [Double], label: Int, route: Int = 0, h: Double = 1e-5) -> [Double] {
        let theta = model.parameters.map(Double.init)
        return (0..<theta.count).map { i in
            var plus = theta, minus = theta
            plus[i] += h
            minus[i] -= h
            return (negativeLogLikelihood(spec: model.spec, parameters: plus, x: x, label: label, route: route)
                - negativeLogLikelihood(spec: model.spec, parameters: minus, x: x, label: label, route: route)) / (2 * h)
        }
    }

    static func sigmoid(_ z: Double) -> Double { 1 / (1 + _exp(-z)) }

    static func row(_ s: Samples, _ i: Int) -> [Double] { s.row(i).map(Double.init) }

    /// |a − b| ≤ tol · max(|a|, |b|), with an absolute floor for values that are both ~0.
    static func close(_ a: Double, _ b: Double, relative tol: Double, floor: Double = 1e-12) -> Bool {
        abs(a - b) <= tol * max(abs(a), abs(b)) || abs(a - b) <= floor
    }

    /// A small habit drift stream for end-to-end runs.
    static func stream(seed: UInt64 = 5) throws -> ExperienceStream {
        try HabitDriftScenario(trainPerExperience: 200, testPerExperience: 100).makeStream(seed: seed)
    }
}
