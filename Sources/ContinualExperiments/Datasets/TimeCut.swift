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

    /// Which rows of each user's experience are test (by `time_column`):
    /// - `{"last": k}`: the rows of the last k time units (time > that user's last time in the
    ///   experience − k), so no test row precedes a training row (forecasting; the default to use);
    /// - `{"every": n}`: the rows of every n-th time unit counted from the user's first time in the
    ///   experience (units n−1, 2n−1, …), interleaved with the training units (interpolation: a
    ///   test day can precede training days, which leaks the future into training; say so when
    ///   reporting it).
    public struct Test: Codable, Equatable, Sendable {
        public var last: Double?
        public var every: Int?

        public init(last: Double) { self.last = last }
        public init(every: Int) { self.every = every }

        enum CodingKeys: String, CodingKey, CaseIterable { case last, every }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
            last = try c.decodeIfPresent(Double.self, forKey: .last)
            every = try c.decodeIfPresent(Int.self, forKey: .every)
            try c.require((last == nil) != (every == nil), .last, "give exactly one of \"last\" (the last k time units) or \"every\" (every n-th time unit)")
            if let last { try c.require(last.isFinite && last > 0, .last, "must be a positive number of time units, got \(last)") }
            if let every { try c.require(every >= 2, .every, "must be ≥ 2 (every n-th time unit is test; 1 would leave nothing to train on), got \(every)") }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeIfPresent(last, forKey: .last)
            try c.encodeIfPresent(every, forKey: .every)
        }

        /// Whether a row at `time` is test, in an experience whose rows (of this user) span
        /// `first`…`lastTime`.
        func isTest(_ time: Double, first: Double, last lastTime: Double) -> Bool {
            if let last { return time > lastTime - last }
            let unit = Int((time - first).rounded(.down))
            return (unit + 1) % every! == 0
        }

        /// What `validate` prints after "test: ".
        func summary(unit: String, perUser: Bool) -> String {
            let whose = perUser ? "user's " : ""
            if let last { return "the last \(TimeCut.number(last)) \(unit) of each \(whose)experience (after all its train rows)" }
            return "every \(every!)th of the \(unit) of each \(whose)experience (interleaved: test rows can precede train rows)"
        }
    }

    /// A number as written: integers without a decimal point.
    static func number(_ x: Double) -> String {
        x.rounded() == x && abs(x) < 1e15 ? String(Int64(x)) : "\(x)"
    }
}
