import ContinualCore

/// A habit-tracking user whose behaviour drifts through phases; one sample is one day, and the
/// label is whether the habit is completed the next day (binary).
///
/// Days are simulated in order (streak and 30-day rate carry over between phases); each phase is
/// one experience of `train_per_experience + test_per_experience` consecutive days, split at
/// random into train and test. Drift between phases is sudden and *real* (the labelling function
/// changes, see `HabitPhase`); the default phases are morning → night → reminder fatigue →
/// weekend-only → morning again (a recurring concept).
public struct HabitDriftScenario: ScenarioOptions {
    public static let typeName = "habit_drift"
    public static let summary = "habit-tracking user: next-day completion (binary), drifting through behavioural phases"

    public var trainPerExperience: Int
    public var testPerExperience: Int
    public var phases: [HabitPhase]
    /// Probability that a label is flipped after drawing it (extra noise).
    public var labelNoise: Double
    /// Seed of the data; nil = derived from the run's seed.
    public var seed: UInt64?
    /// Simulated days before the first recorded day (to warm up streak and 30-day rate).
    public var warmupDays: Int
    /// How phases turn into each other (default: sudden, real, played once).
    public var drift: DriftOptions = .sudden
    /// How the simulated days are cut into experiences (default: one per phase).
    public var cut: ExperienceCut = .driftPoints

    public init(trainPerExperience: Int = 2000, testPerExperience: Int = 500,
                phases: [HabitPhase] = HabitDriftScenario.defaultPhases, labelNoise: Double = 0,
                seed: UInt64? = nil, warmupDays: Int = 30) {
        self.trainPerExperience = trainPerExperience
        self.testPerExperience = testPerExperience
        self.phases = phases
        self.labelNoise = labelNoise
        self.seed = seed
        self.warmupDays = warmupDays
    }

    public static let defaultPhases: [HabitPhase] = ["morning", "night", "reminder_fatigue", "weekend_only", "morning"]
        .map { HabitPhase.presets[$0]! }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case trainPerExperience = "train_per_experience", testPerExperience = "test_per_experience"
        case phases, labelNoise = "label_noise", seed, warmupDays = "warmup_days", drift, cut
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
        trainPerExperience = try c.decode(.trainPerExperience, default: 2000)
        testPerExperience = try c.decode(.testPerExperience, default: 500)
        phases = try c.decode(.phases, default: HabitDriftScenario.defaultPhases)
        labelNoise = try c.decode(.labelNoise, default: 0)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        warmupDays = try c.decode(.warmupDays, default: 30)
        drift = try c.decode(.drift, default: .sudden)
        cut = try c.decode(.cut, default: .driftPoints)
        try c.require(trainPerExperience >= 1, .trainPerExperience, "must be ≥ 1, got \(trainPerExperience)")
        try c.require(testPerExperience >= 1, .testPerExperience, "must be ≥ 1, got \(testPerExperience)")
        try c.require(!phases.isEmpty, .phases, "needs at least one phase")
        try c.require((0...0.5).contains(labelNoise), .labelNoise, "must be in 0...0.5, got \(labelNoise)")
        try c.require((0...36_500).contains(warmupDays), .warmupDays, "must be in 0...36500 (days), got \(warmupDays)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(trainPerExperience, forKey: .trainPerExperience)
        try c.encode(testPerExperience, forKey: .testPerExperience)
        try c.encode(phases, forKey: .phases)
        try c.encode(labelNoise, forKey: .labelNoise)
        try c.encodeIfPresent(seed, forKey: .seed)
        try c.encode(warmupDays, forKey: .warmupDays)
        // Written only when set, so the canonical JSON (and run ids) of existing experiments
        // stay what they were before these options existed.
        if drift != .sudden { try c.encode(drift, forKey: .drift) }
        if cut != .driftPoints { try c.encode(cut, forKey: .cut) }
    }

    /// The drift schedule: one segment of `train + test` days per phase.
    public var schedule: DriftSchedule {
        DriftSchedule(options: drift, concepts: phases.count, length: trainPerExperience + testPerExperience)
    }

    public func makeStream(seed runSeed: UInt64) throws -> ExperienceStream {
        let dataSeed = seed ?? runSeed
        var rng = RandomSource(seed: dataSeed, stream: "scenario.habit_drift")
        var simulator = HabitSimulator(rng: rng.derived("days"))
        var driftRNG = rng.derived("drift")
        let schedule = self.schedule
        let noise = LabelNoise(rate: labelNoise, classes: 2)
        if let first = phases.first {
            for _ in 0..<warmupDays { _ = simulator.nextDay(phase: first) }
        }
        // With the default cut the split happens right after each segment is simulated, which
        // keeps the random draws (and so the bytes) of the original habit_drift generator.
        var timeline = GeneratedTimeline(dimension: HabitDay.featureNames.count)
        var experiences: [Experience] = []
        let names = phases.map(\.name)
        for k in schedule.sequence.indices {
            let segmentStart = timeline.count
            for t in schedule.starts[k]..<(schedule.starts[k] + schedule.lengths[k]) {
                let (phase, conceptIndex) = schedule.concept(at: t, concepts: phases, rng: &driftRNG)
                let (day, completed) = simulator.nextDay(phase: phase)
                let label = noise.apply(completed ? 1 : 0, rng: &rng)
                timeline.append(day.features, label: label, day: simulator.day - 1, segment: k, concept: conceptIndex)
            }
            if cut == .driftPoints {
                let group = Array(segmentStart..<timeline.count)
                let (train, test) = timeline.split(group, testCount: testPerExperience, rng: &rng)
                let phase = phases[schedule.sequence[k]]
                let previous = k > 0 ? phases[schedule.sequence[k - 1]].name : ""
                var metadata = ["phase": phase.name, "drift": schedule.driftLabel(of: k),
                                "drift_kind": drift.kind.rawValue, "previous_phase": previous, "user": "0",
                                "days": "\(group.count)"]
                if drift != .sudden { metadata["segments"] = "\(k)" }
                experiences.append(Experience(index: k, name: phase.name, train: train, test: test, metadata: metadata))
            }
        }
        if cut != .driftPoints {
            let fraction = Double(testPerExperience) / Double(trainPerExperience + testPerExperience)
            experiences = try timeline.experiences(cut: cut, schedule: schedule, conceptNames: names,
                                               testFraction: fraction, rng: &rng)
        }
        return ExperienceStream(
            name: Self.typeName, featureNames: HabitDay.featureNames, head: .binary, experiences: experiences,
            metadata: ["generator": Self.typeName, "seed": "\(dataSeed)", "label": "habit completed the next day"])
    }
}

/// The day-by-day state of one simulated user.
struct HabitSimulator {
    var rng: RandomSource
    var day = 0
    var streak = 0
    /// The last ≤ 30 days' completions as a ring (`historyStart` = oldest) and how many were
    /// completed: the 30-day rate in O(1) per day, the same value as counting the window.
    var history = [Bool](repeating: false, count: 30)
    var historyCount = 0
    var historyStart = 0
    var historyCompleted = 0
    var completedToday = false
    var reminderToday = false

    init(rng: RandomSource) { self.rng = rng }

    /// Simulates today and returns its features and whether the habit is completed tomorrow.
    mutating func nextDay(phase: HabitPhase) -> (HabitDay, Bool) {
        let hour: Double
        if rng.bernoulli(phase.irregularDays) {
            hour = rng.uniform(0, 24)
        } else {
            let h = phase.activityHour + phase.activitySpread * rng.normal()
            hour = (h.truncatingRemainder(dividingBy: 24) + 24).truncatingRemainder(dividingBy: 24)
        }
        let launches = min(Double(rng.poisson(mean: phase.launchRate)), 10) / 10
        var opened = 0
        let sent = reminderToday ? 3 : 0
        for _ in 0..<sent where rng.bernoulli(phase.openRate) { opened += 1 }
        let reminderTomorrow = rng.bernoulli(phase.reminderRate)
        let weekendTomorrow = (day + 1) % 7 >= 5
        let rate = historyCount == 0 ? 0.5 : Double(historyCompleted) / Double(historyCount)
        let features = HabitDay(
            streak: min(Double(streak) / 30, 1), completionRate: rate, appLaunches: launches,
            remindersOpened: sent == 0 ? 0 : Double(opened) / Double(sent), activityHour: hour,
            weekendTomorrow: weekendTomorrow ? 1 : 0, reminderTomorrow: reminderTomorrow ? 1 : 0,
            completedToday: completedToday ? 1 : 0, sleep: rng.normal() * 0.5)
        let completed = rng.bernoulli(phase.completionProbability(features))
        // Advance to tomorrow.
        streak = completed ? streak + 1 : 0
        if historyCount == 30 {
            if history[historyStart] { historyCompleted -= 1 }
            history[historyStart] = completed
            historyStart = (historyStart + 1) % 30
        } else {
            history[historyCount] = completed
            historyCount += 1
        }
        if completed { historyCompleted += 1 }
        completedToday = completed
        reminderToday = reminderTomorrow
        day += 1
        return (features, completed)
    }
}
