/// The event log as CSV, the format a study reads (the `habit_events` scenario) and the app
/// exports (`HabitApp --export-csv`):
///
/// ```
/// day,seq,timestamp,event
/// 20458,0,1767601380,app_opened
/// 20458,1,1767661800,reminder_shown
/// ```
///
/// - a header line naming the columns, in any order: `timestamp`, `seq` and `event` required,
///   `day` optional (when present it must equal `timestamp` ÷ 86400 rounded down); other columns
///   are ignored;
/// - `timestamp`: local wall-clock seconds since 1970-01-01 00:00 local (an integer; see
///   `HabitEventRecord`); `seq`: the event's position in its day, an integer ≥ 0; `event`: one of
///   `app_opened`, `reminder_shown`, `reminder_tapped`, `habit_completed`, `habit_skipped`;
/// - timestamps in 0 ... `maxTimestamp`; the log spans at most `maxSpanDays` days;
/// - one event per line, any order; `(day, seq)` unique; no quoting (no field contains a comma);
///   empty lines and a final newline are allowed, `\r\n` line ends too.
///
/// Plain Swift (no Foundation), so the app and the research side share it.
public enum HabitEventCSV {
    /// The header `format` writes.
    public static let header = "day,seq,timestamp,event"
    /// The latest timestamp read: 9999-12-31 23:59:59 local.
    public static let maxTimestamp: Int64 = 253_402_300_799
    /// The most days a log may span (first to last event): the extractor keeps one summary per
    /// day, so a stray far-off timestamp must be an error, not an allocation of years of days.
    public static let maxSpanDays = 36_500

    /// The events as CSV text (header, then one line per event in the given order).
    public static func format(_ events: [HabitEventRecord]) -> String {
        var text = header + "\n"
        for e in events { text += "\(e.day),\(e.seq),\(e.timestamp),\(e.kind.rawValue)\n" }
        return text
    }

    /// The events of CSV `text`, in file order. Throws a `HabitEventLogError` naming the line
    /// and what is allowed.
    public static func parse(_ text: String) throws -> [HabitEventRecord] {
        // "\r\n" is one Character in Swift: split on either.
        var lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }.map { line -> Substring in
            line.hasSuffix("\r") ? line.dropLast() : line
        }
        while let last = lines.last, last.isEmpty { lines.removeLast() }
        guard let headerLine = lines.first else { throw HabitEventLogError(line: 1, "the file is empty; it needs the header \"\(header)\"") }
        let columns = headerLine.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces() }
        func column(_ name: String, required: Bool) throws -> Int? {
            let found = columns.indices.filter { columns[$0] == name }
            if found.count > 1 { throw HabitEventLogError(line: 1, "column \"\(name)\" appears \(found.count) times") }
            if required && found.isEmpty {
                throw HabitEventLogError(line: 1, "no column \"\(name)\"; the header needs timestamp, seq and event (and may have day), got \"\(headerLine)\"")
            }
            return found.first
        }
        let timestampColumn = try column("timestamp", required: true)!
        let seqColumn = try column("seq", required: true)!
        let eventColumn = try column("event", required: true)!
        let dayColumn = try column("day", required: false)
        var events: [HabitEventRecord] = []
        var seen: [Int: Set<Int>] = [:]
        var firstDay: Int?, lastDay: Int?
        for (i, line) in lines.enumerated().dropFirst() where !line.isEmpty {
            let number = i + 1
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces() }
            guard fields.count == columns.count else {
                throw HabitEventLogError(line: number, "\(fields.count) fields, the header has \(columns.count)")
            }
            guard let timestamp = Int64(fields[timestampColumn]) else {
                throw HabitEventLogError(line: number, "timestamp \"\(fields[timestampColumn])\" is not an integer (local seconds since 1970-01-01)")
            }
            guard (0...maxTimestamp).contains(timestamp) else {
                throw HabitEventLogError(line: number, "timestamp \(timestamp) is outside 0...\(maxTimestamp) (1970-01-01 to 9999-12-31)")
            }
            guard let seq = Int(fields[seqColumn]), seq >= 0 else {
                throw HabitEventLogError(line: number, "seq \"\(fields[seqColumn])\" is not an integer ≥ 0")
            }
            guard let kind = HabitEventKind(rawValue: fields[eventColumn]) else {
                throw HabitEventLogError(line: number, "unknown event \"\(fields[eventColumn])\"; allowed: "
                    + HabitEventKind.allCases.map(\.rawValue).joined(separator: ", "))
            }
            let event = HabitEventRecord(timestamp: timestamp, seq: seq, kind: kind)
            if let dayColumn, Int(fields[dayColumn]) != event.day {
                throw HabitEventLogError(line: number, "day \"\(fields[dayColumn])\" is not the day of timestamp \(timestamp) (\(event.day))")
            }
            guard seen[event.day, default: []].insert(seq).inserted else {
                throw HabitEventLogError(line: number, "a second event with day \(event.day) and seq \(seq); (day, seq) must be unique")
            }
            firstDay = min(firstDay ?? event.day, event.day)
            lastDay = max(lastDay ?? event.day, event.day)
            guard lastDay! - firstDay! < maxSpanDays else {
                throw HabitEventLogError(line: number, "the log would span \(lastDay! - firstDay! + 1) days (days \(firstDay!)...\(lastDay!)); "
                    + "at most \(maxSpanDays) (100 years) are allowed")
            }
            events.append(event)
        }
        return events
    }
}

/// A malformed event log, with the 1-based line of the problem.
public struct HabitEventLogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The line (1 = the header).
    public var line: Int
    /// What is wrong and what is allowed.
    public var message: String

    /// An error at `line`.
    public init(line: Int, _ message: String) {
        self.line = line
        self.message = message
    }

    /// "line N: message".
    public var description: String { "line \(line): \(message)" }
}

extension Substring {
    func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
