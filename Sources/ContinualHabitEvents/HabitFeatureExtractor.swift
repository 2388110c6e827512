import ContinualCore

/// The habit pipeline's feature extractor, shared by the app (`Examples/HabitAppKit`, over its
/// SQLite event store) and the research side (the `habit_events` scenario, over a CSV event log),
/// so that a study on recorded logs and the app compute bit-identical samples.
///
/// Feed it raw events (`add`, in any order: every feature is a count or a minimum); it keeps one
/// `HabitDaySummary` per local day from the install day (the day of the earliest event) on. Days
/// without events are days without launches, reminders or completion.
///
/// **Features of day d** (`features(day:)`), each scaled to about −1…1 for the network, computed in
/// `Double` and rounded to `Float` once:
///
/// | name | value |
/// |---|---|
/// | `streak` | consecutive completed days ending with d (0 when d is not completed) ÷ 30, at most 1 |
/// | `completion_rate_30d` | completed days ÷ days, over days d−29 … d that are on or after the install day (0 with none) |
/// | `completion_rate_7d` | the same over d−6 … d |
/// | `launches_today` | `app_opened` events on d ÷ 5, at most 1 |
/// | `reminders_opened_today` | `reminder_tapped` events on d ÷ 3, at most 1 |
/// | `hour_sin`, `hour_cos` | sin and cos of 2π·h/24, h = the local hour (with minutes and seconds) of d's first completion; both 0 when d has none |
/// | `weekday_sin`, `weekday_cos` | sin and cos of 2π·w/7, w = weekday of d (Monday 0) |
///
/// "Hour of day" is the hour at which the user did the habit that day: the sample is taken once
/// day d is over (every event of d known), so there is no other moment of the day to describe,
/// and it carries the habit's time-of-day drift (an evening habit moving to the afternoon).
/// Cyclic sin/cos keep 23:00 next to 00:00 and Sunday next to Monday.
///
/// **Samples** (`samples()`): one per day d from the install day to the day before the last day
/// in the log, label = whether d + 1 was completed. The last day has features but no label yet.
public struct HabitFeatureExtractor: Sendable, Equatable {
    /// Names of the features, in order.
    public static let featureNames = [
        "streak", "completion_rate_30d", "completion_rate_7d", "launches_today", "reminders_opened_today",
        "hour_sin", "hour_cos", "weekday_sin", "weekday_cos",
    ]

    /// The install day (the earliest event's day), nil before the first event.
    public private(set) var firstDay: Int?
    /// One summary per day from `firstDay` to the latest event's day.
    public private(set) var days: [HabitDaySummary] = []

    /// An extractor with no events (a fresh install).
    public init() {}

    /// An extractor over `events`.
    public init(events: some Sequence<HabitEventRecord>) {
        for e in events { add(e) }
    }

    /// The latest day with an event, nil before the first event.
    public var lastDay: Int? { firstDay.map { $0 + days.count - 1 } }

    /// Counts `event` in.
    public mutating func add(_ event: HabitEventRecord) {
        guard let first = firstDay else {
            firstDay = event.day
            days = [HabitDaySummary()]
            days[0].add(event)
            return
        }
        if event.day < first {
            days.insert(contentsOf: [HabitDaySummary](repeating: HabitDaySummary(), count: first - event.day), at: 0)
            firstDay = event.day
        } else if event.day - first >= days.count {
            days.append(contentsOf: [HabitDaySummary](repeating: HabitDaySummary(), count: event.day - first - days.count + 1))
        }
        days[event.day - firstDay!].add(event)
    }

    /// The summary of `day` (an empty one outside the log).
    public func summary(day: Int) -> HabitDaySummary {
        guard let first = firstDay, day >= first, day - first < days.count else { return HabitDaySummary() }
        return days[day - first]
    }

    /// Consecutive completed days ending with `day`.
    public func streak(day: Int) -> Int {
        var n = 0
        while summary(day: day - n).completed { n += 1 }
        return n
    }

    /// Completed days ÷ days over the `window` days ending with `day`, counting only days on or
    /// after the install day; 0 when there are none.
    public func completionRate(day: Int, window: Int) -> Double {
        guard let first = firstDay else { return 0 }
        let from = max(day - window + 1, first)
        guard from <= day else { return 0 }
        let done = (from...day).filter { summary(day: $0).completed }.count
        return Double(done) / Double(day - from + 1)
    }

    /// The feature vector of `day` (see the table above); defined for any day, also before the
    /// install day (all history features 0), which an app uses for its very first decision.
    public func features(day: Int) -> [Float] {
        let s = summary(day: day)
        let twoPi = 2 * Double.pi
        let hour = s.completionSecond.map { Double($0) / 3600 }
        let weekday = Double(HabitEventRecord.weekday(ofDay: day))
        let values: [Double] = [
            min(Double(streak(day: day)) / 30, 1),
            completionRate(day: day, window: 30),
            completionRate(day: day, window: 7),
            min(Double(s.launches) / 5, 1),
            min(Double(s.remindersOpened) / 3, 1),
            hour.map { _sin(twoPi * $0 / 24) } ?? 0,
            hour.map { _cos(twoPi * $0 / 24) } ?? 0,
            _sin(twoPi * weekday / 7),
            _cos(twoPi * weekday / 7),
        ]
        return values.map { Float($0) }
    }

    /// The sample of `day` (features of `day`, label: `day + 1` completed), or nil when `day + 1`
    /// is not in the log yet or `day` is before the install day.
    public func sample(day: Int) -> HabitSample? {
        guard let first = firstDay, let last = lastDay, day >= first, day < last else { return nil }
        return HabitSample(day: day, features: features(day: day), label: summary(day: day + 1).completed)
    }

    /// Every labelled sample of the log, oldest first: days install … last − 1.
    public func samples() -> [HabitSample] {
        guard let first = firstDay, let last = lastDay, first < last else { return [] }
        return (first..<last).compactMap { sample(day: $0) }
    }
}
