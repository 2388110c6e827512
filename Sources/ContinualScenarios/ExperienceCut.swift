import ContinualCore
/// How a generated timeline is cut into experiences: the JSON `"cut"` option.
///
/// `"drift_points"` (one experience per concept segment, the default), `"week"` / `"month"`
/// (calendar units of simulated days; day 0 is Monday 1 January of a 365-day year, months have
/// their calendar lengths), or an integer N (fixed size: N consecutive samples per experience,
/// the last one possibly shorter).
public enum ExperienceCut: Codable, Sendable, Equatable {
    case driftPoints
    case week
    case month
    case fixed(Int)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let n = try? c.decode(Int.self) {
            guard n >= 2 else { throw DecodingError.dataCorruptedError(in: c, debugDescription: "a fixed cut needs ≥ 2 samples per experience, got \(n)") }
            self = .fixed(n)
            return
        }
        let s = try c.decode(String.self)
        switch s {
        case "drift_points": self = .driftPoints
        case "week": self = .week
        case "month": self = .month
        default:
            throw DecodingError.dataCorruptedError(
                in: c, debugDescription: "\"\(s)\" is not allowed\(didYouMean(s, ["drift_points", "week", "month"])); allowed values: drift_points, week, month, or an integer (samples per experience)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .driftPoints: try c.encode("drift_points")
        case .week: try c.encode("week")
        case .month: try c.encode("month")
        case .fixed(let n): try c.encode(n)
        }
    }

    static let monthLengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

    /// Calendar month (counted from month 0 of year 0) of simulated day `day`.
    public static func month(ofDay day: Int) -> Int {
        let year = day / 365
        var rest = day % 365
        var m = 0
        while rest >= monthLengths[m] {
            rest -= monthLengths[m]
            m += 1
        }
        return year * 12 + m
    }

    /// The unit key of a sample for calendar cuts, or nil.
    func key(day: Int, segment: Int, position: Int) -> Int {
        switch self {
        case .driftPoints: return segment
        case .week: return day / 7
        case .month: return ExperienceCut.month(ofDay: day)
        case .fixed(let n): return position / n
        }
    }

    /// Groups consecutive timeline positions into experiences (empty units are skipped, units of
    /// one sample join the previous experience, or the next one when they lead the timeline).
    public func groups(days: [Int], segments: [Int]) -> [[Int]] {
        var result: [[Int]] = []
        var lastKey: Int? = nil
        for t in days.indices {
            let k = key(day: days[t], segment: segments[t], position: t)
            if k != lastKey {
                result.append([])
                lastKey = k
            }
            result[result.count - 1].append(t)
        }
        // A unit with fewer than 2 samples cannot be split into train and test: merge it into
        // the previous experience, or (at the start of the timeline) into the next one.
        var merged: [[Int]] = []
        var leading: [Int] = []
        for g in result {
            if g.count < 2 {
                if merged.isEmpty { leading.append(contentsOf: g) } else { merged[merged.count - 1].append(contentsOf: g) }
            } else {
                merged.append(leading + g)
                leading = []
            }
        }
        if !leading.isEmpty { merged.append(leading) }
        return merged
    }

    /// Experience name prefix for non-drift cuts.
    var unitName: String {
        switch self {
        case .driftPoints: return "segment"
        case .week: return "week"
        case .month: return "month"
        case .fixed: return "block"
        }
    }
}
