import ContinualCore
import ContinualOnDevice
import ContinualScenarios
import ContinualHabitEvents
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Options of a simulated year (the `HabitApp` command line).
public struct SimulationOptions: Sendable {
    /// Simulated days.
    public var days = 365
    /// Seed of the user, the phone, the kills and the model.
    public var seed: UInt64 = 1
    /// Chance of a kill at each kill point (`KillPoint`: inside an event write, inside the day's
    /// close, after training before its commit, between steps).
    public var killProbability = 0.0
    /// What a kill does: drop and relaunch the app in this process, or SIGKILL the process.
    public var killMode = KillMode.relaunch
    /// The kill points that may fire (default: all).
    public var killPoints = Set(KillPoint.allCases)
    /// The app's SQLite database (deleted at the start unless `resume`: a fresh install).
    public var databasePath = "habit_app.sqlite"
    /// Continue the install in `databasePath` (after a real kill) instead of starting afresh.
    public var resume = false
    /// One of `HabitApp.strategies`.
    public var strategy = "replay"
    /// When to remind.
    public var policy = ReminderPolicy()

    /// The options (defaults: a year, seed 1, no kills, `habit_app.sqlite`, replay, 0.4 / 0.8).
    public init(days: Int = 365, seed: UInt64 = 1, killProbability: Double = 0, killMode: KillMode = .relaunch,
                databasePath: String = "habit_app.sqlite", resume: Bool = false, strategy: String = "replay",
                policy: ReminderPolicy = ReminderPolicy()) {
        self.days = days
        self.seed = seed
        self.killProbability = killProbability
        self.killMode = killMode
        self.databasePath = databasePath
        self.resume = resume
        self.strategy = strategy
        self.policy = policy
    }
}

/// One simulated day as the app saw it.
public struct DayRecord: Sendable, Equatable {
    /// The day (0 = the install day).
    public var day: Int
    /// The user's phase that day (`SimulatedUser.year`).
    public var phase: String
    /// The hour of the day's reminder (if one was sent).
    public var hour: Int
    /// The model's p(done that day), predicted at the end of the day before (compared bit for
    /// bit between runs).
    public var probability: Float
    /// What the app did.
    public var decision: ReminderDecision
    /// Whether the user did the habit.
    public var completed: Bool
    /// The night's session, if one ran.
    public var session: SessionSummary?
}

/// What a simulated year produced.
public struct SimulationResult: Sendable {
    /// Every simulated day, in order.
    public var days: [DayRecord]
    /// Times the app was killed and launched again (launches of the install − 1).
    public var kills: Int
    /// In-process kills by kill point (mode `relaunch`; a SIGKILLed process cannot count its own).
    public var killsAt: [KillPoint: Int]
    /// Events in the database at the end.
    public var events: Int
    /// Bytes of the model's checkpoint at the end.
    public var checkpointBytes: Int
    /// The model configuration's fingerprint (stored in every checkpoint; the same in every
    /// process, or a relaunched app could not read its own database).
    public var configurationFingerprint: UInt64

    /// The decisions, for comparing runs (day, probability bits, decision).
    public var decisions: [String] { days.map { "\($0.day):\($0.probability.bitPattern):\($0.decision.rawValue)" } }
}

/// Errors of the simulation's options.
public struct SimulationError: Error, CustomStringConvertible {
    /// What is wrong with the options.
    public var description: String
}

/// The install day of every simulation: Monday 2026-01-05 (local days since 1970-01-01), so
/// that the simulated user's weekends (days 5 and 6 of each week) are Saturdays and Sundays.
public let simulationFirstDay = 20_458

/// Runs the app for `options.days` simulated days with a simulated user, killing it at seeded
/// random kill points. After a kill the app is launched again on its database and the world
/// (the user, the phone) is replayed from the install day: the user's behaviour follows from its
/// seed and the app's stored decisions, so the replay offers the app the same events again, and
/// the app skips every step it had committed. Mode `signal` kills the process itself; the next
/// process (with `resume`) continues the same way.
public func simulateHabitApp(_ options: SimulationOptions) throws -> SimulationResult {
    guard options.days >= 1 else { throw SimulationError(description: "--days must be ≥ 1, got \(options.days)") }
    guard (0...1).contains(options.killProbability) else {
        throw SimulationError(description: "--kill-probability must be in 0...1, got \(options.killProbability)")
    }
    guard let strategy = HabitApp.strategy(named: options.strategy) else {
        throw SimulationError(description: "unknown --strategy \"\(options.strategy)\"; one of: \(HabitApp.strategies.joined(separator: ", "))")
    }
    let configuration = HabitApp.configuration(strategy: strategy, days: options.days, seed: options.seed)
    if !options.resume {
        for suffix in ["", "-wal", "-shm"] { unlink(options.databasePath + suffix) }
        StateKey.remove(forDatabase: options.databasePath)
    }
    // Nights: an overnight charger, home Wi-Fi most nights (the background task's conditions).
    let nights = DeviceStateOptions(pattern: .overnight).makeDays(count: options.days, runSeed: options.seed)
    var killsAt: [KillPoint: Int] = [:]
    while true {
        let app = try HabitApp.launch(databasePath: options.databasePath, configuration: configuration)
        app.killSwitch = KillSwitch(seed: options.seed, launch: app.launches, probability: options.killProbability,
                                    mode: options.killMode, points: options.killPoints)
        do {
            let records = try playWorld(app, options: options, nights: nights)
            defer { app.close() }
            return SimulationResult(days: records, kills: app.launches - 1, killsAt: killsAt, events: try app.events().count,
                                    checkpointBytes: app.model.checkpoint().count,
                                    configurationFingerprint: configuration.fingerprint)
        } catch let killed as AppKilled {
            // The process dies: everything in memory is gone; the next launch reads the database only.
            killsAt[killed.point, default: 0] += 1
            app.close()
        }
    }
}

/// The world from the install day on: each day the user's events (timestamped, numbered in
/// time order), the day's close, the night's background task.
func playWorld(_ app: HabitApp, options: SimulationOptions, nights: [DeviceDay]) throws -> [DayRecord] {
    var user = SimulatedUser(seed: options.seed)
    // Minutes and seconds of the events (the user draws whole hours), from their own stream.
    var clock = RandomSource(seed: options.seed, stream: "habit_app.clock")
    var records: [DayRecord] = []
    records.reserveCapacity(options.days)
    try app.closeDay(simulationFirstDay - 1, policy: options.policy)
    for i in 0..<options.days {
        let day = simulationFirstDay + i
        guard let today = app.decision(day: day) else { throw SimulationError(description: "no decision stored for day \(i)") }
        let reminded = today.decision == .remind
        let morning = user.morning(day: i)
        let hour = user.decisionHour(day: i)
        let evening = user.evening(day: i, hour: hour, reminded: reminded)
        var stamped: [(second: Int64, kind: HabitEventKind)] = []
        for event in morning + evening {
            switch event {
            case .appOpened(let h): stamped.append((Int64(h * 3600 + clock.uniformInt(below: 3600)), .appOpened))
            case .reminderTapped(let h): stamped.append((Int64(h * 3600 + 60 + clock.uniformInt(below: 1800)), .reminderTapped))
            case .habitCompleted(let h): stamped.append((Int64(h * 3600 + clock.uniformInt(below: 3600)), .habitCompleted))
            case .habitSkipped: stamped.append((86_399, .habitSkipped))
            }
        }
        if reminded { stamped.append((Int64(hour * 3600), .reminderShown)) }
        // Stable: events of the same second keep the order the user produced them in.
        let ordered = stamped.enumerated().sorted { ($0.element.second, $0.offset) < ($1.element.second, $1.offset) }
        for (seq, e) in ordered.map(\.element).enumerated() {
            try app.record(HabitEventRecord(timestamp: Int64(day) * HabitEventRecord.secondsPerDay + e.second, seq: seq, kind: e.kind))
        }
        try app.closeDay(day, policy: options.policy)
        try app.nightTask(day, device: DeviceDay(day: day, hours: nights[i].hours))
        records.append(DayRecord(day: i, phase: SimulatedUser.phase(day: i).name, hour: hour, probability: today.probability,
                                 decision: today.decision, completed: app.extractor.summary(day: day).completed,
                                 session: app.session(night: day)))
    }
    return records
}

/// The month-by-month summary the example prints.
public func summary(_ result: SimulationResult, options: SimulationOptions) -> String {
    func pad(_ s: String, _ n: Int) -> String { String(repeating: " ", count: max(0, n - s.count)) + s }
    func percent(_ x: Double) -> String { x.isNaN ? "  –" : pad("\(Int((100 * x).rounded()))", 3) + "%" }
    // At most 80 columns: the header and rows share their widths; long lines are wrapped.
    var lines = ["HabitApp: \(options.days) simulated days, strategy \(options.strategy), seed \(options.seed), "
                 + "kill probability \(options.killProbability)",
                 "(remind when p < \(options.policy.remindBelow), silent when p > \(options.policy.silentAbove); "
                 + "p≥.5 ok: days predicted right)",
                 pad("month", 5) + "  " + "phase".padding(11) + "done" + pad("remind", 7) + pad("badge", 6)
                 + pad("silent", 7) + pad("train", 6) + pad("mean p", 7) + pad("p≥.5 ok", 8) + pad("mJ", 7)]
    let months = stride(from: 0, to: result.days.count, by: 30).map { Array(result.days[$0..<min($0 + 30, result.days.count)]) }
    for (m, days) in months.enumerated() {
        let n = Double(days.count)
        let done = Double(days.filter(\.completed).count) / n
        let reminders = days.filter { $0.decision == .remind }.count
        let badges = days.filter { $0.decision == .badge }.count
        let silent = days.filter { $0.decision == .silent }.count
        let sessions = days.compactMap(\.session)
        let meanP = days.reduce(0.0) { $0 + Double($1.probability) } / n
        let right = Double(days.filter { ($0.probability >= 0.5) == $0.completed }.count) / n
        let millijoules = sessions.reduce(0.0) { $0 + $1.joules } * 1000
        lines.append(pad("\(m + 1)", 5) + "  " + days[0].phase.padding(11) + percent(done) + pad("\(reminders)", 7)
                     + pad("\(badges)", 6) + pad("\(silent)", 7) + pad("\(sessions.count)", 6)
                     + pad(format(meanP, 2), 7) + pad(percent(right), 8) + pad(format(millijoules, 3), 7))
    }
    let all = result.days
    let sessions = all.compactMap(\.session)
    let peak = sessions.map(\.peakMemory).max() ?? 0
    lines.append("total: \(all.filter(\.completed).count)/\(all.count) days done, "
                 + "\(all.filter { $0.decision == .remind }.count) reminders sent, \(sessions.count) training sessions "
                 + "(\(format(sessions.reduce(0.0) { $0 + $1.joules } * 1000, 3)) mJ,")
    lines.append("       peak memory \(peak) B), \(result.kills) kills, \(result.events) events in SQLite "
                 + "(checkpoint \(result.checkpointBytes) B,")
    lines.append("       configuration \(StableHash.hex(result.configurationFingerprint)))")
    return lines.joined(separator: "\n")
}

/// `x` with `digits` decimals (no Foundation formatting).
func format(_ x: Double, _ digits: Int) -> String {
    guard x.isFinite else { return "\(x)" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let v = (abs(x) * scale).rounded()
    let whole = Int(v / scale), fraction = Int(v - Double(whole) * scale)
    let f = String(fraction)
    return (x < 0 && v > 0 ? "-" : "") + "\(whole)" + (digits > 0 ? "." + String(repeating: "0", count: digits - f.count) + f : "")
}

extension String {
    func padding(_ n: Int) -> String { self + String(repeating: " ", count: max(0, n - count)) }
}
