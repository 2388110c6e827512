import ContinualCore
import Testing
@testable import ContinualScenarios

/// The poisoning transform changes exactly the rows its seeded sampler picks, in the stated way,
/// and nothing else; the attack success rate counts what it says.
@Suite struct StreamPoisoningTests {
    static func stream() throws -> ExperienceStream {
        try HabitDriftScenario(trainPerExperience: 150, testPerExperience: 40).makeStream(seed: 8)
    }

    static let backdoor = StreamPoisoning.Backdoor(fraction: 0.1, features: [2, 9], values: [1.0, 3.0], target: 1)

    @Test("the trigger is stamped on exactly round(fraction·n) rows per experience, flips on exactly round(f·n) other rows")
    func exactRows() throws {
        let clean = try Self.stream()
        let p = StreamPoisoning(labelFlip: 0.2, backdoor: Self.backdoor)
        let (poisoned, record) = p.apply(to: clean, runSeed: 4)
        let d = clean.dimension
        for (j, (c, q)) in zip(clean.experiences, poisoned.experiences).enumerated() {
            let n = c.train.count
            #expect(record.backdoored[j].count == Int((0.1 * Double(n)).rounded()))
            #expect(record.flipped[j].count == Int((0.2 * Double(n)).rounded()))
            #expect(Set(record.backdoored[j]).isDisjoint(with: record.flipped[j]))
            #expect(q.test == c.test)  // test sets stay clean
            let b = Set(record.backdoored[j]), f = Set(record.flipped[j])
            for r in 0..<n {
                let before = Array(c.train.row(r)), after = Array(q.train.row(r))
                if b.contains(r) {
                    #expect(after[2] == 1.0 && after[9] == 3.0 && q.train.labels[r] == 1)
                    for i in 0..<d where i != 2 && i != 9 { #expect(after[i] == before[i]) }
                } else if f.contains(r) {
                    #expect(after == before && q.train.labels[r] == 1 - c.train.labels[r])
                } else {
                    #expect(after == before && q.train.labels[r] == c.train.labels[r])
                }
            }
        }
        // Seeded: the same seed picks the same rows, another seed other rows; `seed` overrides the run's.
        #expect(p.apply(to: clean, runSeed: 4).1 == record)
        #expect(p.apply(to: clean, runSeed: 5).1 != record)
        var fixed = p
        fixed.seed = 4
        #expect(fixed.apply(to: clean, runSeed: 99).1 == record)
    }

    @Test("every row is equally likely to be poisoned (the sampler is uniform)")
    func uniformSampler() throws {
        let clean = try Self.stream()
        let n = clean.experiences[0].train.count
        var hits = [Int](repeating: 0, count: n)
        let runs = 400
        let p = StreamPoisoning(backdoor: Self.backdoor)
        for s in 0..<runs {
            for r in p.apply(to: clean, runSeed: UInt64(s)).1.backdoored[0] { hits[r] += 1 }
        }
        // Expected 40 hits per row (binomial sd ≈ 6): first and second half of the rows alike,
        // and no row far outside ±6 sd.
        let half = n / 2
        let first = hits[0..<half].reduce(0, +), second = hits[half...].reduce(0, +)
        #expect(abs(first - second) < runs * 15 / 10 * 2)
        #expect(hits.allSatisfy { abs($0 - 40) < 36 })
    }

    @Test("attack success rate: the fraction of non-target test rows classified as the target once triggered")
    func attackSuccess() throws {
        let clean = try Self.stream()
        // A linear model that answers 1 exactly when sleep_hours (feature 9) > 0.5.
        var model = MLP(spec: MLPSpec(inputs: 10, hidden: [], head: .binary), parameters: [Float](repeating: 0, count: 11))
        let layer = model.layers[0]
        model.parameters[layer.weightOffset(route: 0) + 9] = 10
        model.parameters[layer.biasOffset(route: 0)] = -5
        let hit = StreamPoisoning(backdoor: Self.backdoor).attackSuccessRate(model, stream: clean)
        #expect(hit.allSatisfy { $0 == 1 })
        let miss = StreamPoisoning(backdoor: .init(fraction: 0.1, features: [9], values: [0], target: 1)).attackSuccessRate(model, stream: clean)
        #expect(miss.allSatisfy { $0 == 0 })
        // Target 0: the same trigger now makes the model answer the non-target class.
        let other = StreamPoisoning(backdoor: .init(fraction: 0.1, features: [9], values: [3], target: 0)).attackSuccessRate(model, stream: clean)
        #expect(other.allSatisfy { $0 == 0 })
        #expect(StreamPoisoning(labelFlip: 0.1).attackSuccessRate(model, stream: clean).allSatisfy { $0.isNaN })
    }

    @Test("a trigger on a feature or a target the stream does not have is named")
    func problems() throws {
        let s = try Self.stream()
        #expect(StreamPoisoning(backdoor: .init(fraction: 0.1, features: [10], values: [1], target: 1)).problem(for: s)?.key == "backdoor.features")
        #expect(StreamPoisoning(backdoor: .init(fraction: 0.1, features: [1], values: [1], target: 2)).problem(for: s)?.key == "backdoor.target")
        #expect(StreamPoisoning(backdoor: Self.backdoor).problem(for: s)?.key == nil)
    }
}
