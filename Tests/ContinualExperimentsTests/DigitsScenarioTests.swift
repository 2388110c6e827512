import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// The committed datasets/digits.h5, found from this file's location (tests run from anywhere).
let digitsPath: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.appendingPathComponent("datasets/digits.h5").path
}()

@Suite("Digits scenarios")
struct DigitsScenarioTests {
    func split(_ setting: SplitDigitsScenario.Setting) throws -> ExperienceStream {
        var o = SplitDigitsScenario(setting: setting)
        o.path = digitsPath
        return try o.makeStream(seed: 0)
    }

    @Test("the committed digits file: 1797 samples, 64 features, 10 classes")
    func file() throws {
        let s = try ScenarioArchive.read(path: digitsPath)
        #expect(s.dimension == 64 && s.head == .multiclass(classes: 10))
        #expect(s.experiences.map { $0.train.count + $0.test.count }.reduce(0, +) == 1797)
    }

    @Test("split_digits: 5 experiences of 2 classes; labels per setting")
    func splitShapes() throws {
        let c = try split(.class), d = try split(.domain), t = try split(.task)
        let all = try ScenarioArchive.read(path: digitsPath)
        let total = all.experiences.map(\.train.count).reduce(0, +)
        for s in [c, d, t] {
            #expect(s.experiences.count == 5 && s.dimension == 64)
            #expect(s.experiences.map(\.train.count).reduce(0, +) == total)
        }
        #expect(c.head == .multiclass(classes: 10) && d.head == .binary && t.head == .binary)
        for e in 0..<5 {
            #expect(Set(c.experiences[e].train.labels) == [Int32(2 * e), Int32(2 * e + 1)])
            #expect(Set(d.experiences[e].test.labels) == [0, 1])
            #expect(d.experiences[e].train.features == c.experiences[e].train.features)
            #expect(t.experiences[e].metadata["task_id"] == "\(e)")
        }
        #expect(t.metadata["requires"] != nil)
    }

    @Test("permuted_digits: fixed seeded permutations, labels unchanged")
    func permuted() throws {
        var o = PermutedDigitsScenario()
        o.path = digitsPath
        let a = try o.makeStream(seed: 5), b = try o.makeStream(seed: 5), other = try o.makeStream(seed: 6)
        #expect(a == b && a.experiences.count == 5)
        #expect(a.experiences[1].train.features != other.experiences[1].train.features)
        let p = o.permutation(2, dimension: 64, seed: 5)
        #expect(p.sorted() == Array(0..<64) && p != Array(0..<64))
        let x0 = a.experiences[0].train, x2 = a.experiences[2].train
        #expect(x0.labels == x2.labels)
        for j in 0..<64 { #expect(x2.features[j] == x0.features[p[j]]) }
        #expect(o.permutation(0, dimension: 64, seed: 5) == Array(0..<64))
    }

    @Test("permuted_digits settings: task keeps the digits and asks for one head per permutation; class offsets them by 10·e")
    func permutedSettings() throws {
        var o = PermutedDigitsScenario()
        o.path = digitsPath
        o.experiences = 3
        let domain = try o.makeStream(seed: 5)
        o.setting = .task
        let task = try o.makeStream(seed: 5)
        #expect(o.providesTaskIdentity && task.metadata["requires"] != nil && task.head == domain.head)
        o.setting = .class
        let cls = try o.makeStream(seed: 5)
        #expect(!o.providesTaskIdentity && cls.head == .multiclass(classes: 30))
        for e in 0..<3 {
            #expect(task.experiences[e].train == domain.experiences[e].train)
            #expect(task.experiences[e].metadata["task_id"] == "\(e)")
            #expect(cls.experiences[e].train.features == domain.experiences[e].train.features)
            #expect(cls.experiences[e].test.labels == domain.experiences[e].test.labels.map { $0 + Int32(10 * e) })
        }
        // The default is not written: run ids of files made before `setting` existed stay the same.
        let encoded = String(decoding: try JSONEncoder().encode(PermutedDigitsScenario()), as: UTF8.self)
        #expect(!encoded.contains("setting"))
        #expect(String(decoding: try JSONEncoder().encode(o), as: UTF8.self).contains("\"setting\":\"class\""))
    }
}

