/// What one local day of the event log says, the input of every feature.
public struct HabitDaySummary: Sendable, Equatable {
    /// Whether the day has a `habit_completed` event.
    public var completed = false
    /// Seconds after local midnight of the day's first `habit_completed` event (nil: none).
    public var completionSecond: Int64?
    /// `app_opened` events of the day.
    public var launches = 0
    /// `reminder_tapped` events of the day (reminders the user opened).
    public var remindersOpened = 0
    /// `reminder_shown` events of the day.
    public var remindersShown = 0

    /// A day with no events.
    public init() {}

    /// Counts `event` (of this day) in.
    public mutating func add(_ event: HabitEventRecord) {
        switch event.kind {
        case .appOpened: launches += 1
        case .reminderShown: remindersShown += 1
        case .reminderTapped: remindersOpened += 1
        case .habitSkipped: break
        case .habitCompleted:
            completed = true
            completionSecond = min(completionSecond ?? event.secondOfDay, event.secondOfDay)
        }
    }
}
