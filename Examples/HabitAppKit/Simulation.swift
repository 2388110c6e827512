import ContinualCore
import ContinualOnDevice
import ContinualScenarios

/// Options of a simulated year (the `HabitApp` command line).
public struct SimulationOptions: Sendable {
    /// Simulated days.
    public var days = 365
    /// Seed of the user, the phone, the kills and the model.
    public var seed: UInt64 = 1
    /// Chance that the app is killed after any step (an event, a decision, midnight, a session).
    public var killProbability = 0.0
    /// The app's state file (deleted at the start: a fresh install).
    public var checkpointPath = "habit_app.state"
    /// One of `HabitApp.strategies`.
    public var strategy = "replay"
    /// When to remind.
    public var policy = ReminderPolicy()

    /// The options (defaults: a year, seed 1, no kills, `habit_app.state`, replay, 0.4 / 0.8).
    public init(days: Int = 365, seed: UInt64 = 1, killProbability: Double = 0, checkpointPath: String = "habit_app.state",
                strategy: String = "replay", policy: ReminderPolicy = ReminderPolicy()) {
        self.days = days
        self.seed = seed
        self.killProbability = killProbability
        self.checkpointPath = checkpointPath
        self.strategy = strategy
        self.policy = policy
    }
}

/// One simulated day as the app saw it.
public struct DayRecord: Sendable, Equatable {
    /// The day (0 = the first).
    public var day: Int
    /// The user's phase that day (`SimulatedUser.year`).
    public var phase: String
    /// The hour of the decision.
    public var hour: Int
    /// The model's p(done today) at the decision (compared bit for bit between runs).
    public var probability: Float
    /// What the app did.
    public var decision: ReminderDecision
    /// Whether the user did the habit.
    public var completed: Bool
    /// The night's session, if one ran.
    public var session: TrainingSessionReport?
}

/// What a simulated year produced.
public struct SimulationResult: Sendable {
    /// Every simulated day, in order.
    public var days: [DayRecord]
    /// Times the app was killed and relaunched from its state file.
    public var kills: Int
    /// Bytes of the state file at the end.
    public var stateBytes: Int
    /// Bytes of the model's checkpoint at the end.
    public var checkpointBytes: Int
    /// The model configuration's fingerprint (stored in every checkpoint; the same in every
    /// process, or a relaunched app could not read its own state).
    public var configurationFingerprint: UInt64

    /// The decisions, for comparing runs (day, probability bits, decision).
    public var decisions: [String] { days.map { "\($0.day):\($0.probability.bitPattern):\($0.decision.rawValue)" } }
}

/// Errors of the simulation's options.
public struct SimulationError: Error, CustomStringConvertible {
    /// What is wrong with the options.
    public var description: String
}

/// Runs the app for `options.days` simulated days with a simulated user; kills and relaunches
/// the app at seeded random points. Starts from a fresh install (deletes the state file).
public func simulateHabitApp(_ options: SimulationOptions) throws -> SimulationResult {
    guard options.days >= 1 else { throw SimulationError(description: "--days must be ≥ 1, got \(options.days)") }
    guard (0...1).contains(options.killProbability) else {
        throw SimulationError(description: "--kill-probability must be in 0...1, got \(options.killProbability)")
    }
    guard let strategy = HabitApp.strategy(named: options.strategy) else {
        throw SimulationError(description: "unknown --strategy \"\(options.strategy)\"; one of: \(HabitApp.strategies.joined(separator: ", "))")
    }
    let configuration = HabitApp.configuration(strategy: strategy, days: options.days, seed: options.seed)
    let store = StateFile(path: options.checkpointPath)
    store.remove()
    var user = SimulatedUser(seed: options.seed)
    var killer = RandomSource(seed: options.seed, stream: "habit_app.kills")
    // Nights: an overnight charger, home Wi-Fi most nights (the background task's conditions).
    let nights = DeviceStateOptions(pattern: .overnight).makeDays(count: options.days, runSeed: options.seed)
    var app = try HabitApp.launch(store: store, configuration: configuration)
    var kills = 0
    func maybeKill() throws {
        if killer.bernoulli(options.killProbability) {
            kills += 1
            // The process dies: everything in memory is gone; the next launch reads the file only.
            app = try HabitApp.launch(store: store, configuration: configuration)
        }
    }
    var records: [DayRecord] = []
    records.reserveCapacity(options.days)
    for day in 0..<options.days {
        for event in user.morning(day: day) {
            try app.handle(event)
            try maybeKill()
        }
        let hour = user.decisionHour(day: day)
        let (p, decision) = try app.decide(hour: hour, policy: options.policy)
        try maybeKill()
        for event in user.evening(day: day, hour: hour, reminded: decision == .remind) {
            try app.handle(event)
            try maybeKill()
        }
        let completed = try app.endDay()
        try maybeKill()
        let session = try app.backgroundTask(device: nights[day])
        try maybeKill()
        records.append(DayRecord(day: day, phase: SimulatedUser.phase(day: day).name, hour: hour, probability: p,
                                 decision: decision, completed: completed, session: session))
    }
    return SimulationResult(days: records, kills: kills, stateBytes: app.state().count,
                            checkpointBytes: app.model.checkpoint().count,
                            configurationFingerprint: configuration.fingerprint)
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
        let millijoules = sessions.reduce(0.0) { $0 + $1.energy.joules } * 1000
        lines.append(pad("\(m + 1)", 5) + "  " + days[0].phase.padding(11) + percent(done) + pad("\(reminders)", 7)
                     + pad("\(badges)", 6) + pad("\(silent)", 7) + pad("\(sessions.count)", 6)
                     + pad(format(meanP, 2), 7) + pad(percent(right), 8) + pad(format(millijoules, 3), 7))
    }
    let all = result.days
    let sessions = all.compactMap(\.session)
    let peak = sessions.map(\.peakMemory.total).max() ?? 0
    lines.append("total: \(all.filter(\.completed).count)/\(all.count) days done, "
                 + "\(all.filter { $0.decision == .remind }.count) reminders sent, \(sessions.count) training sessions "
                 + "(\(format(sessions.reduce(0.0) { $0 + $1.energy.joules } * 1000, 3)) mJ,")
    lines.append("       peak memory \(peak) B), \(result.kills) kills, state file \(result.stateBytes) B "
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
