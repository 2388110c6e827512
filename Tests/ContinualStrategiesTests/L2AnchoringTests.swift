import ContinualCore
import ContinualStrategies
import Testing

@Suite struct L2AnchoringTests {
    /// The penalty's gradient against central finite differences of its value, at an anchor set
    /// by `afterExperience`.
    @Test func penaltyGradientMatchesFiniteDifferences() throws {
        var rng = RandomSource(seed: 4)
        var model = MLP(spec: MLPSpec(inputs: 3, hidden: [4]), rng: &rng)
        var plugin = L2Anchoring(options: .init(lambda: 0.7))
        try plugin.afterExperience(model: &model, context: ExperienceContext(index: 0, experiences: [], route: 0),
                                   workspace: model.makeWorkspace())
        var theta = model.parameters.map { $0 + Float(rng.uniform(-1, 1)) }
        func value(_ t: [Float]) -> Double {
            var p = plugin
            var g = [Float](repeating: 0, count: t.count)
            return t.withUnsafeBufferPointer { tp in g.withUnsafeMutableBufferPointer { p.addPenalty(parameters: tp, gradient: $0) } }
        }
        var grad = [Float](repeating: 0, count: theta.count)
        _ = theta.withUnsafeBufferPointer { tp in grad.withUnsafeMutableBufferPointer { plugin.addPenalty(parameters: tp, gradient: $0) } }
        for i in theta.indices {
            let h: Float = 1e-2
            let saved = theta[i]
            theta[i] = saved + h
            let up = value(theta)
            theta[i] = saved - h
            let down = value(theta)
            theta[i] = saved
            #expect(abs((up - down) / Double(2 * h) - Double(grad[i])) < 1e-3)
        }
    }
}
