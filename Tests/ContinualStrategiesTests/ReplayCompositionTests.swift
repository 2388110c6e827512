import ContinualCore
@testable import ContinualStrategies
import Foundation
import Testing

@Suite("Replay plugin")
struct ReplayCompositionTests {
    @Test("composes with other plugins in one strategy list: [replay, naive] and [joint, replay]")
    func composition() throws {
        let stream = try ReplayTestSupport.stream(train: 200, test: 50)
        let options = Replay.Options(capacity: 50, replayPerBatch: 8)
        let (t1, o1) = try ReplayTestSupport.train([Replay(options: options), Naive()], on: stream)
        let r1 = try #require(t1.plugins[0] as? Replay)
        #expect(r1.memory.count == 50)
        #expect(o1.trainSetSizes == [200, 200, 200, 200, 200])
        // 7 batches per epoch, 2 epochs: experience 0 replays from its own (streamed) buffer after
        // the first batch, later experiences in every batch.
        #expect(o1.samplesProcessed[1] == 2 * (200 + 7 * 8))
        #expect(o1.pluginReports.map(\.0) == ["replay", "naive"])

        let (t2, o2) = try ReplayTestSupport.train([Joint(), Replay(options: options)], on: stream)
        let r2 = try #require(t2.plugins[1] as? Replay)
        #expect(o2.trainSetSizes == [200, 400, 600, 800, 1000])
        #expect(r2.memory.count == 50)
        #expect(o2.accuracy.count == 5)
    }

    @Test("on a multi-head model every stored sample keeps its experience's route")
    func multiHeadRoutes() throws {
        let stream = try ReplayTestSupport.stream(train: 200, test: 50)
        for policy in BufferPolicyKind.allCases {
            let (trainer, _) = try ReplayTestSupport.train([Replay(options: Replay.Options(capacity: 40, policy: policy))],
                                                           on: stream, heads: 5)
            let replay = try #require(trainer.plugins[0] as? Replay)
            #expect(replay.memory.layout.routeBytes == 1)
            #expect(Set(replay.memory.routes).count > 1)
            for s in 0..<replay.memory.count {
                #expect(Int(replay.memory.routes[s]) == replay.memory.origins[s].experience)
            }
        }
    }

    @Test("same seed, same buffer and numbers; the report has the documented shapes")
    func deterministicReport() throws {
        let stream = try ReplayTestSupport.stream(train: 200, test: 50)
        let options = Replay.Options(capacityBytes: 2048, precision: .int8, policy: .classBalanced, storeIndices: true)
        let (_, a) = try ReplayTestSupport.train([Replay(options: options)], on: stream)
        let (_, b) = try ReplayTestSupport.train([Replay(options: options)], on: stream)
        #expect(a.accuracy == b.accuracy)
        #expect(a.pluginReports[0].1 == b.pluginReports[0].1)
        let report = a.pluginReports[0].1
        #expect(report.arrays["class_counts"]?.shape == [5, 2])
        #expect(report.arrays["origin_class_counts"]?.shape == [5, 2])
        #expect(report.arrays["bytes_used"]?.shape == [5])
        let count = try #require(report.attributes["buffer_count"])
        guard case .int(let n) = count else { Issue.record("buffer_count is not an Int"); return }
        #expect(report.arrays["stored_indices"]?.shape == [Int(n), 2])
        #expect(report.arrays["class_counts"]!.values.suffix(2).reduce(0, +) == Double(n))
        #expect(report.attributes["buffer_bytes"] == .int(40 + n * 11))
    }

    @Test("core-set policies at experience end store only past experiences while training")
    func experienceEndUpdate() throws {
        let stream = try ReplayTestSupport.stream(train: 200, test: 50)
        let (trainer, o) = try ReplayTestSupport.train(
            [Replay(options: Replay.Options(capacity: 30, replayPerBatch: 4, policy: .coresetHerding))], on: stream)
        let replay = try #require(trainer.plugins[0] as? Replay)
        #expect(o.samplesProcessed[0] == 2 * 200)  // empty buffer during the first experience
        #expect(replay.memory.count == 30)
        #expect(Set(replay.memory.origins.map(\.experience)) == [0, 1, 2, 3, 4])
    }

    @Test("every policy keeps samples of every experience (none degenerates to the latest data)",
          arguments: BufferPolicyKind.allCases)
    func everyExperienceRepresented(policy: BufferPolicyKind) throws {
        let stream = try ReplayTestSupport.stream(train: 300, test: 20)
        let (trainer, _) = try ReplayTestSupport.train([Replay(options: Replay.Options(capacity: 51, policy: policy))],
                                                       on: stream, epochs: 1)
        let replay = try #require(trainer.plugins[0] as? Replay)
        var perExperience = [Int](repeating: 0, count: 5)
        for o in replay.memory.origins { perExperience[o.experience] += 1 }
        #expect(replay.memory.count == 51)
        #expect(perExperience.allSatisfy { $0 >= 3 }, "\(policy.rawValue): per-experience counts \(perExperience)")
    }

    static func decode(_ json: String) throws -> Replay.Options {
        try JSONDecoder().decode(Replay.Options.self, from: Data(json.utf8))
    }

    @Test("options: defaults, strict validation and a full round trip")
    func options() throws {
        let defaults = try Self.decode(#"{"type": "replay"}"#)
        #expect(defaults == Replay.Options())
        #expect(defaults.capacity == 200 && defaults.capacityBytes == nil && defaults.replayRatio == 1)
        #expect(defaults.update == .stream && defaults.policy == .reservoir && defaults.precision == .float32)
        #expect(try Self.decode(#"{"policy": "coreset_kcenter"}"#).update == .experienceEnd)
        for bad in [#"{"capacity": 10, "capacity_bytes": 100}"#, #"{"replay_per_batch": 1, "replay_ratio": 0.5}"#,
                    #"{"policy": "coreset_herding", "update": "stream"}"#, #"{"features": "penultimate"}"#,
                    #"{"precision": "int4"}"#, #"{"capacity_bytes": 0}"#, #"{"capcity": 3}"#] {
            #expect(throws: DecodingError.self, "\(bad)") { _ = try Self.decode(bad) }
        }
        let full = try Self.decode(#"{"capacity_bytes": 4096, "replay_per_batch": 16, "update": "experience_end", "precision": "int8", "policy": "coreset_herding", "features": "penultimate", "store_indices": true}"#)
        let again = try JSONDecoder().decode(Replay.Options.self, from: JSONEncoder().encode(full))
        #expect(again == full)
    }
}
