import ContinualCore

/// What the user does with the app: the events a habit tracker sees.
public enum HabitEvent: Sendable, Equatable {
    /// The user opened the app at `hour`.
    case appOpened(hour: Int)
    /// The user tapped today's reminder at `hour`.
    case reminderTapped(hour: Int)
    /// The user marked the habit done at `hour`.
    case habitCompleted(hour: Int)
    /// The day ended without the habit.
    case habitSkipped
}

/// A simulated user whose habit drifts through the year: a motivated start, a busy new job
/// (fewer completions, reminders help), a holiday (weekends strong), reminder fatigue (reminders
/// annoy), and a comeback. Draws only from its own seeded stream, so it behaves the same whether
/// or not the app was killed in between, as long as the app decides the same.
public struct SimulatedUser: Sendable {
    /// One stretch of behaviour.
    public struct Phase: Sendable, Equatable {
        /// Name printed in the summary.
        public var name: String
        /// Chance of completing the habit on a weekday without a reminder.
        public var base: Double
        /// Added on weekends.
        public var weekend: Double
        /// Added when a reminder was sent (negative: reminders annoy).
        public var reminderEffect: Double
        /// Chance of tapping a reminder.
        public var tapRate: Double
        /// Mean app launches per day.
        public var launches: Double
        /// Hour around which the user decides whether to do the habit.
        public var eveningHour: Int
    }

    /// The year, month by month (a simulation longer than a year starts over).
    public static let year: [Phase] = [
        Phase(name: "motivated", base: 0.80, weekend: -0.10, reminderEffect: 0.05, tapRate: 0.6, launches: 3, eveningHour: 18),
        Phase(name: "motivated", base: 0.75, weekend: -0.10, reminderEffect: 0.05, tapRate: 0.6, launches: 3, eveningHour: 18),
        Phase(name: "new_job", base: 0.35, weekend: 0.30, reminderEffect: 0.30, tapRate: 0.5, launches: 1.5, eveningHour: 20),
        Phase(name: "new_job", base: 0.30, weekend: 0.30, reminderEffect: 0.30, tapRate: 0.5, launches: 1.5, eveningHour: 20),
        Phase(name: "new_job", base: 0.40, weekend: 0.25, reminderEffect: 0.25, tapRate: 0.5, launches: 1.5, eveningHour: 20),
        Phase(name: "holiday", base: 0.60, weekend: 0.20, reminderEffect: 0.10, tapRate: 0.4, launches: 2, eveningHour: 17),
        Phase(name: "holiday", base: 0.55, weekend: 0.20, reminderEffect: 0.10, tapRate: 0.4, launches: 2, eveningHour: 17),
        Phase(name: "fatigue", base: 0.45, weekend: 0.00, reminderEffect: -0.20, tapRate: 0.1, launches: 1, eveningHour: 19),
        Phase(name: "fatigue", base: 0.40, weekend: 0.00, reminderEffect: -0.20, tapRate: 0.1, launches: 1, eveningHour: 19),
        Phase(name: "comeback", base: 0.60, weekend: -0.05, reminderEffect: 0.15, tapRate: 0.5, launches: 2.5, eveningHour: 18),
        Phase(name: "comeback", base: 0.70, weekend: -0.05, reminderEffect: 0.15, tapRate: 0.5, launches: 2.5, eveningHour: 18),
        Phase(name: "comeback", base: 0.75, weekend: -0.05, reminderEffect: 0.15, tapRate: 0.5, launches: 2.5, eveningHour: 18),
    ]

    var rng: RandomSource
    var streak = 0

    /// A user drawing from the seeded stream `habit_app.user`.
    public init(seed: UInt64) { rng = RandomSource(seed: seed, stream: "habit_app.user") }

    /// The phase on `day` (30-day months).
    public static func phase(day: Int) -> Phase { year[(day / 30) % year.count] }

    /// The launches of `day` before the user's evening decision (hours in order).
    public mutating func morning(day: Int) -> [HabitEvent] {
        let phase = Self.phase(day: day)
        let n = min(rng.poisson(mean: phase.launches), 8)
        return (0..<n).map { _ in HabitEvent.appOpened(hour: 7 + rng.uniformInt(below: max(phase.eveningHour - 7, 1))) }
            .sorted { if case .appOpened(let a) = $0, case .appOpened(let b) = $1 { return a < b }; return false }
    }

    /// The hour of today's evening decision (when the app decides whether to remind).
    public mutating func decisionHour(day: Int) -> Int {
        Self.phase(day: day).eveningHour + rng.uniformInt(below: 3) - 1
    }

    /// The rest of `day` after the app's decision: a tap on the reminder (if one was sent), then
    /// whether the habit is done.
    public mutating func evening(day: Int, hour: Int, reminded: Bool) -> [HabitEvent] {
        let phase = Self.phase(day: day)
        var events: [HabitEvent] = []
        var p = phase.base + (day % 7 >= 5 ? phase.weekend : 0) + (streak >= 3 ? 0.08 : 0)
        if reminded {
            p += phase.reminderEffect
            if rng.bernoulli(phase.tapRate) {
                events.append(.reminderTapped(hour: hour))
                p += 0.1
            }
        }
        if rng.bernoulli(min(max(p, 0.02), 0.98)) {
            events.append(.habitCompleted(hour: min(hour + rng.uniformInt(below: 3), 23)))
            streak += 1
        } else {
            events.append(.habitSkipped)
            streak = 0
        }
        return events
    }
}
