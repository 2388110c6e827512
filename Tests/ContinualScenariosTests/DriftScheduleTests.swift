import ContinualCore
import Foundation
import Testing
@testable import ContinualScenarios

@Suite("Drift building blocks")
struct DriftScheduleTests {
    let concepts = [ScalarConcept(name: "a", value: 0, labelValue: 10), ScalarConcept(name: "b", value: 1, labelValue: 20)]

    @Test("gradual drift: the share of new-concept samples follows the linear ramp over the window")
    func gradualRamp() {
        let width = 20_000
        let schedule = DriftSchedule(options: DriftOptions(type: .gradual, width: width), concepts: 2, length: 30_000)
        var rng = RandomSource(seed: 11)
        let bins = 10
        var fromNew = [Int](repeating: 0, count: bins)
        let per = width / bins
        for o in 0..<width {
            let (c, index) = schedule.concept(at: 30_000 + o, concepts: concepts, rng: &rng)
            #expect(c.name == concepts[index].name)
            if index == 1 { fromNew[o / per] += 1 }
        }
        for b in 0..<bins {
            let expected = (Double(b) + 0.5) / Double(bins)  // mean of the ramp over the bin
            let observed = Double(fromNew[b]) / Double(per)
            let sigma = (expected * (1 - expected) / Double(per)).squareRoot()
            #expect(abs(observed - expected) < 5 * sigma + 1e-3, "bin \(b): \(observed) vs ramp \(expected)")
        }
        // Before the window: only the old concept; after it: only the new one.
        #expect(schedule.newConceptProbability(at: 29_999) == 1)  // still segment 0 = its own concept
        #expect(schedule.position(at: 29_999).to == 0)
        #expect(schedule.newConceptProbability(at: 30_000 + width) == 1)
        #expect(abs(schedule.newConceptProbability(at: 30_000) - 0.5 / Double(width)) < 1e-12)
    }

    @Test("incremental drift moves parameters linearly; sudden switches at the boundary")
    func incrementalAndSudden() {
        var rng = RandomSource(seed: 1)
        let inc = DriftSchedule(options: DriftOptions(type: .incremental), concepts: 2, length: 100)
        let mid = inc.concept(at: 150, concepts: concepts, rng: &rng).concept
        #expect(abs(mid.value - 0.505) < 1e-12)
        #expect(inc.concept(at: 99, concepts: concepts, rng: &rng).concept.value == 0)
        let sudden = DriftSchedule(options: .sudden, concepts: 2, length: 100)
        #expect(sudden.concept(at: 99, concepts: concepts, rng: &rng).concept.value == 0)
        #expect(sudden.concept(at: 100, concepts: concepts, rng: &rng).concept.value == 1)
    }

    @Test("recurring drift replays the concept sequence")
    func recurring() {
        let s = DriftSchedule(options: DriftOptions(type: .recurring, repeats: 3), concepts: 2, length: 10)
        #expect(s.sequence == [0, 1, 0, 1, 0, 1])
        #expect(s.totalLength == 60)
        #expect(s.segment(at: 45) == 4)
    }

    @Test("virtual drift keeps the first concept's labelling function at every position")
    func virtualKeepsLabels() {
        var rng = RandomSource(seed: 2)
        for type in DriftOptions.Kind.allCases {
            let s = DriftSchedule(options: DriftOptions(type: type, kind: .virtual), concepts: 2, length: 50)
            for t in 0..<s.totalLength {
                let c = s.concept(at: t, concepts: concepts, rng: &rng).concept
                #expect(c.labelValue == 10)
            }
            #expect(s.concept(at: s.totalLength - 1, concepts: concepts, rng: &rng).concept.value >= 0.99)
        }
    }

    @Test("calendar cuts: weeks of 7 days, months of calendar length")
    func calendar() {
        #expect(ExperienceCut.month(ofDay: 30) == 0)
        #expect(ExperienceCut.month(ofDay: 31) == 1)
        #expect(ExperienceCut.month(ofDay: 58) == 1)
        #expect(ExperienceCut.month(ofDay: 59) == 2)
        #expect(ExperienceCut.month(ofDay: 365) == 12)
        let days = Array(0..<100)
        let weeks = ExperienceCut.week.groups(days: days, segments: days.map { _ in 0 })
        #expect(weeks.count == 15 && weeks[0].count == 7 && weeks[14].count == 2)
        let months = ExperienceCut.month.groups(days: days, segments: days.map { _ in 0 })
        #expect(months.map(\.count) == [31, 28, 31, 10])
        let blocks = ExperienceCut.fixed(30).groups(days: days, segments: days.map { _ in 0 })
        #expect(blocks.map(\.count) == [30, 30, 30, 10])
    }

    @Test("label noise flips about the configured share, never to the same class")
    func labelNoise() {
        var rng = RandomSource(seed: 5)
        let noise = LabelNoise(rate: 0.2, classes: 5)
        var changed = 0
        for _ in 0..<10_000 where noise.apply(3, rng: &rng) != 3 { changed += 1 }
        #expect(abs(Double(changed) / 10_000 - 0.2) < 0.02)
    }

    @Test("drift and cut options decode strictly")
    func decoding() throws {
        let d = try JSONDecoder().decode(DriftOptions.self, from: Data(#"{"type":"gradual","width":50,"kind":"virtual"}"#.utf8))
        #expect(d == DriftOptions(type: .gradual, width: 50, kind: .virtual))
        #expect(try JSONDecoder().decode(DriftOptions.self, from: Data(#""recurring""#.utf8)).repeats == 2)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(DriftOptions.self, from: Data(#"{"type":"abrupt"}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(DriftOptions.self, from: Data(#"{"widht":5}"#.utf8)) }
        #expect(try JSONDecoder().decode([ExperienceCut].self, from: Data(#"["week", 40, "drift_points"]"#.utf8))
            == [.week, .fixed(40), .driftPoints])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ExperienceCut.self, from: Data(#""fortnight""#.utf8)) }
    }
}
