import ContinualCore
import Foundation
import Testing
@testable import ContinualScenarios

func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
    try JSONDecoder().decode(T.self, from: Data(json.utf8))
}

@Suite("Generators")
struct GeneratorTests {
    static let small = #"{"train_per_experience": 800, "test_per_experience": 400}"#

    static func generators(_ extra: String = "") throws -> [any ScenarioOptions] {
        let json = extra.isEmpty ? small : #"{"train_per_experience": 800, "test_per_experience": 400, "# + extra + "}"
        return [
            try decode(HabitDriftScenario.self, json),
            try decode(NotificationEngagementScenario.self, json),
            try decode(AppUsageScenario.self, json),
            try decode(HealthBaselineScenario.self, json),
        ]
    }

    @Test("habit_drift's default stream is bit-identical to the original generator")
    func habitUnchanged() throws {
        let o = HabitDriftScenario(trainPerExperience: 300, testPerExperience: 100, labelNoise: 0.05)
        #expect(sameBytes(try o.makeStream(seed: 9), LegacyHabitDrift.makeStream(o, seed: 9)))
        #expect(sameBytes(try HabitDriftScenario().makeStream(seed: 1), LegacyHabitDrift.makeStream(HabitDriftScenario(), seed: 1)))
        // The canonical encoding of the defaults is unchanged too (run ids stay stable).
        let text = String(decoding: try JSONEncoder().encode(HabitDriftScenario()), as: UTF8.self)
        #expect(!text.contains("drift") && !text.contains("cut"))
    }

    @Test("every generator is deterministic: same seed same bytes, other seed other data",
          arguments: ["", #""drift": {"type": "gradual", "width": 300}, "cut": "week""#,
                      #""drift": {"type": "incremental", "kind": "virtual"}, "cut": 500, "label_noise": 0.1"#])
    func determinism(extra: String) throws {
        for g in try Self.generators(extra) {
            let a = try g.makeStream(seed: 42), b = try g.makeStream(seed: 42), c = try g.makeStream(seed: 43)
            #expect(sameBytes(a, b), "\(type(of: g).typeName)")
            #expect(a.experiences[0].train.features != c.experiences[0].train.features, "\(type(of: g).typeName)")
            #expect(a.experiences.allSatisfy { $0.train.count > 0 && $0.test.count > 0 })
            for e in a.experiences {
                #expect(e.train.labels.allSatisfy { $0 >= 0 && Int($0) < a.head.classCount })
                #expect(e.train.features.allSatisfy { $0.isFinite })
            }
        }
    }

    @Test("every generator's drift is real: a model trained on the first experience loses accuracy later")
    func realDrift() throws {
        for g in try Self.generators() {
            let stream = try g.makeStream(seed: 7)
            let acc = try accuracyAfterFirstExperience(stream)
            let later = acc.dropFirst()
            let name = type(of: g).typeName
            #expect(later.min()! < acc[0] - 0.1, "\(name): \(acc)")
            #expect(later.reduce(0, +) / Double(later.count) < acc[0] - 0.05, "\(name): \(acc)")
        }
    }

    @Test("gradual drift in a generator mixes the two phases' behaviour (habit)")
    func gradualInGenerator() throws {
        let o = try decode(HabitDriftScenario.self, #"{"train_per_experience": 800, "test_per_experience": 200, "phases": ["morning", "night"], "drift": {"type": "gradual", "width": 1000}}"#)
        let s = try o.makeStream(seed: 3)
        #expect(s.experiences.count == 2 && s.experiences[1].metadata["drift"] == "gradual")
        // Activity hour is morning (cos > 0) or night; the share of night days in the second
        // segment follows the ramp's mean (½) far from both 0 and 1.
        let rows = s.experiences[1].train
        var night = 0
        for i in 0..<rows.count where rows.row(i)[rows.row(i).startIndex + 5] < -0.2 { night += 1 }
        let share = Double(night) / Double(rows.count)
        #expect(share > 0.25 && share < 0.75, "night share \(share)")
    }

    @Test("virtual drift leaves each generator's ground-truth labelling function unchanged")
    func virtualGroundTruth() throws {
        var probe = RandomSource(seed: 99)
        // Habit: P(complete | features) at random feature vectors is the same for every position.
        let habit = try decode(HabitDriftScenario.self, #"{"drift": {"type": "incremental", "kind": "virtual"}}"#)
        let hs = habit.schedule
        var rng = RandomSource(seed: 1)
        let days = (0..<50).map { _ in
            HabitDay(streak: probe.uniform(), completionRate: probe.uniform(), appLaunches: probe.uniform(),
                     remindersOpened: probe.uniform(), activityHour: probe.uniform(0, 24), weekendTomorrow: probe.bernoulli(0.3) ? 1 : 0,
                     reminderTomorrow: probe.bernoulli(0.5) ? 1 : 0, completedToday: 1, sleep: probe.normal())
        }
        let reference = days.map { habit.phases[0].completionProbability($0) }
        var realDiffers = false
        for t in stride(from: 0, to: hs.totalLength, by: 97) {
            let phase = hs.concept(at: t, concepts: habit.phases, rng: &rng).concept
            #expect(days.map { phase.completionProbability($0) } == reference)
            let real = DriftSchedule(options: DriftOptions(type: .incremental), concepts: habit.phases.count, length: 2500)
                .concept(at: t, concepts: habit.phases, rng: &rng).concept
            if days.map({ real.completionProbability($0) }) != reference { realDiffers = true }
        }
        #expect(realDiffers)

        // The parameter-concept generators: the labelling parameters and the ground truth on
        // the generated features themselves.
        let note = try decode(NotificationEngagementScenario.self, #"{"drift": {"type": "gradual", "kind": "virtual"}}"#)
        let app = try decode(AppUsageScenario.self, #"{"drift": {"type": "incremental", "kind": "virtual"}}"#)
        let health = try decode(HealthBaselineScenario.self, #"{"drift": {"type": "incremental", "kind": "virtual"}}"#)
        func check<S: ConceptSchema>(_ phases: [ParameterConcept<S>], _ schedule: DriftSchedule) {
            var r = RandomSource(seed: 4)
            for t in stride(from: 0, to: schedule.totalLength, by: 13) {
                #expect(schedule.concept(at: t, concepts: phases, rng: &r).concept.labelFunction == phases[0].labelFunction)
            }
        }
        check(note.phases, note.schedule)
        check(app.phases, app.schedule)
        check(health.phases, health.schedule)
        // Ground truth evaluated on generated inputs from late experiences equals the first concept's.
        let hstream = try health.makeStream(seed: 5)
        let last = hstream.experiences.last!.train
        for i in 0..<last.count {
            let f = Array(last.row(i))
            #expect(HealthBaselineScenario.isAnomaly(f, phase: health.phases[0]) == (last.labels[i] == 1))
        }
        // ...while under real drift the late labels disagree with the first concept's rule.
        let realHealth = try HealthBaselineScenario().makeStream(seed: 5).experiences.last!.train
        var disagree = 0
        for i in 0..<realHealth.count where HealthBaselineScenario.isAnomaly(Array(realHealth.row(i)), phase: health.phases[0]) != (realHealth.labels[i] == 1) {
            disagree += 1
        }
        #expect(disagree > realHealth.count / 4)
    }

    @Test("app usage is class-incremental: new categories appear in later experiences")
    func appUsageClasses() throws {
        let s = try AppUsageScenario().makeStream(seed: 1)
        let classes = s.experiences.map { Set($0.train.labels) }
        #expect(classes[0].count == 3 && classes[0].max()! == 2)
        #expect(classes[1].count == 5 && classes[2].count == 8)
        #expect(s.head == .multiclass(classes: 8))
    }

    @Test("cuts by week and by month use simulated days")
    func calendarCut() throws {
        let weekly = try decode(HealthBaselineScenario.self, #"{"cut": "week"}"#).makeStream(seed: 1)
        #expect(weekly.experiences.count == (2000 + 6) / 7)
        #expect(weekly.experiences[0].train.count + weekly.experiences[0].test.count == 7)
        let monthly = try decode(NotificationEngagementScenario.self, #"{"cut": "month", "train_per_experience": 300, "test_per_experience": 100}"#).makeStream(seed: 1)
        #expect(monthly.experiences.count >= 2)
        #expect(monthly.experiences[0].metadata["first_day"] == "0" && monthly.experiences[0].metadata["last_day"] == "30")
    }

    @Test("unknown option keys are rejected with the allowed keys")
    func strict() throws {
        #expect(throws: DecodingError.self) { try decode(AppUsageScenario.self, #"{"sessions": 3}"#) }
        #expect(throws: DecodingError.self) { try decode(NotificationEngagementScenario.self, #"{"phases": [{"preset": "fatigued", "bestHour": 3}]}"#) }
        #expect(throws: DecodingError.self) { try decode(HealthBaselineScenario.self, #"{"phases": ["age_99"]}"#) }
        let p = try decode(NotificationEngagementScenario.self, #"{"phases": [{"preset": "fatigued", "best_hour": 3}]}"#)
        #expect(p.phases[0][.bestHour] == 3 && p.phases[0].name == "fatigued")
    }
}
