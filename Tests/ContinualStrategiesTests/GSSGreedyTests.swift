@testable import ContinualCore
import ContinualScenarios
@testable import ContinualStrategies
import Testing

/// GSS-greedy scores each row by the largest cosine between its gradient and stored samples'
/// gradients (checked against float64 finite-difference gradients), and admits into a full buffer
/// only rows opposed to every sampled gradient, replacing a slot drawn ∝ its score with
/// probability C_i / (C_i + c) (checked by frequency, and on hand-chosen gradients).
@Suite("GSSGreedy")
struct GSSGreedyTests {
    static let spec = MLPSpec(inputs: 3, hidden: [4], activation: .tanh, head: .multiclass(classes: 3))
    static let run = RunContext(seed: 5, pluginIndex: 0, experienceCount: 1, dimension: 3, head: .multiclass(classes: 3),
                                training: TrainingOptions(epochs: 1, batchSize: 8))
    static var context: ExperienceContext { ExperienceContext(index: 0, experiences: [], route: 0) }

    static func batch(_ rows: [([Float], Int32)]) -> Batch {
        var b = Batch(dimension: 3, capacity: max(rows.count, 1) * 4)
        for (x, y) in rows { b.append(features: x, label: y, route: 0) }
        b.ownCount = rows.count
        return b
    }

    /// Opens an experience of `rows` training rows: the plugin offers that many own rows.
    static func open(_ gss: inout GSSGreedy, rows: Int = 10_000) {
        var samples = Samples(dimension: 3, features: [Float](repeating: 0, count: 3 * rows), labels: [Int32](repeating: 0, count: rows))
        gss.adjustTrainingSet(&samples, context: context)
    }

    static func randomRows(_ n: Int, _ rng: inout RandomSource) -> [([Float], Int32)] {
        (0..<n).map { _ in ((0..<3).map { _ in Float(rng.normal()) }, Int32(rng.uniformInt(below: 3))) }
    }

    /// The first batch is stored whole with c = 1.1; the next rows' scores are max cos + 1 over
    /// every stored gradient (n ≥ stored), recomputed here from central finite differences.
    @Test func scoresAreTheBruteForceMaximalCosinePlusOne() throws {
        var rng = RandomSource(seed: 8)
        var model = MLP(spec: Self.spec, rng: &rng)
        var gss = GSSGreedy(options: .init(capacity: 20, memoryGradients: 20, memorySubset: 1, gate: .sample, replayPerBatch: 2))
        try gss.prepare(model: &model, context: Self.run)
        Self.open(&gss)
        let stored = Self.randomRows(6, &rng)
        var first = Self.batch(stored)
        gss.extendBatch(&first, context: Self.context)
        #expect(gss.lastScores == Array(repeating: 1.1, count: 6) && gss.buffer.count == 6 && first.count == 6)
        let storedGradients = stored.map { Fixture.finiteDifferenceGradient(model: model, x: $0.0.map(Double.init), label: Int($0.1)) }
        let incoming = Self.randomRows(4, &rng)
        var next = Self.batch(incoming)
        gss.extendBatch(&next, context: Self.context)
        #expect(next.count == 4 + 2)           // two replayed rows
        for (i, row) in incoming.enumerated() {
            let g = Fixture.finiteDifferenceGradient(model: model, x: row.0.map(Double.init), label: Int(row.1))
            let expected = storedGradients.map { Self.cosine(g, $0) }.max()! + 1
            #expect(abs(gss.lastScores[i] - expected) < 1e-4, "row \(i): \(gss.lastScores[i]) vs \(expected)")
        }
        #expect(gss.buffer.count == 10 && gss.scores.count == 10)
        #expect(gss.scores[6...].map(Double.init) == gss.lastScores.map { Double(Float($0)) })
    }

    /// Rows that duplicate stored samples score 2 (their gradients are the stored ones) and a full
    /// buffer keeps its contents and scores, where a reservoir would have replaced about half.
    @Test func duplicatesOfStoredSamplesAreNeverAdmitted() throws {
        var rng = RandomSource(seed: 9)
        var model = MLP(spec: Self.spec, rng: &rng)
        var gss = GSSGreedy(options: .init(capacity: 8, memoryGradients: 8, memorySubset: 1, gate: .sample, replayPerBatch: 0))
        try gss.prepare(model: &model, context: Self.run)
        Self.open(&gss)
        let stored = Self.randomRows(8, &rng)
        for row in stored {          // one row per batch, so each is scored against those before it
            var b = Self.batch([row])
            gss.extendBatch(&b, context: Self.context)
        }
        let (features, scores) = (gss.buffer.features, gss.scores)
        for _ in 0..<20 {
            var b = Self.batch(stored)
            gss.extendBatch(&b, context: Self.context)
            #expect(gss.lastScores.allSatisfy { abs($0 - 2) < 1e-5 })
        }
        #expect(gss.buffer.features == features && gss.scores == scores)
        #expect(gss.report().attributes["gated"] == .int(160) && gss.report().attributes["replaced"] == .int(0))
    }

    /// An experience of 5 training rows offers its first 5 own rows, once: later epochs replay only.
    @Test func eachTrainingRowIsOfferedOnce() throws {
        var rng = RandomSource(seed: 10)
        var model = MLP(spec: Self.spec, rng: &rng)
        var gss = GSSGreedy(options: .init(capacity: 20, memoryGradients: 4, memorySubset: 1, gate: .sample, replayPerBatch: 3))
        try gss.prepare(model: &model, context: Self.run)
        Self.open(&gss, rows: 5)
        var first = Self.batch(Self.randomRows(3, &rng)), second = Self.batch(Self.randomRows(3, &rng))
        gss.extendBatch(&first, context: Self.context)
        gss.extendBatch(&second, context: Self.context)
        #expect(gss.buffer.count == 5 && gss.lastScores.count == 2 && second.count == 3 + 3)
        var epoch2 = Self.batch(Self.randomRows(3, &rng))
        gss.extendBatch(&epoch2, context: Self.context)
        #expect(gss.buffer.count == 5 && gss.lastScores.isEmpty && epoch2.count == 3 + 3)
        #expect(gss.report().attributes["offered"] == .int(5))
    }

    /// Hand-chosen gradients: c = max cos + 1; a duplicate scores 2, an opposed one 0, orthogonal 1.
    @Test func scoreOfHandChosenGradients() {
        let stored: [[Float]] = [[1, 0, 0], [0, 2, 0]]
        #expect(GSSGreedy.score([3, 0, 0], against: stored) == 2)
        #expect(abs(GSSGreedy.score([-1, -1, 0], against: stored) - (1 - 0.5.squareRoot())) < 1e-12)   // cos −1/√2 with both
        #expect(abs(GSSGreedy.score([-1, -1, 0], against: [[1, 1, 0]]) - 0) < 1e-12)
        #expect(GSSGreedy.score([0, 0, 5], against: stored) == 1)
        #expect(GSSGreedy.score([0, 0, 0], against: stored) == 1)          // zero gradient: cosine 0
        #expect(GSSGreedy.score([1, 0, 0], against: []) == 1.1)
    }

    /// A full buffer: a row the gate found ineligible is refused without a draw; an eligible one
    /// replaces slot i with frequency C_i / ΣC · C_i / (C_i + c); a buffer with room appends
    /// without a draw.
    @Test func admissionFollowsTheGreedyRule() {
        var rng = RandomSource(seed: 3)
        let before = rng.state
        #expect(GSSGreedy.admission(score: 1.7, eligible: false, scores: [1, 1], capacity: 3, rng: &rng) == .append)
        #expect(GSSGreedy.admission(score: 1.0, eligible: false, scores: [0.2, 1, 1.8], capacity: 3, rng: &rng) == .gated)
        #expect(rng.state == before)
        let scores: [Float] = [0.2, 1.0, 1.8], c = 0.5, trials = 40_000
        var replaced = [0, 0, 0]
        for _ in 0..<trials {
            if case .replace(let i) = GSSGreedy.admission(score: c, eligible: true, scores: scores, capacity: 3, rng: &rng) { replaced[i] += 1 }
        }
        let total = scores.reduce(0) { $0 + Double($1) }
        for i in 0..<3 {
            let ci = Double(scores[i]), expected = ci / total * ci / (ci + c)
            #expect(abs(Double(replaced[i]) / Double(trials) - expected) < 0.01, "slot \(i): \(replaced[i]) of \(trials)")
        }
    }

    /// A linear softmax model at zero weights has gradient (1/K − e_y) ⊗ [x, 1]: one stored sample
    /// per class gives pairwise cosines −1/(K − 1); a row of an unseen class with x = 0 then scores
    /// 1 − 1/(K − 1) < 1 and may enter, a row of a stored class (any x) scores > 1 and is refused.
    @Test func diverseBufferIsKeptAgainstRedundantRows() throws {
        var gss = try Self.oneSamplePerClass(gate: .sample)
        let expected: [Double] = [1.1, 2.0 / 3, 2.0 / 3]
        for (s, e) in zip(gss.scores, expected) { #expect(abs(Double(s) - e) < 1e-6) }
        var rng = RandomSource(seed: 4)
        let kept = gss.buffer.features
        for _ in 0..<50 {
            var b = Self.batch([((0..<3).map { _ in Float(rng.normal()) }, Int32(rng.uniformInt(below: 3)))])
            gss.extendBatch(&b, context: Self.context)
            #expect(gss.lastScores[0] > 1)
        }
        #expect(gss.buffer.features == kept)
        var newcomer = Self.batch([([0, 0, 0], 3)])
        gss.extendBatch(&newcomer, context: Self.context)
        #expect(abs(gss.lastScores[0] - (1 - 1.0 / 3)) < 1e-6)
    }

    /// A linear 4-class softmax model at zero weights, and a full buffer (capacity 3) holding one
    /// sample of each of the classes 0, 1, 2 at x = 0, each G_i one stored sample's gradient.
    static func oneSamplePerClass(gate: GSSGreedy.Options.Gate) throws -> GSSGreedy {
        let head = OutputHead.multiclass(classes: 4)
        var model = MLP(spec: MLPSpec(inputs: 3, hidden: [], head: head), parameters: [Float](repeating: 0, count: 16))
        let run = RunContext(seed: 1, pluginIndex: 0, experienceCount: 1, dimension: 3, head: head,
                             training: TrainingOptions(epochs: 1, batchSize: 8))
        var gss = GSSGreedy(options: .init(capacity: 3, memoryGradients: 3, memorySubset: 1, gate: gate, replayPerBatch: 0))
        try gss.prepare(model: &model, context: run)
        open(&gss)
        for y in 0..<3 {
            var b = batch([([0, 0, 0], Int32(y))])
            gss.extendBatch(&b, context: context)
        }
        return gss
    }

    static func cosine(_ a: [Double], _ b: [Double]) -> Double {
        let ab = zip(a, b).reduce(0) { $0 + $1.0 * $1.1 }
        return ab / (a.reduce(0) { $0 + $1 * $1 }.squareRoot() * b.reduce(0) { $0 + $1 * $1 }.squareRoot())
    }

    /// The batch gate (the authors' code): a row opposed to every stored gradient is still refused
    /// when its batch's mean gradient is not; in a batch of such rows every row is eligible.
    @Test func batchGateDecidesForTheWholeBatch() throws {
        var gss = try Self.oneSamplePerClass(gate: .batch)
        // Mean gradient (u_3 + u_0)/2 has cosine +1/2 with stored class 0: both rows refused.
        var mixed = Self.batch([([0, 0, 0], 3), ([0, 0, 0], 0)])
        gss.extendBatch(&mixed, context: Self.context)
        #expect(abs(gss.lastScores[0] - 2.0 / 3) < 1e-6 && gss.report().attributes["gated"] == .int(2))
        // Both rows of class 3: the mean is opposed to every stored gradient, so neither is gated.
        var opposed = Self.batch([([0, 0, 0], 3), ([0, 0, 0], 3)])
        gss.extendBatch(&opposed, context: Self.context)
        let report = gss.report().attributes
        #expect(report["gated"] == .int(2))
        #expect(report["replaced"] != .int(0) || report["declined"] != .int(0))
    }
}
