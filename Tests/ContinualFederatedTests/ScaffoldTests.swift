import ContinualCore
import ContinualFederated
import Testing

/// SCAFFOLD's control variates (Karimireddy et al. 2020, option II) worked by hand, and the
/// corrected local step on the toolkit's loop: after one full-batch step the new client control
/// is the plain gradient at the global model, whatever c and cᵢ were.
@Suite struct ScaffoldTests {
    typealias L = LocalRoundTests

    @Test func clientControlByHand() {
        // cᵢ⁺ = cᵢ − c + (x − y)/(Kη) with K = 2, η = 0.5: (x − y)/1.
        let updated = Scaffold.clientControl(old: [1, -1], server: [0.5, 0.25], start: [2, 3], end: [1.5, 4], steps: 2, learningRate: 0.5)
        #expect(updated == [1 - 0.5 + 0.5, -1 - 0.25 - 1])
        // An empty cᵢ is zero.
        #expect(Scaffold.clientControl(old: [], server: [0, 0], start: [1, 1], end: [0, 2], steps: 1, learningRate: 1) == [1, -1])
    }

    @Test func serverControlMovesByTheSumOverN() {
        var c: [Float] = [1, 0]
        Scaffold.updateServerControl(&c, deltas: [[2, 4], [], [6, -8]], clients: 4)
        #expect(c == [1 + 8.0 / 4, -1])
        // No client: unchanged.
        Scaffold.updateServerControl(&c, deltas: [], clients: 4)
        #expect(c == [3, -1])
    }

    @Test func oneCorrectedFullBatchStepGivesTheGradientAsControl() throws {
        let data = L.data(seed: 6, count: 24), x = L.globalModel()
        var rng = RandomSource(seed: 8)
        let c = x.map { _ in Float(0.3 * rng.normal()) }, ci = x.map { _ in Float(0.3 * rng.normal()) }
        var term = ControlVariateTerm()
        term.correction = c.indices.map { c[$0] - ci[$0] }
        var trainer = Trainer(spec: L.spec, optimizer: .sgd(learningRate: 0.1),
                              options: TrainingOptions(epochs: 50, batchSize: 24), plugins: [term], seed: 5)
        trainer.model.parameters = x
        let stream = ExperienceStream(name: "c", featureNames: ["a", "b", "c", "d"], head: L.spec.head,
                                      experiences: [Experience(index: 0, name: "e", train: data, test: data)])
        let y = try trainer.run(stream, source: LocalRoundSource(steps: 1, epochs: 50), resumingFrom: nil, stopAfter: nil)
            .finalModel.parameters
        // y = x − η(g + c − cᵢ), so cᵢ⁺ = cᵢ − c + (x − y)/η = g.
        let plain = try L.plain(x, data, steps: 1, batch: 24, seed: 5)      // x − ηg
        let updated = Scaffold.clientControl(old: ci, server: c, start: x, end: y, steps: 1, learningRate: 0.1)
        for j in x.indices {
            let g = (x[j] - plain[j]) / 0.1
            #expect(abs(updated[j] - g) <= 1e-4 * max(1, abs(g)), "parameter \(j)")
        }
        // The correction moved the step: y is not the plain step.
        #expect(zip(y, plain).contains { abs($0 - $1) > 1e-3 })
    }
}
