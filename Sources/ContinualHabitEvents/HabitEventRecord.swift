/// One raw event of the habit tracker's event log, as the app stores it (a row of its SQLite
/// table) and as a study reads it (a line of the CSV, `HabitEventCSV`).
///
/// **Time.** `timestamp` is local wall-clock time in whole seconds since 1970-01-01 00:00 *local*
/// (Unix time plus the UTC offset in force when the event happened), so that `day` — the local
/// calendar day, `timestamp / 86400` rounded down — and the hour of day need no time-zone table.
/// Day 0 (1970-01-01) was a Thursday, so the weekday is `(day + 3) mod 7` with Monday = 0.
///
/// **Identity.** `(day, seq)` is the event's key: `seq` numbers the events of one day from 0 in
/// the order they happened, assigned where the event originates. A redelivered event (the app
/// replaying its input after being killed) carries the same key, and the store keeps the first
/// copy only, so a replay can never duplicate an event.
public struct HabitEventRecord: Sendable, Equatable, Hashable {
    /// Seconds in a day.
    public static let secondsPerDay: Int64 = 86_400

    /// The local calendar day (days since 1970-01-01 local).
    public var day: Int
    /// Position of the event within its day, from 0.
    public var seq: Int
    /// Local seconds since 1970-01-01 00:00 local; `timestamp / 86400` (floor) must be `day`.
    public var timestamp: Int64
    /// What happened.
    public var kind: HabitEventKind

    /// An event `seq` of the local day of `timestamp`.
    public init(timestamp: Int64, seq: Int, kind: HabitEventKind) {
        self.day = Int(Self.floorDiv(timestamp, Self.secondsPerDay))
        self.seq = seq
        self.timestamp = timestamp
        self.kind = kind
    }

    /// Seconds since the local midnight that began `day` (0 ..< 86400).
    public var secondOfDay: Int64 { timestamp - Int64(day) * Self.secondsPerDay }

    /// The weekday of local day `day`: 0 = Monday … 6 = Sunday (1970-01-01 was a Thursday).
    public static func weekday(ofDay day: Int) -> Int { Int(floorMod(Int64(day) + 3, 7)) }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
    static func floorMod(_ a: Int64, _ b: Int64) -> Int64 { a - floorDiv(a, b) * b }
}
