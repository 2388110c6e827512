import Testing
import ContinualCore
import ContinualScenarios
import ContinualStrategies

/// Early stopping ends an experience when the epoch training loss stops improving.
@Suite struct EarlyStoppingTests {
    func run(epochs: Int, earlyStopping: EarlyStopping?) throws -> TrainingOutcome {
        let stream = try HabitDriftScenario(trainPerExperience: 200, testPerExperience: 50,
                                            phases: [HabitPhase.presets["morning"]!]).makeStream(seed: 4)
        var trainer = Trainer(spec: MLPSpec(inputs: 10, hidden: [16, 8]), optimizer: .adam(learningRate: 0.01),
                              options: TrainingOptions(epochs: epochs, batchSize: 32, earlyStopping: earlyStopping),
                              plugins: [Naive()], seed: 1)
        return try trainer.run(stream)
    }

    @Test func convergedTaskStopsBeforeTheMaximum() throws {
        // 200 epochs on 200 samples converges long before the end: a 1e-3 improvement threshold
        // with patience 5 must stop early.
        let stopped = try run(epochs: 200, earlyStopping: EarlyStopping(patience: 5, minDelta: 1e-3))
        let epochsRun = stopped.lossCurve[0].count
        #expect(epochsRun < 200)
        #expect(epochsRun >= 6)
        #expect(stopped.steps[0] == epochsRun * 7)   // 200 rows, batch 32 → 7 steps per epoch
        // The last `patience` epochs did not beat the best earlier loss by min_delta.
        let curve = stopped.lossCurve[0]
        let bestBefore = curve[..<(epochsRun - 5)].min()!
        #expect(curve[(epochsRun - 5)...].allSatisfy { $0 >= bestBefore - 1e-3 })
        // Early stopping only truncates: the epochs it ran are bit-identical to the full run's.
        let full = try run(epochs: 200, earlyStopping: nil)
        #expect(Array(full.lossCurve[0].prefix(epochsRun)) == curve)
    }

    @Test func infinitePatienceOrNullRunsEveryEpoch() throws {
        let none = try run(epochs: 40, earlyStopping: nil)
        let infinite = try run(epochs: 40, earlyStopping: EarlyStopping(patience: .max, minDelta: 1e-3))
        #expect(none.lossCurve[0].count == 40)
        #expect(infinite.lossCurve[0].count == 40)
        #expect(none == infinite)
    }

    @Test func monitorCountsStaleEpochs() {
        var m = EarlyStopping.Monitor(EarlyStopping(patience: 2, minDelta: 0.1))
        // best 1.0; 0.95 not better by 0.1 (stale 1); 0.8 improves (stale 0); 0.75 stale 1; 0.71 stale 2 → stop.
        let decisions = [1.0, 0.95, 0.8, 0.75, 0.71].map { m.shouldStop(after: $0) }
        #expect(decisions == [false, false, false, false, true])
        #expect(m.best == 0.8 && m.stale == 2)
    }
}
