@testable import ContinualCore
import ContinualScenarios
@testable import ContinualStrategies
import Testing

/// MIR retrieves exactly the candidates a brute-force float64 recomputation ranks highest: the
/// virtual step from central finite differences of the own rows' mean loss, every candidate's
/// loss before and after it from an independent forward pass.
@Suite("MaximallyInterferedRetrieval")
struct MaximallyInterferedRetrievalTests {
    static let spec = MLPSpec(inputs: 3, hidden: [4], activation: .tanh, head: .multiclass(classes: 3))
    static let run = RunContext(seed: 4, pluginIndex: 0, experienceCount: 1, dimension: 3, head: .multiclass(classes: 3),
                                training: TrainingOptions(epochs: 1, batchSize: 8))

    /// A plugin whose reservoir holds `stored` rows (offered through `extendBatch` as own rows).
    static func filled(_ options: MaximallyInterferedRetrieval.Options, stored: Int, model: inout MLP,
                       rng: inout RandomSource) throws -> MaximallyInterferedRetrieval {
        var mir = MaximallyInterferedRetrieval(options: options)
        try mir.prepare(model: &model, context: run)
        var batch = Batch(dimension: 3, capacity: stored)
        for _ in 0..<stored {
            batch.append(features: (0..<3).map { _ in Float(rng.normal()) }, label: Int32(rng.uniformInt(below: 3)), route: 0)
        }
        batch.ownCount = stored
        // The buffer is empty: nothing is retrieved, every row is stored (stored ≤ capacity).
        mir.extendBatch(&batch, context: ExperienceContext(index: 0, experiences: [], route: 0))
        #expect(batch.count == stored && mir.buffer.count == stored)
        return mir
    }

    /// The brute-force choice among `candidates` (slots) for the own rows of `batch`.
    static func bruteForce(_ mir: MaximallyInterferedRetrieval, model: MLP, batch: Batch, candidates: [Int],
                           lr: Double, k: Int) -> [Int] {
        let own = batch.ownCount
        var grad = [Double](repeating: 0, count: model.parameterCount)
        for i in 0..<own {
            let g = Fixture.finiteDifferenceGradient(model: model, x: batch.row(i).map(Double.init), label: Int(batch.labels[i]))
            for j in grad.indices { grad[j] += g[j] / Double(own) }
        }
        let theta = model.parameters.map(Double.init)
        let virtual = zip(theta, grad).map { $0 - lr * $1 }
        let scores = candidates.map { slot -> Double in
            let x = mir.buffer.row(slot).map(Double.init), y = Int(mir.buffer.labels[slot])
            return Fixture.negativeLogLikelihood(spec: spec, parameters: virtual, x: x, label: y)
                - Fixture.negativeLogLikelihood(spec: spec, parameters: theta, x: x, label: y)
        }
        let order = candidates.indices.sorted { scores[$0] > scores[$1] }
        // The choice must be well separated from the rest, or float32 may legitimately reorder it.
        #expect(scores[order[k - 1]] - scores[order[k]] > 1e-4, "brute-force scores too close to decide")
        return order.prefix(k).map { candidates[$0] }
    }

    static func incoming(_ rng: inout RandomSource, rows: Int) -> Batch {
        var batch = Batch(dimension: 3, capacity: 64)
        for _ in 0..<rows {
            batch.append(features: (0..<3).map { _ in Float(rng.normal() + 1) }, label: 2, route: 0)
        }
        batch.ownCount = rows
        return batch
    }

    /// Every stored sample is a candidate (C ≥ buffer): the retrieved slots are the brute-force top k.
    @Test(arguments: [1, 3, 5])
    func retrievedSamplesAreTheBruteForceTopK(k: Int) throws {
        var rng = RandomSource(seed: UInt64(20 + k))
        var model = MLP(spec: Self.spec, rng: &rng)
        let options = MaximallyInterferedRetrieval.Options(capacity: 12, candidates: 12, replayPerBatch: k, virtualLR: 0.5)
        var mir = try Self.filled(options, stored: 12, model: &model, rng: &rng)
        var batch = Self.incoming(&rng, rows: 6)
        let expected = Self.bruteForce(mir, model: model, batch: batch, candidates: Array(0..<12), lr: 0.5, k: k)
        let snapshot = mir.buffer
        mir.extendBatch(&batch, context: ExperienceContext(index: 0, experiences: [], route: 0))
        #expect(mir.lastRetrieved == expected)
        #expect(batch.count == 6 + k)
        for (r, slot) in expected.enumerated() {
            #expect(Array(batch.row(6 + r)) == Array(snapshot.row(slot)))
            #expect(batch.labels[6 + r] == snapshot.labels[slot])
        }
    }

    /// With C < buffer the candidates are the plugin's seeded draw; the choice is the brute-force
    /// top k among them, and it follows the parameters the loop reports after each step.
    @Test func candidatesAreASeededDrawAndTheChoiceFollowsTheParameters() throws {
        var rng = RandomSource(seed: 31)
        var model = MLP(spec: Self.spec, rng: &rng)
        let options = MaximallyInterferedRetrieval.Options(capacity: 30, candidates: 10, replayPerBatch: 3, virtualLR: 0.3)
        var mir = try Self.filled(options, stored: 30, model: &model, rng: &rng)
        // The loop moved the parameters: MIR must score at the new θ, not the prepared one.
        let moved = model.parameters.map { $0 + Float(rng.normal() * 0.5) }
        moved.withUnsafeBufferPointer { after in
            model.parameters.withUnsafeBufferPointer { before in
                mir.afterStep(StepObservation(taskGradient: before, totalGradient: before, parametersBefore: before,
                                              parametersAfter: after, experienceIndex: 0, stepInExperience: 0))
            }
        }
        model.parameters = moved
        // The fill step drew nothing (the buffer was empty): this is the stream's first draw.
        var replay = Self.run.randomSource("mir.candidates")
        let candidates = mir.buffer.draw(options.candidates, rng: &replay)
        var batch = Self.incoming(&rng, rows: 5)
        let expected = Self.bruteForce(mir, model: model, batch: batch, candidates: candidates, lr: 0.3, k: 3)
        mir.extendBatch(&batch, context: ExperienceContext(index: 0, experiences: [], route: 0))
        #expect(mir.lastRetrieved == expected)
    }
}
