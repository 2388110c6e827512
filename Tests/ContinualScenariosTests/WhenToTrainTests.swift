import ContinualCore
import ContinualMetrics
import Foundation
import Testing
@testable import ContinualScenarios

/// The `on_drift` trigger, the safe-refresh gate and their `schedule` JSON.
@Suite struct WhenToTrainTests {
    static let open = DeviceDay.constant(day: 0, DeviceHour(charging: true, idle: true, wifi: true, battery: 1, thermal: .nominal))
    static let closed = DeviceDay.constant(day: 0, DeviceHour(charging: false, idle: false, wifi: false, battery: 1, thermal: .nominal))

    @Test("the trigger fires exactly where its detector signals drift", arguments: ["adwin", "ddm", "page_hinkley"])
    func firesAtTheDetectorsDriftIndex(type: String) throws {
        // Errors 10 % of the time, then 70 %: one sudden rise of the error rate at sample 600.
        var rng = RandomSource(seed: 7)
        let errors = (0..<1200).map { i in rng.bernoulli(i < 600 ? 0.1 : 0.7) }
        let spec = try DriftDetectorSpec(type: type)
        var detector = spec.makeDetector()
        let expected = errors.enumerated().compactMap { i, e in detector.update(e ? 1 : 0) == .drift ? i : nil }
        #expect(!expected.isEmpty && expected.contains { $0 >= 600 }, "\(type) must detect the rise for this test to mean anything")
        var trigger = DriftTrigger(spec: spec)
        var fired: [Int] = []
        for (i, e) in errors.enumerated() {
            if trigger.observe(error: e) { fired.append(i) }
            #expect(trigger.pending == !fired.isEmpty)
        }
        #expect(fired == expected)
        #expect(trigger.firings == expected)
        trigger.sessionRan()
        #expect(!trigger.pending)
        // A replay rebuilds the same detector: the next value gives the same signal.
        var replayed = DriftTrigger.replaying(spec: spec, errors: trigger.errors, pending: false)
        var copy = trigger
        for e in [true, true, false, true] { #expect(replayed.observe(error: e) == copy.observe(error: e)) }
    }

    @Test func onDriftTrainsOnlyAfterAFiringOnADayTheGateOpens() {
        let s = ScheduleConfig(type: .onDrift, detector: try! DriftDetectorSpec(type: "adwin"))
        #expect(!s.runsSession(day: 3, device: Self.open, pendingSamples: 40, lastSessionDay: 0, endsExperience: true))
        #expect(!s.runsSession(day: 3, device: Self.closed, pendingSamples: 40, lastSessionDay: 0, endsExperience: true, driftPending: true))
        #expect(s.runsSession(day: 3, device: Self.open, pendingSamples: 40, lastSessionDay: 0, endsExperience: true, driftPending: true))
        #expect(!s.runsSession(day: 3, device: Self.open, pendingSamples: 0, lastSessionDay: 0, endsExperience: true, driftPending: true))
        // Before any session: a firing, or n (default 100) new samples as after_n_new_samples.
        #expect(s.runsSession(day: 3, device: Self.open, pendingSamples: 99, lastSessionDay: -1, endsExperience: true, driftPending: true))
        #expect(!s.runsSession(day: 3, device: Self.open, pendingSamples: 99, lastSessionDay: -1, endsExperience: true))
        #expect(s.runsSession(day: 3, device: Self.open, pendingSamples: 100, lastSessionDay: -1, endsExperience: true))
        #expect(!s.runsSession(day: 3, device: Self.closed, pendingSamples: 100, lastSessionDay: -1, endsExperience: true))
        #expect(s.isAdaptive)
        // Safe refresh needs more than its window pending, whatever the type.
        let daily = ScheduleConfig(type: .daily, safeRefresh: SafeRefreshGate(window: 20, margin: 0))
        #expect(!daily.runsSession(day: 3, device: Self.open, pendingSamples: 20, lastSessionDay: -1, endsExperience: true))
        #expect(daily.runsSession(day: 3, device: Self.open, pendingSamples: 21, lastSessionDay: -1, endsExperience: true))
        #expect(daily.isAdaptive && !ScheduleConfig(type: .daily).isAdaptive)
    }

    /// A logistic model on all-zero inputs predicts by its bias alone: +1 everywhere → class 1.
    static func constantModel(predicting label: Int) -> MLP {
        var rng = RandomSource(seed: 1)
        var m = MLP(spec: MLPSpec(inputs: 3, hidden: []), rng: &rng)
        m.parameters = [Float](repeating: label == 1 ? 1 : -1, count: m.parameterCount)
        return m
    }

    static func zeros(labels: [Int32]) -> Samples {
        Samples(dimension: 3, features: [Float](repeating: 0, count: 3 * labels.count), labels: labels)
    }

    @Test func theGateKeepsTheCurrentModelWhenTheCandidateIsWorseAndAcceptsABetterOne() {
        let ones = Self.zeros(labels: [Int32](repeating: 1, count: 10))
        let gate = SafeRefreshGate(window: 10, margin: 0.05)
        let worse = gate.decide(current: Self.constantModel(predicting: 1), candidate: Self.constantModel(predicting: 0), holdout: ones)
        #expect(worse == .init(currentAccuracy: 1, candidateAccuracy: 0, accepted: false))
        let better = gate.decide(current: Self.constantModel(predicting: 0), candidate: Self.constantModel(predicting: 1), holdout: ones)
        #expect(better == .init(currentAccuracy: 0, candidateAccuracy: 1, accepted: true))
        // 6 of 10 labels are 1: the candidate (always 0) is 0.2 worse; the margin decides.
        let mixed = Self.zeros(labels: [1, 1, 1, 1, 1, 1, 0, 0, 0, 0])
        let current = Self.constantModel(predicting: 1), candidate = Self.constantModel(predicting: 0)
        #expect(!SafeRefreshGate(window: 10, margin: 0.1).decide(current: current, candidate: candidate, holdout: mixed).accepted)
        #expect(SafeRefreshGate(window: 10, margin: 0.25).decide(current: current, candidate: candidate, holdout: mixed).accepted)
        // Equal accuracy with margin 0 is accepted (not worse).
        #expect(SafeRefreshGate(window: 10, margin: 0).decide(current: current, candidate: current, holdout: mixed).accepted)
    }

    @Test func theWindowIsTheNewestSamples() throws {
        let s = Self.zeros(labels: [0, 1, 0, 1, 1])
        let (train, holdout) = try #require(SafeRefreshGate(window: 2).split(s))
        #expect(train.labels == [0, 1, 0] && holdout.labels == [1, 1])
        #expect(SafeRefreshGate(window: 5).split(s) == nil)
    }

    func decode(_ json: String) throws -> ScheduleConfig {
        try JSONDecoder().decode(ScheduleConfig.self, from: Data(json.utf8))
    }

    @Test func scheduleJSONRoundTripsAndOldSchedulesEncodeAsBefore() throws {
        let s = try decode(#"{"type": "on_drift", "detector": {"type": "ddm", "drift_threshold": 2.5}, "safe_refresh": {"window": 15, "margin": 0.1}}"#)
        #expect(s.detector?.parameters["drift_threshold"] == 2.5 && s.detector?.kind == .ddm)
        #expect(s.safeRefresh == SafeRefreshGate(window: 15, margin: 0.1))
        let again = try JSONDecoder().decode(ScheduleConfig.self, from: JSONEncoder().encode(s))
        #expect(again == s)
        let plain = String(decoding: try JSONEncoder().encode(ScheduleConfig(type: .weekly)), as: UTF8.self)
        #expect(!plain.contains("detector") && !plain.contains("safe_refresh"))
        #expect(!ScheduleConfig(type: .weekly).canonicalDescription.contains("detector"))
        #expect(s.canonicalDescription.hasSuffix("|detector=ddm(drift_threshold=2.5,warm_start=30.0,warning_threshold=2.0)|safe_refresh=window:15,margin:0.1"))
    }

    @Test func badOptionsNameTheirKeyPath() {
        let cases: [(String, String, String)] = [
            (#"{"type": "on_drift", "detector": {"type": "adwin", "delta": 2}}"#, "detector.delta", "must be in (0, 1), got 2"),
            (#"{"type": "on_drift", "detector": {"type": "adwin", "clock": 0}}"#, "detector.clock", "must be a whole number"),
            (#"{"type": "on_drift", "detector": {"type": "adwin", "lambda": 1}}"#, "detector.lambda", "is not a parameter of adwin"),
            (#"{"type": "on_drift", "detector": {"type": "cusum"}}"#, "detector.type", "allowed: adwin, ddm"),
            (#"{"type": "on_drift", "detector": {"delta": 0.1}}"#, "detector", "needs a \"type\""),
            (#"{"type": "on_drift"}"#, "type", "needs a \"detector\""),
            (#"{"type": "daily", "detector": {"type": "adwin"}}"#, "detector", "\"on_drift\" only"),
            (#"{"type": "daily", "safe_refresh": {"window": 0}}"#, "safe_refresh.window", "must be in 1...1000000"),
            (#"{"type": "daily", "safe_refresh": {"margin": 1.5}}"#, "safe_refresh.margin", "must be in [0, 1]"),
            (#"{"type": "daily", "safe_refresh": {"size": 5}}"#, "safe_refresh.size", "unknown key"),
        ]
        for (json, path, says) in cases {
            do {
                _ = try decode(json)
                Issue.record("accepted \(json)")
            } catch let DecodingError.dataCorrupted(c) {
                #expect(c.codingPath.map(\.stringValue).joined(separator: ".") == path, "\(json)")
                #expect(c.debugDescription.contains(says), "\(json): \(c.debugDescription)")
            } catch let DecodingError.keyNotFound(key, c) {
                #expect((c.codingPath + [key]).map(\.stringValue).joined(separator: ".") == path + ".type", "\(json)")
                #expect(c.debugDescription.contains(says), "\(json): \(c.debugDescription)")
            } catch {
                Issue.record("\(json): \(error)")
            }
        }
    }
}
