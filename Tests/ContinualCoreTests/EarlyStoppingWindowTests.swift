import Testing
@testable import ContinualCore

/// The window rule of `EarlyStopping`: stop after epoch e ≥ W when loss[e − W] − loss[e] <
/// tolerance; tolerance 0 (or a window longer than the budget) leaves the full budget bit for bit.
@Suite struct EarlyStoppingWindowTests {
    /// W = 2, t = 0.05 on 1.0, 0.8, 0.7, 0.65, 0.64, 0.639: improvements over two epochs are
    /// 0.3 (e = 2), 0.15 (e = 3), 0.06 (e = 4), 0.011 (e = 5): it stops after epoch 5.
    @Test func stopsWhereTheHandComputedSequenceSays() {
        var m = EarlyStopping.Monitor(EarlyStopping(window: 2, tolerance: 0.05))
        let losses = [1.0, 0.8, 0.7, 0.65, 0.64, 0.639, 0.5]
        let decisions = losses.map { m.shouldStop(after: $0) }
        #expect(decisions == [false, false, false, false, false, true, false])
        // A loss that rises is a negative improvement: it stops.
        var up = EarlyStopping.Monitor(EarlyStopping(window: 1, tolerance: 0.001))
        #expect([1.0, 1.2].map { up.shouldStop(after: $0) } == [false, true])
        // Empty epochs (NaN) are not counted.
        var gaps = EarlyStopping.Monitor(EarlyStopping(window: 1, tolerance: 0.5))
        #expect([1.0, .nan, 0.9].map { gaps.shouldStop(after: $0) } == [false, false, true])
        var off = EarlyStopping.Monitor(EarlyStopping(window: 1, tolerance: 0))
        #expect([1.0, 1.0, 2.0].map { off.shouldStop(after: $0) } == [false, false, false])
    }

    func stream() -> ExperienceStream {
        var rng = RandomSource(seed: 4, stream: "data")
        func samples(_ n: Int) -> Samples {
            var s = Samples(dimension: 3)
            for i in 0..<n {
                let y = Int32(i % 2)
                s.features += (0..<3).map { k in Float(rng.normal()) + (y == 1 ? 0.8 : -0.8) * Float(k + 1) / 3 }
                s.labels.append(y)
            }
            return s
        }
        return ExperienceStream(name: "blobs", featureNames: ["a", "b", "c"], head: .multiclass(classes: 2),
                                experiences: (0..<2).map { Experience(index: $0, name: "e\($0)", train: samples(40), test: samples(20)) })
    }

    func run(_ stopping: EarlyStopping?, epochs: Int = 12) throws -> (TrainingOutcome, [Float]) {
        var t = Trainer(spec: MLPSpec(inputs: 3, hidden: [4], activation: .relu, head: .multiclass(classes: 2)),
                        optimizer: .sgd(learningRate: 0.05), options: TrainingOptions(epochs: epochs, batchSize: 8, earlyStopping: stopping),
                        plugins: [], seed: 2)
        let o = try t.run(stream())
        return (o, t.model.parameters)
    }

    /// The loop stops each experience at the epoch the rule computes from the full run's own loss
    /// curve (the curves agree up to there: same seed, same steps), and records the planned steps.
    @Test func theLoopStopsWhereTheLossCurveSays() throws {
        let (full, _) = try run(nil)
        let rule = EarlyStopping(window: 2, tolerance: 0.06)
        let (stopped, _) = try run(rule)
        // Experience 0 only: experience 1 starts from a different model once 0 stopped early.
        var m = EarlyStopping.Monitor(rule)
        let curve = full.progress.lossCurve[0]
        let stop = curve.firstIndex { m.shouldStop(after: $0) }.map { $0 + 1 } ?? curve.count
        // 0.557 − 0.493 = 0.064 after epoch 8, 0.521 − 0.469 = 0.052 < 0.06 after epoch 9.
        #expect(stop == 10, "the rule should fire on this curve: \(curve)")
        #expect(stopped.progress.lossCurve[0] == Array(curve.prefix(stop)))
        #expect(stopped.progress.steps[0] == stop * 5)
        #expect(stopped.progress.plannedSteps == [60, 60] && full.progress.plannedSteps == [60, 60])
    }

    @Test func toleranceZeroOrAHugeWindowIsTheFullBudgetBitForBit() throws {
        let (full, p) = try run(nil)
        for rule in [EarlyStopping(window: 2, tolerance: 0), EarlyStopping(window: 1000, tolerance: 10)] {
            let (o, q) = try run(rule)
            #expect(q == p)
            #expect(o.progress.lossCurve == full.progress.lossCurve && o.progress.steps == full.progress.steps)
        }
    }
}
