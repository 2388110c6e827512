#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The current time as ISO 8601 in UTC to the second ("2026-11-24T06:52:00Z"), the format of a
/// results file's `created_utc` attribute.
///
/// Written with the C library's `gmtime_r`, not Foundation's `ISO8601DateFormatter`: on Linux
/// that formatter loads ICU's calendar and time-zone data, which made up 5.9 MB of a small run's
/// 19 MB of memory over `validate` (measured with /proc/PID/smaps) — for one string.
enum UTCTimestamp {
    static func now() -> String {
        format(secondsSince1970: time(nil))
    }

    /// `secondsSince1970` formatted as "YYYY-MM-DDThh:mm:ssZ".
    static func format(secondsSince1970 t: Int) -> String {
        var seconds = time_t(t)
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return "1970-01-01T00:00:00Z" }
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let year = Int(parts.tm_year) + 1900
        let y = year < 1000 ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
        return "\(y)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
