/// What happened: the raw events a habit tracker records (the `event` column of the event log).
public enum HabitEventKind: String, Sendable, Equatable, CaseIterable {
    /// The user opened the app.
    case appOpened = "app_opened"
    /// The app showed today's reminder notification.
    case reminderShown = "reminder_shown"
    /// The user tapped (opened) the reminder.
    case reminderTapped = "reminder_tapped"
    /// The user marked the habit done.
    case habitCompleted = "habit_completed"
    /// The user marked the habit skipped (or the day ended without it).
    case habitSkipped = "habit_skipped"
}
