import ContinualCore
@testable import ContinualScenarios

/// The habit_drift generator exactly as it was before drift options existed (copied from the
/// spine commit), so a test can prove the default stream did not change by a single bit.
enum LegacyHabitDrift {
    static func makeStream(_ o: HabitDriftScenario, seed runSeed: UInt64) -> ExperienceStream {
        let (phases, warmupDays, trainPerExperience, testPerExperience, labelNoise, seed) =
            (o.phases, o.warmupDays, o.trainPerExperience, o.testPerExperience, o.labelNoise, o.seed)
        typealias Self_ = HabitDriftScenario
        let dataSeed = seed ?? runSeed
        var rng = RandomSource(seed: dataSeed, stream: "scenario.habit_drift")
        var simulator = HabitSimulator(rng: rng.derived("days"))
        if let first = phases.first {
            for _ in 0..<warmupDays { _ = simulator.nextDay(phase: first) }
        }
        var experiences: [Experience] = []
        let perPhase = trainPerExperience + testPerExperience
        for (index, phase) in phases.enumerated() {
            var days: [(features: [Float], label: Int32)] = []
            days.reserveCapacity(perPhase)
            for _ in 0..<perPhase {
                let (day, completed) = simulator.nextDay(phase: phase)
                var label: Int32 = completed ? 1 : 0
                if labelNoise > 0 && rng.bernoulli(labelNoise) { label = 1 - label }
                days.append((day.features, label))
            }
            var order = Array(0..<perPhase)
            rng.shuffle(&order)
            let testSet = Set(order.prefix(testPerExperience))
            var train = Samples(dimension: HabitDay.featureNames.count)
            var test = Samples(dimension: HabitDay.featureNames.count)
            for (k, d) in days.enumerated() {
                if testSet.contains(k) {
                    test.features.append(contentsOf: d.features)
                    test.labels.append(d.label)
                } else {
                    train.features.append(contentsOf: d.features)
                    train.labels.append(d.label)
                }
            }
            let previous = index > 0 ? phases[index - 1].name : ""
            experiences.append(Experience(
                index: index, name: phase.name, train: train, test: test,
                metadata: ["phase": phase.name, "drift": index == 0 ? "none" : "sudden",
                           "drift_kind": "real", "previous_phase": previous, "user": "0",
                           "days": "\(perPhase)"]))
        }
        return ExperienceStream(
            name: Self_.typeName, featureNames: HabitDay.featureNames, head: .binary, experiences: experiences,
            metadata: ["generator": Self_.typeName, "seed": "\(dataSeed)", "label": "habit completed the next day"])
    }
}
