import ContinualCore

/// How the `dataset` scenario cuts a per-user file by its `time_column` (issue 44.1): experiences
/// as spans of time (`experiences`) and, inside each, test rows that never precede training rows
/// (`test`), per user. The file then needs no experience or split column.
public enum TimeCut {
    /// `"experiences": {"every": N, "unit": "days"}` (spans of N time units from each user's
    /// first time) or `{"count": K}` (each user's first-to-last time in K equal spans).
    public enum Experiences: Codable, Equatable, Sendable {
        case every(Double, unit: String?)
        case count(Int)

        enum CodingKeys: String, CodingKey, CaseIterable { case every, unit, count }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
            let every = try c.decodeIfPresent(Double.self, forKey: .every)
            let count = try c.decodeIfPresent(Int.self, forKey: .count)
            let unit = try c.decodeIfPresent(String.self, forKey: .unit)
            try c.require((every == nil) != (count == nil), .every,
                          "give exactly one of \"every\" (a span of time units) or \"count\" (equal spans)")
            if let every {
                try c.require(every.isFinite && every > 0, .every, "must be a positive number of time units, got \(every)")
                try c.require(unit.map { !$0.isEmpty } ?? true, .unit, "must name the time column's unit, e.g. \"days\"")
                self = .every(every, unit: unit)
            } else {
                try c.require(unit == nil, .unit, "applies to \"every\" only")
                try c.require((1...10_000).contains(count!), .count, "must be in 1...10000, got \(count!)")
                self = .count(count!)
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .every(let n, let unit):
                try c.encode(n, forKey: .every)
                try c.encodeIfPresent(unit, forKey: .unit)
            case .count(let k): try c.encode(k, forKey: .count)
            }
        }

        /// The experience of a row at time `t` for a user whose times run from `first` to `last`.
        func index(_ t: Double, first: Double, last: Double) -> Int {
            switch self {
            case .every(let n, _): return Int(((t - first) / n).rounded(.down))
            case .count(let k):
                guard last > first else { return 0 }
                return min(k - 1, Int(((t - first) / ((last - first) / Double(k))).rounded(.down)))
            }
        }

        /// Experience `k`'s name: its span relative to each user's first time.
        func name(_ k: Int) -> String {
            switch self {
            case .every(let n, let unit):
                return "\(unit ?? "t") \(TimeCut.number(Double(k) * n))–\(TimeCut.number(Double(k + 1) * n))"
            case .count(let total): return "span \(k + 1) of \(total)"
            }
        }

        var summary: String {
            switch self {
            case .every(let n, let unit): return "every \(TimeCut.number(n)) \(unit ?? "time units")"
            case .count(let k): return "\(k) equal spans"
            }
        }
    }

    /// `"test": {"last": k}`: in each user's experience, the rows of the last k time units (time
    /// > that user's last time in the experience − k) are test; every other row trains.
    public struct Test: Codable, Equatable, Sendable {
        public var last: Double

        public init(last: Double) { self.last = last }

        enum CodingKeys: String, CodingKey, CaseIterable { case last }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
            last = try c.decode(Double.self, forKey: .last)
            try c.require(last.isFinite && last > 0, .last, "must be a positive number of time units, got \(last)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(last, forKey: .last)
        }
    }

    /// A number as written: integers without a decimal point.
    static func number(_ x: Double) -> String {
        x.rounded() == x && abs(x) < 1e15 ? String(Int64(x)) : "\(x)"
    }
}
