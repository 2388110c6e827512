import ContinualCore
import ContinualOnDevice
import ContinualScenarios
import ContinualStrategies

/// What the app does at today's decision point.
public enum ReminderDecision: String, Sendable, Equatable, CaseIterable {
    /// p(done today) is low: send a reminder notification.
    case remind
    /// In between: a quiet badge on the app icon only.
    case badge
    /// p(done today) is high: leave the user alone.
    case silent
}

/// When to remind: below `remindBelow` a reminder, above `silentAbove` nothing, a badge between.
public struct ReminderPolicy: Sendable, Equatable {
    /// Remind when p(done today) is below this.
    public var remindBelow: Float
    /// Stay silent when p(done today) is above this.
    public var silentAbove: Float

    /// The policy with its two thresholds (defaults 0.4 and 0.8).
    public init(remindBelow: Float = 0.4, silentAbove: Float = 0.8) {
        self.remindBelow = remindBelow
        self.silentAbove = silentAbove
    }

    /// The decision for probability `p` that the habit is done today.
    public func decide(_ p: Float) -> ReminderDecision {
        p < remindBelow ? .remind : p > silentAbove ? .silent : .badge
    }
}

/// The habit tracker as an app process: its event log and its `PersonalModel`, restored from the
/// state file at launch and written back after every change (each event, each decision, the
/// end of each day, each training session). Killing the process at any point and launching it
/// again loses nothing, so the app decides as if it had never been killed.
public struct HabitApp {
    /// The user's model.
    public private(set) var model: PersonalModel
    /// The user's events so far.
    public private(set) var log: HabitLog
    /// The state file the app restores from at launch and writes after every step.
    public let store: StateFile

    /// Format of the state file: magic, version, the model's checkpoint, the event log, checksum.
    static let magic: [UInt8] = Array("CKHABIT1".utf8)
    static let version = 1

    /// The strategies the example offers, with the options it uses for each.
    public static let strategies: [String] = ["naive", "ewc", "si", "replay", "replay+ewc", "adapters", "lora"]

    /// The strategy `name` (one of `strategies`) as typed plugin options, or nil.
    public static func strategy(named name: String) -> [any PluginOptions]? {
        switch name {
        case "naive": return [Naive.Options()]
        case "ewc": return [EWC.Options(lambda: 100, mode: .online, gamma: 0.9)]
        case "si": return [SynapticIntelligence.Options(c: 0.5)]
        case "replay": return [Replay.Options(capacity: 200, replayPerBatch: 16)]
        case "replay+ewc": return [Replay.Options(capacity: 200, replayPerBatch: 16), EWC.Options(lambda: 100, mode: .online, gamma: 0.9)]
        case "adapters", "lora":
            // One adapter (or LoRA block) for weekdays and one for weekends; the core trains for
            // the first two weeks of sessions, then only the adapters.
            if name == "adapters" {
                var o = Adapters.Options()
                o.routing = .context
                o.contextFeature = "weekend"
                o.freezeCoreAfter = 13
                return [o]
            }
            var o = LoRA.Options()
            o.routing = .context
            o.contextFeature = "weekend"
            o.freezeCoreAfter = 13
            return [o]
        default: return nil
        }
    }

    /// The model the app ships: 8 features → 16 → 8 → p(done today); Adam; 5 epochs of batches of
    /// 16 per session; sessions daily, at night, when the phone charges, is idle and on Wi-Fi.
    public static func configuration(strategy: [any PluginOptions], days: Int, seed: UInt64) -> PersonalModel.Configuration {
        PersonalModel.Configuration(
            model: MLPSpec(inputs: HabitLog.featureNames.count, hidden: [16, 8]),
            optimizer: .adam(learningRate: 0.005),
            training: TrainingOptions(epochs: 5, batchSize: 16),
            strategy: strategy,
            schedule: ScheduleConfig(type: .daily, when: GateCondition(charging: true, idle: true, wifi: true)),
            seed: seed, sessionCapacity: max(days, 1), featureNames: HabitLog.featureNames)
    }

    /// Launches the app: restores the state file, or starts fresh when there is none.
    public static func launch(store: StateFile, configuration: PersonalModel.Configuration) throws -> HabitApp {
        guard let bytes = try store.read() else {
            return HabitApp(model: try PersonalModel(configuration: configuration), log: HabitLog(), store: store)
        }
        var r = ByteReader(bytes)
        do {
            guard bytes.count >= magic.count + 16, try r.bytes(magic.count) == magic else {
                throw PersonalModelError.checkpoint("\(store.path) is not a habit-app state file")
            }
            let version = try r.int()
            guard version == Self.version else {
                throw PersonalModelError.checkpoint("state file version \(version), this app reads \(Self.version)")
            }
            guard StableHash.fnv1a64(bytes: bytes[0..<(bytes.count - 8)])
                    == ByteReader(Array(bytes.suffix(8))).peekU64() else {
                throw PersonalModelError.checkpoint("\(store.path) is corrupt (checksum)")
            }
            let model = try PersonalModel(checkpoint: try r.bytes(r.count()), configuration: configuration)
            let log = try HabitLog(reading: &r)
            return HabitApp(model: model, log: log, store: store)
        } catch let error as PersonalModelError {
            throw error
        } catch {
            throw PersonalModelError.checkpoint("\(store.path): \(error)")
        }
    }

    /// The state file's bytes.
    public func state() -> [UInt8] {
        var w = ByteWriter()
        w.bytes(Self.magic)
        w.int(Self.version)
        let checkpoint = model.checkpoint()
        w.int(checkpoint.count)
        w.bytes(checkpoint)
        log.encode(into: &w)
        w.u64(StableHash.fnv1a64(bytes: w.data))
        return w.data
    }

    func save() throws { try store.write(state()) }

    /// Records one of the user's events.
    public mutating func handle(_ event: HabitEvent) throws {
        log.record(event)
        try save()
    }

    /// Today's decision at `hour`: builds the feature vector, keeps it for tomorrow's label, and
    /// turns the model's p(done today) into a decision.
    public mutating func decide(hour: Int, policy: ReminderPolicy) throws -> (probability: Float, decision: ReminderDecision) {
        let x = log.features(hour: hour)
        try model.observe(features: x, day: log.today)
        let p = try model.predict(x)[1]
        try save()
        return (p, policy.decide(p))
    }

    /// Midnight: the day's outcome becomes the label of its observation.
    public mutating func endDay() throws -> Bool {
        let day = log.today
        let outcome = log.endDay()
        if model.unlabelled.contains(where: { $0.day == day }) { try model.label(day: day, outcome: outcome) }
        try save()
        return outcome
    }

    /// The night's background task: trains if the schedule and the phone allow, then saves.
    public mutating func backgroundTask(device: DeviceDay) throws -> TrainingSessionReport? {
        guard let report = try model.trainIfDue(device: device) else { return nil }
        try save()
        return report
    }
}

extension ByteReader {
    /// The first 8 bytes as a little-endian UInt64 (0 when shorter).
    func peekU64() -> UInt64 {
        var copy = self
        return (try? copy.u64()) ?? 0
    }
}
