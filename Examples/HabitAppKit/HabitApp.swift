import ContinualCore
import ContinualOnDevice
import ContinualScenarios
import ContinualStrategies
import ContinualHabitEvents
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the app does at today's decision point.
public enum ReminderDecision: String, Sendable, Equatable, CaseIterable {
    /// p(done that day) is low: send a reminder notification.
    case remind
    /// In between: a quiet badge on the app icon only.
    case badge
    /// p(done that day) is high: leave the user alone.
    case silent
}

/// When to remind: below `remindBelow` a reminder, above `silentAbove` nothing, a badge between.
public struct ReminderPolicy: Sendable, Equatable {
    /// Remind when p(done that day) is below this.
    public var remindBelow: Float
    /// Stay silent when p(done that day) is above this.
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

/// The habit tracker as an app process: its SQLite database (the raw event log, the decisions,
/// the training samples, the model's checkpoint and how far the app got) and its `PersonalModel`.
///
/// The loop, each day d: record the user's events → at the end of the day, from the events alone
/// (`HabitFeatureExtractor`): label yesterday's sample with whether d was completed, `observe` the
/// features of d, `predict` p(done on d + 1) and decide tomorrow's reminder (remind when p < 0.4,
/// stay silent when p > 0.8, a badge between) → at night `trainIfDue` on the labelled samples.
///
/// Every step is one SQLite transaction that also records how far the app got, so a kill at any
/// moment leaves the database at a step boundary; a relaunch reads it and continues, and a step
/// offered again (the app's input replayed after a kill) is recognised and skipped: events by
/// their `(day, seq)` primary key, day closes and nights by the progress columns.
public final class HabitApp {
    /// The user's model as of the last committed step.
    public private(set) var model: PersonalModel
    /// The features of the committed events.
    public private(set) var extractor: HabitFeatureExtractor
    /// The last day closed (nil: none yet).
    public private(set) var closedThrough: Int?
    /// The last night whose background task ran (nil: none yet).
    public private(set) var nightsThrough: Int?
    /// This launch's number (1 = the first launch of the install).
    public let launches: Int
    /// Kills the simulation injects.
    public var killSwitch = KillSwitch.never

    let database: SQLiteDatabase
    var keys: Set<EventKey>
    var decisions: [Int: StoredDecision]
    var sessions: [Int: SessionSummary]

    struct EventKey: Hashable {
        var day: Int
        var seq: Int
    }

    /// The database layout. `user_version` 1. `events` is keyed by (day, seq), so a replayed
    /// event cannot be stored twice; `decisions` by the day the decision is for; `samples` by the
    /// day the features describe (label NULL until the next day ends); `sessions` by night;
    /// `app_state` is one row.
    static let schema = """
        CREATE TABLE events (day INTEGER NOT NULL, seq INTEGER NOT NULL, timestamp INTEGER NOT NULL,
                             event TEXT NOT NULL, PRIMARY KEY (day, seq)) WITHOUT ROWID;
        CREATE TABLE decisions (day INTEGER PRIMARY KEY, probability_bits INTEGER NOT NULL, decision TEXT NOT NULL);
        CREATE TABLE samples (day INTEGER PRIMARY KEY, features BLOB NOT NULL, label INTEGER);
        CREATE TABLE sessions (day INTEGER PRIMARY KEY, session INTEGER NOT NULL, samples INTEGER NOT NULL,
                               joules REAL NOT NULL, peak_memory INTEGER NOT NULL);
        CREATE TABLE app_state (id INTEGER PRIMARY KEY CHECK (id = 1), checkpoint BLOB NOT NULL,
                                closed_through INTEGER, nights_through INTEGER, launches INTEGER NOT NULL);
        PRAGMA user_version = 1;
        """

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

    /// The model the app ships: 9 features of a day (`HabitFeatureExtractor`) → 16 → 8 → p(done the
    /// next day); Adam; 5 epochs of batches of 16 per session; sessions daily, at night, when the
    /// phone charges, is idle and on Wi-Fi.
    public static func configuration(strategy: [any PluginOptions], days: Int, seed: UInt64) -> PersonalModel.Configuration {
        PersonalModel.Configuration(
            model: MLPSpec(inputs: HabitFeatureExtractor.featureNames.count, hidden: [16, 8]),
            optimizer: .adam(learningRate: 0.005),
            training: TrainingOptions(epochs: 5, batchSize: 16),
            strategy: strategy,
            schedule: ScheduleConfig(type: .daily, when: GateCondition(charging: true, idle: true, wifi: true)),
            seed: seed, sessionCapacity: max(days, 1), featureNames: HabitFeatureExtractor.featureNames)
    }

    /// Launches the app on the database at `path` (created on the first launch): WAL journal,
    /// `synchronous = NORMAL` (see docs/on-device.md), the model restored from the stored
    /// checkpoint, the committed events read back into the feature extractor. Counts the launch.
    /// Unless `configuration` holds an integrity key, the app's own `StateKey` seals the state:
    /// made with the database, read back from `DATABASE.key` on every later launch.
    public static func launch(databasePath path: String, configuration: PersonalModel.Configuration) throws -> HabitApp {
        var configuration = configuration
        if configuration.integrityKey == nil {
            configuration.integrityKey = try StateKey.load(forDatabase: path, create: access(path, F_OK) != 0)
        }
        let db = try SQLiteDatabase(path: path)
        // WAL: a writer appends to the log and commits by a commit record, so a kill mid-write
        // leaves the database as of the last commit. NORMAL: WAL is synced at checkpoints only;
        // durable across process kills (every case here), may lose the latest commits (never
        // consistency) on a power loss or OS crash.
        guard try db.rows("PRAGMA journal_mode = WAL", [], { $0.text(0) }) == ["wal"] else {
            throw EventStoreError(path: path, "cannot switch to WAL journal mode")
        }
        try db.execute("PRAGMA synchronous = NORMAL")
        switch try db.rows("PRAGMA user_version", [], { $0.integer(0) }).first ?? 0 {
        case 0: try db.execute("BEGIN IMMEDIATE;\n" + schema + "\nCOMMIT;")
        case 1: break
        case let v: throw EventStoreError(path: path, "database version \(v), this app reads version 1")
        }
        try db.execute("BEGIN IMMEDIATE")
        let state = try db.rows("SELECT checkpoint, closed_through, nights_through, launches FROM app_state WHERE id = 1") {
            (checkpoint: $0.blob(0), closed: $0.isNull(1) ? nil : Int($0.integer(1)), nights: $0.isNull(2) ? nil : Int($0.integer(2)),
             launches: Int($0.integer(3)))
        }.first
        let model: PersonalModel
        var closed: Int?, nights: Int?, launches = 1
        if let state {
            do {
                model = try PersonalModel(checkpoint: state.checkpoint, configuration: configuration)
            } catch {
                try? db.execute("ROLLBACK")
                throw error
            }
            closed = state.closed
            nights = state.nights
            launches = state.launches + 1
            try db.run("UPDATE app_state SET launches = ? WHERE id = 1", [.integer(Int64(launches))])
        } else {
            model = try PersonalModel(configuration: configuration)
            try db.run("INSERT INTO app_state (id, checkpoint, closed_through, nights_through, launches) VALUES (1, ?, NULL, NULL, 1)",
                       [.blob(model.checkpoint())])
        }
        try db.execute("COMMIT")
        let events = try db.storedEvents()
        var extractor = HabitFeatureExtractor()
        var keys = Set<EventKey>()
        for e in events {
            extractor.add(e)
            keys.insert(EventKey(day: e.day, seq: e.seq))
        }
        var decisions: [Int: StoredDecision] = [:]
        for (day, bits, text) in try db.rows("SELECT day, probability_bits, decision FROM decisions", [], {
            (Int($0.integer(0)), UInt32(truncatingIfNeeded: $0.integer(1)), $0.text(2))
        }) {
            guard let d = ReminderDecision(rawValue: text) else { throw EventStoreError(path: path, "unknown decision \"\(text)\"") }
            decisions[day] = StoredDecision(probability: Float(bitPattern: bits), decision: d)
        }
        var sessions: [Int: SessionSummary] = [:]
        for session in try db.rows("SELECT day, session, samples, joules, peak_memory FROM sessions", [], {
            SessionSummary(day: Int($0.integer(0)), session: Int($0.integer(1)), samples: Int($0.integer(2)),
                           joules: $0.real(3), peakMemory: Int($0.integer(4)))
        }) {
            sessions[session.day] = session
        }
        return HabitApp(database: db, model: model, extractor: extractor, keys: keys, closed: closed, nights: nights,
                        launches: launches, decisions: decisions, sessions: sessions)
    }

    init(database: SQLiteDatabase, model: PersonalModel, extractor: HabitFeatureExtractor, keys: Set<EventKey>, closed: Int?,
         nights: Int?, launches: Int, decisions: [Int: StoredDecision], sessions: [Int: SessionSummary]) {
        self.database = database
        self.model = model
        self.extractor = extractor
        self.keys = keys
        self.closedThrough = closed
        self.nightsThrough = nights
        self.launches = launches
        self.decisions = decisions
        self.sessions = sessions
    }

    /// Closes the database (an open transaction is rolled back, as after a kill).
    public func close() { database.close() }

    /// Runs `body` as one transaction (BEGIN IMMEDIATE … COMMIT). Any error but a simulated kill
    /// rolls it back; a kill leaves it open, as a dead process would, until the connection closes.
    func transaction(_ body: () throws -> Void) throws {
        try database.execute("BEGIN IMMEDIATE")
        do {
            try body()
        } catch let killed as AppKilled {
            throw killed
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
        try database.execute("COMMIT")
    }

    /// Records one raw event in its own transaction; false when an event with its key is
    /// already stored (a replay), which is then left as it is.
    @discardableResult
    public func record(_ event: HabitEventRecord) throws -> Bool {
        let key = EventKey(day: event.day, seq: event.seq)
        guard !keys.contains(key) else { return false }
        try transaction {
            try database.run("INSERT OR IGNORE INTO events (day, seq, timestamp, event) VALUES (?, ?, ?, ?)",
                             [.integer(Int64(event.day)), .integer(Int64(event.seq)), .integer(event.timestamp), .text(event.kind.rawValue)])
            try killSwitch.maybeKill(at: .eventWrite)
        }
        keys.insert(key)
        extractor.add(event)
        try killSwitch.maybeKill(at: .betweenSteps)
        return true
    }

    /// The decision stored for `day` (made when the day before closed), nil when none yet.
    public func decision(day: Int) -> StoredDecision? { decisions[day] }

    /// The training session of night `day`, if one ran.
    public func session(night day: Int) -> SessionSummary? { sessions[day] }

    /// Ends `day` (days close in order; closing a closed day does nothing): labels the sample of
    /// `day − 1` with whether `day` was completed, observes the features of `day` (from the install
    /// day on), predicts p(done on day + 1) and stores the decision for `day + 1` — all in one
    /// transaction with the model's checkpoint. The first call, for the day before the install,
    /// only makes the install day's decision (from an empty history).
    public func closeDay(_ day: Int, policy: ReminderPolicy) throws {
        if let closed = closedThrough {
            guard day > closed else { return }
            guard day == closed + 1 else { throw EventStoreError(path: database.path, "day \(day) closed before day \(closed + 1)") }
        }
        var next = model
        let labelled = next.unlabelled.contains { $0.day == day - 1 }
        let completed = extractor.summary(day: day).completed
        if labelled { try next.label(day: day - 1, outcome: completed) }
        let x = extractor.features(day: day)
        let observed = extractor.firstDay.map { day >= $0 } ?? false
        if observed { try next.observe(features: x, day: day) }
        let p = try next.predict(x)[1]
        let decided = StoredDecision(probability: p, decision: policy.decide(p))
        try transaction {
            try database.run("INSERT OR REPLACE INTO decisions (day, probability_bits, decision) VALUES (?, ?, ?)",
                             [.integer(Int64(day + 1)), .integer(Int64(p.bitPattern)), .text(decided.decision.rawValue)])
            if observed {
                try database.run("INSERT OR REPLACE INTO samples (day, features, label) VALUES (?, ?, NULL)",
                                 [.integer(Int64(day)), .blob(Self.bytes(x))])
            }
            if labelled {
                try database.run("UPDATE samples SET label = ? WHERE day = ?", [.integer(completed ? 1 : 0), .integer(Int64(day - 1))])
            }
            try database.run("UPDATE app_state SET checkpoint = ?, closed_through = ? WHERE id = 1",
                             [.blob(next.checkpoint()), .integer(Int64(day))])
            try killSwitch.maybeKill(at: .dayClose)
        }
        model = next
        closedThrough = day
        decisions[day + 1] = decided
        try killSwitch.maybeKill(at: .betweenSteps)
    }

    /// The background task of the night after `day` (once per night, after the day closed):
    /// trains if the schedule and the phone's states (`device`) allow, then commits the new
    /// checkpoint and the session's figures with the night's progress in one transaction.
    @discardableResult
    public func nightTask(_ day: Int, device: DeviceDay) throws -> SessionSummary? {
        if let nights = nightsThrough, day <= nights { return sessions[day] }
        guard let closed = closedThrough, closed >= day else { throw EventStoreError(path: database.path, "night \(day) before its day closed") }
        var next = model
        let report = try next.trainIfDue(device: device)
        let summary = report.map { SessionSummary(day: day, session: $0.session, samples: $0.newSamples,
                                                  joules: $0.energy.joules, peakMemory: $0.peakMemory.total) }
        try transaction {
            if let summary {
                try database.run("UPDATE app_state SET checkpoint = ?, nights_through = ? WHERE id = 1",
                                 [.blob(next.checkpoint()), .integer(Int64(day))])
                try database.run("INSERT OR REPLACE INTO sessions (day, session, samples, joules, peak_memory) VALUES (?, ?, ?, ?, ?)",
                                 [.integer(Int64(day)), .integer(Int64(summary.session)), .integer(Int64(summary.samples)),
                                  .real(summary.joules), .integer(Int64(summary.peakMemory))])
                try killSwitch.maybeKill(at: .training)
            } else {
                try database.run("UPDATE app_state SET nights_through = ? WHERE id = 1", [.integer(Int64(day))])
            }
        }
        model = next
        nightsThrough = day
        if let summary { sessions[day] = summary }
        try killSwitch.maybeKill(at: .betweenSteps)
        return summary
    }

    // MARK: Reading the database

    /// Every event stored in the database at `path`, in (day, seq) order (read only: not a launch).
    public static func events(inDatabase path: String) throws -> [HabitEventRecord] {
        try SQLiteDatabase(path: path).storedEvents()
    }

    /// The labelled samples stored in the database at `path`, oldest first (read only).
    public static func samples(inDatabase path: String) throws -> [HabitSample] {
        try SQLiteDatabase(path: path).storedSamples()
    }

    /// Every stored event, in (day, seq) order.
    public func events() throws -> [HabitEventRecord] { try database.storedEvents() }

    /// The labelled samples the app built and trained on, oldest first (from the `samples` table).
    public func samples() throws -> [HabitSample] { try database.storedSamples() }

    /// Float32 values as little-endian bytes (the `samples.features` blob).
    static func bytes(_ x: [Float]) -> [UInt8] {
        x.flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v.bitPattern >> (8 * $0)) } }
    }

    static func floats(_ b: [UInt8]) -> [Float] {
        stride(from: 0, to: b.count - b.count % 4, by: 4).map { i in
            Float(bitPattern: (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[i + $1]) << (8 * $1) })
        }
    }
}

extension SQLiteDatabase {
    func storedEvents() throws -> [HabitEventRecord] {
        try rows("SELECT day, seq, timestamp, event FROM events ORDER BY day, seq") { s in
            guard let kind = HabitEventKind(rawValue: s.text(3)) else { throw EventStoreError(path: path, "unknown event \"\(s.text(3))\"") }
            let e = HabitEventRecord(timestamp: s.integer(2), seq: Int(s.integer(1)), kind: kind)
            guard e.day == Int(s.integer(0)) else {
                throw EventStoreError(path: path, "event (\(s.integer(0)), \(e.seq)): its day is not its timestamp's")
            }
            return e
        }
    }

    func storedSamples() throws -> [HabitSample] {
        try rows("SELECT day, features, label FROM samples WHERE label IS NOT NULL ORDER BY day") {
            HabitSample(day: Int($0.integer(0)), features: HabitApp.floats($0.blob(1)), label: $0.integer(2) != 0)
        }
    }
}
