import ContinualCore

/// The app's own record of the user's events (what a habit tracker keeps in its database), and
/// the feature vector it builds from them for the model.
public struct HabitLog: Sendable, Equatable {
    /// Names of the model's features, in order.
    public static let featureNames = [
        "streak", "completion_rate_30d", "launches_today", "reminders_opened_7d", "hour_of_day",
        "weekend", "completed_yesterday", "days_since_completion",
    ]

    /// Completed (true) or not, per finished day, oldest first.
    public internal(set) var completed: [Bool] = []
    /// Reminders opened per finished day, oldest first.
    public internal(set) var remindersOpened: [Int] = []
    /// Launches of the current day so far.
    public internal(set) var launchesToday = 0
    /// Reminders opened on the current day so far.
    public internal(set) var remindersToday = 0
    /// Whether the habit is done on the current day.
    public internal(set) var completedToday = false
    /// The current day (the number of finished days).
    public var today: Int { completed.count }

    /// An empty log (a fresh install).
    public init() {}

    /// Records one event of the current day.
    public mutating func record(_ event: HabitEvent) {
        switch event {
        case .appOpened: launchesToday += 1
        case .reminderTapped: remindersToday += 1
        case .habitCompleted: completedToday = true
        case .habitSkipped: break
        }
    }

    /// Ends the current day; returns its outcome (whether the habit was done).
    public mutating func endDay() -> Bool {
        let outcome = completedToday
        completed.append(outcome)
        remindersOpened.append(remindersToday)
        launchesToday = 0
        remindersToday = 0
        completedToday = false
        return outcome
    }

    /// Consecutive completed days up to yesterday.
    public var streak: Int { completed.reversed().prefix { $0 }.count }

    /// The model's input for a decision at `hour` of the current day, each feature scaled to
    /// about 0...1: streak (÷ 30, capped), completion rate of the last 30 days, launches today
    /// (÷ 5, capped), reminders opened in the last 7 days (÷ 7), hour of day (÷ 24), weekend,
    /// completed yesterday, days since the last completion (÷ 30, capped).
    public func features(hour: Int) -> [Float] {
        let last30 = completed.suffix(30)
        let rate = last30.isEmpty ? 0.5 : Float(last30.filter { $0 }.count) / Float(last30.count)
        let opened7 = remindersOpened.suffix(7).reduce(0, +)
        let sinceCompletion = completed.reversed().firstIndex(of: true) ?? completed.count
        return [
            min(Float(streak) / 30, 1), rate, min(Float(launchesToday) / 5, 1), min(Float(opened7) / 7, 1),
            Float(hour) / 24, today % 7 >= 5 ? 1 : 0, completed.last == true ? 1 : 0, min(Float(sinceCompletion) / 30, 1),
        ]
    }

    // MARK: Storage (part of the app's state file)

    func encode(into w: inout ByteWriter) {
        w.int(completed.count)
        w.bytes(completed.map { $0 ? 1 : 0 })
        w.int(remindersOpened.count)
        remindersOpened.forEach { w.int($0) }
        w.int(launchesToday)
        w.int(remindersToday)
        w.int(completedToday ? 1 : 0)
    }

    init(reading r: inout ByteReader) throws {
        completed = try r.bytes(r.count()).map { $0 != 0 }
        remindersOpened = try (0..<r.count(elementSize: 8)).map { _ in try r.int() }
        launchesToday = try r.int()
        remindersToday = try r.int()
        completedToday = try r.int() != 0
        guard remindersOpened.count == completed.count else {
            throw CheckpointError.mismatch("the event log has \(completed.count) days and \(remindersOpened.count) reminder counts")
        }
    }
}
