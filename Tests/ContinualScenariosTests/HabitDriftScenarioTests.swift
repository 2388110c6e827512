import Testing
import ContinualCore
@testable import ContinualScenarios

@Suite struct HabitDriftScenarioTests {
    @Test func sameSeedSameBytesOtherSeedOtherData() throws {
        let a = try HabitDriftScenario().makeStream(seed: 7)
        let b = try HabitDriftScenario().makeStream(seed: 7)
        let c = try HabitDriftScenario().makeStream(seed: 8)
        #expect(a == b)
        #expect(a.experiences[0].train.features.map(\.bitPattern) == b.experiences[0].train.features.map(\.bitPattern))
        #expect(a.experiences[0].train.features != c.experiences[0].train.features)
        // A fixed data seed overrides the run seed.
        let d = try HabitDriftScenario(seed: 99).makeStream(seed: 1)
        let e = try HabitDriftScenario(seed: 99).makeStream(seed: 2)
        #expect(d == e)
    }

    @Test func sizesPhasesAndFeatureRangesAreAsConfigured() throws {
        let s = try HabitDriftScenario(trainPerExperience: 300, testPerExperience: 70).makeStream(seed: 1)
        #expect(s.experiences.map(\.name) == ["morning", "night", "reminder_fatigue", "weekend_only", "morning"])
        #expect(s.dimension == 10 && s.head == .binary)
        for e in s.experiences {
            #expect(e.train.count == 300 && e.test.count == 70)
            #expect(e.train.features.allSatisfy { $0.isFinite && abs($0) <= 3 })
            // Both classes occur in every phase (no degenerate phase).
            let positives = e.train.labels.filter { $0 == 1 }.count
            #expect(positives > 30 && positives < 270)
        }
        #expect(s.experiences[1].metadata["drift"] == "sudden")
    }

    /// Real drift: a model fitted to the first phase alone loses accuracy on the later phases.
    @Test func driftIsReal() throws {
        let s = try HabitDriftScenario(trainPerExperience: 2000, testPerExperience: 500).makeStream(seed: 4)
        var trainer = Trainer(spec: MLPSpec(inputs: 10, hidden: [16, 8]), optimizer: .sgd(learningRate: 0.05, momentum: 0.9),
                              options: TrainingOptions(epochs: 10), plugins: [], seed: 1)
        let first = ExperienceStream(name: "first", featureNames: s.featureNames, head: .binary,
                                     experiences: [s.experiences[0]])
        let o = try trainer.run(first)
        let ws = o.finalModel.makeWorkspace()
        let onFirst = o.finalModel.accuracy(on: s.experiences[0].test, route: 0, workspace: ws)
        #expect(onFirst > 0.8)
        for e in s.experiences[1...3] {
            let acc = o.finalModel.accuracy(on: e.test, route: 0, workspace: ws)
            #expect(acc < onFirst - 0.15, "phase \(e.name): \(acc) vs \(onFirst)")
        }
        // The recurring phase (morning again) is still recognised.
        let back = o.finalModel.accuracy(on: s.experiences[4].test, route: 0, workspace: ws)
        #expect(back > onFirst - 0.05)
    }

    @Test func groundTruthFollowsThePhaseDefinition() {
        let morning = HabitPhase.presets["morning"]!, night = HabitPhase.presets["night"]!
        var day = HabitDay(streak: 0.3, completionRate: 0.5, appLaunches: 0.3, remindersOpened: 0.5,
                           activityHour: 7.5, weekendTomorrow: 0, reminderTomorrow: 0, completedToday: 0, sleep: 0)
        #expect(morning.completionProbability(day) > 0.7)
        #expect(night.completionProbability(day) < 0.1)
        day.activityHour = 22
        #expect(night.completionProbability(day) > 0.7)
    }
}
