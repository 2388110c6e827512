import ContinualCore
import Foundation
import Testing
@testable import ContinualScenarios

/// Regression tests for the scenario review: too-small leading calendar units, empty splits and
/// label noise that leaked categories into earlier phases.
@Suite("Scenario review fixes")
struct ScenarioFixTests {
    @Test("a one-sample leading unit joins the next experience, so no experience has an empty test set",
          arguments: [#"{"cut": "month"}"#, #"{"cut": "week", "warmup_days": 6}"#])
    func leadingUnitMerged(json: String) throws {
        let s = try decode(HabitDriftScenario.self, json).makeStream(seed: 1)
        for e in s.experiences {
            #expect(e.train.count >= 1 && e.test.count >= 1, "\(e.name): train \(e.train.count), test \(e.test.count)")
        }
        // Day 31 of January (month 0) or day 6 (Sunday of week 0) joins the first full unit.
        #expect(s.experiences[0].metadata["first_day"] == (json.contains("month") ? "30" : "6"))
        #expect(s.experiences[0].metadata["last_day"] == (json.contains("month") ? "58" : "13"))
    }

    @Test("groups: a leading single is merged forward, a trailing single backward")
    func groups() {
        let g = ExperienceCut.week.groups(days: [6, 7, 8, 9, 14], segments: [0, 0, 0, 0, 0])
        #expect(g == [[0, 1, 2, 3, 4]])
        let h = ExperienceCut.week.groups(days: [6, 7, 8, 14, 15], segments: [0, 0, 0, 0, 0])
        #expect(h == [[0, 1, 2], [3, 4]])
        // Unchanged where nothing is too small.
        #expect(ExperienceCut.fixed(2).groups(days: [0, 1, 2, 3], segments: [0, 0, 0, 0]) == [[0, 1], [2, 3]])
    }

    @Test("a generated experience with an empty split is an error naming the experience")
    func emptySplitIsAnError() throws {
        var t = GeneratedTimeline(dimension: 1)
        t.append([0], label: 0, day: 0, segment: 0, concept: 0)
        var rng = RandomSource(seed: 1, stream: "t")
        let schedule = DriftSchedule(options: .sudden, concepts: 1, length: 1)
        do {
            _ = try t.experiences(cut: .week, schedule: schedule, conceptNames: ["a"], testFraction: 0.25, rng: &rng)
            Issue.record("expected an error")
        } catch {
            #expect("\(error)".contains("experience 0 (\"week_0\")") && "\(error)".contains("test set is empty"), "\(error)")
        }
    }

    @Test("app usage label noise only draws categories active in the sample's phase")
    func appUsageNoiseStaysInPhase() throws {
        let o = try decode(AppUsageScenario.self, #"{"label_noise": 0.5, "train_per_experience": 600, "test_per_experience": 200}"#)
        let s = try o.makeStream(seed: 3)
        let active = o.phases.map { AppUsageScenario.activeCategories($0) }
        for (e, x) in s.experiences.enumerated() {
            let labels = x.train.labels + x.test.labels
            #expect(labels.allSatisfy { Int($0) < active[e] }, "\(x.name): \(Set(labels).sorted()) with \(active[e]) active")
        }
        // The noise is still there: many labels differ from the noise-free stream.
        let clean = try decode(AppUsageScenario.self, #"{"train_per_experience": 600, "test_per_experience": 200}"#).makeStream(seed: 3)
        #expect(s.experiences[1].train.labels != clean.experiences[1].train.labels)
    }
}
