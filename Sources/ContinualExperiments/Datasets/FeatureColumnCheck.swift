import ContinualCore

/// Finds the feature columns of a data file that look like a time or an id: a column the
/// `dataset` scenario would feed to the model only because it was not declared as a key column.
/// A forgotten `day` column (0–119, unscaled) used as a feature moved naive ACC from 67.3 to
/// 54.7 in issue 44's example and nothing said so; `DatasetScenario` refuses such a column
/// unless `feature_columns` lists it (the explicit opt-in). The rules (docs/scenarios.md):
///
/// - **by name**: the name, lowercased and split at separators (`_ - . /` space) and camelCase
///   boundaries, is one of `names` when its parts are joined (`day`, `Date`, `user_id` → `userid`,
///   `row-index`…), or ends in one of `suffixes` (`subject_id`, `event_date`, `created_ts`), or
///   starts with one of `prefixes` (`timestamp_ms`, `unix_time`). Time of day (`hour`, `minute`)
///   is left out: it is a usual, intended feature (cyclic context), and a clock counting hours is
///   caught by its values;
/// - **by values** (integer columns only: measured values are rarely whole numbers throughout):
///   a *counter*: along each user's rows (the whole file without a user column), in file order
///   within each experience and split, the value never falls, and for some user it rises at
///   least `minimumRises` times through more than `minimumRises` distinct values; or a *row
///   number*: every row has its own value and the values are an unbroken run of consecutive
///   integers of at least `minimumRun` (in the whole file, or for every user with that many
///   rows), which catches a shuffled day or row counter. Ordinary integer features (counts,
///   heart rates, ages, 0/1 flags) fall somewhere, repeat, take few values or leave gaps.
public enum FeatureColumnCheck {
    /// Whole names (parts joined) that are a time or an id.
    public static let names: Set<String> = [
        "day", "days", "date", "datetime", "time", "timestamp", "ts", "epoch", "week", "month", "year",
        "id", "uid", "uuid", "idx", "index", "row", "rowid", "rownumber", "user", "userid", "username",
        "subject", "subjectid", "participant", "participantid", "person", "personid", "session",
        "sessionid", "seq", "sequence",
    ]
    /// Last parts that make a name an id or a timestamp.
    public static let suffixes: Set<String> = ["id", "idx", "index", "ts", "timestamp", "date", "datetime", "uuid"]
    /// First parts that make a name a timestamp.
    public static let prefixes: Set<String> = ["timestamp", "datetime", "date", "epoch", "unix"]
    /// A counter must rise at least this many times along one user's rows.
    public static let minimumRises = 20
    /// A row number must run over at least this many consecutive integers.
    public static let minimumRun = 20

    /// A column that looks like a time or an id, and why.
    public struct Finding: Equatable, Sendable {
        public var column: String
        public var reason: String
    }

    /// The lowercased parts of a column name (split at non-alphanumerics and camelCase).
    static func parts(_ name: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var previousLower = false
        for ch in name {
            guard ch.isLetter || ch.isNumber else {
                if !current.isEmpty { parts.append(current) }
                current = ""
                previousLower = false
                continue
            }
            if ch.isUppercase && previousLower && !current.isEmpty {
                parts.append(current)
                current = ""
            }
            current += ch.lowercased()
            previousLower = ch.isLowercase || ch.isNumber
        }
        if !current.isEmpty { parts.append(current) }
        return parts
    }

    /// Whether `name` reads as a time or an id (the name rule above).
    public static func nameLooksLikeTimeOrId(_ name: String) -> Bool {
        let p = parts(name)
        guard let first = p.first, let last = p.last else { return false }
        return names.contains(p.joined()) || (p.count > 1 && (suffixes.contains(last) || prefixes.contains(first)))
    }

    /// The columns of `stream` that look like a time or an id, by name or by values; `users`
    /// gives each row's user per experience and split (nil: the whole file is one user).
    public static func findings(_ stream: ExperienceStream, users: [(train: [String], test: [String])]?) -> [Finding] {
        stream.featureNames.enumerated().compactMap { column, name in
            if nameLooksLikeTimeOrId(name) { return Finding(column: name, reason: "its name") }
            let blocks = stream.experiences.enumerated().flatMap { i, e in
                [(e.train, users?[i].train), (e.test, users?[i].test)].map { samples, owners in
                    (values: (0..<samples.count).map { samples.features[$0 * samples.dimension + column] }, users: owners)
                }
            }
            return valuesReason(blocks).map { Finding(column: name, reason: $0) }
        }
    }

    /// Why a column's values look like a time or an id, or nil. `blocks` are the column's values
    /// per experience and split in file order, with each row's user (nil: one user).
    static func valuesReason(_ blocks: [(values: [Float], users: [String]?)]) -> String? {
        guard blocks.allSatisfy({ $0.values.allSatisfy { $0.rounded() == $0 } }) else { return nil }
        if let (user, count) = counterRises(blocks), count >= minimumRises {
            return "its values never fall and rise \(count) times along "
                + (user.isEmpty ? "the rows" : "user \"\(user)\"'s rows") + ", like a clock or counter"
        }
        if isRowNumber(blocks.flatMap(\.values)) {
            return "every row has its own integer, an unbroken run like a row number"
        }
        var perUser: [String: [Float]] = [:]
        for block in blocks {
            guard let users = block.users else { continue }
            for (r, v) in block.values.enumerated() { perUser[users[r], default: []].append(v) }
        }
        let long = perUser.values.filter { $0.count >= minimumRun }
        if perUser.count > 1, !long.isEmpty, long.allSatisfy(isRowNumber) {
            return "every row of each user has its own integer, an unbroken run like a day or row counter"
        }
        return nil
    }

    /// The user along whose rows the column rises most, and how often; nil when it falls
    /// anywhere along a user's rows (within a block).
    static func counterRises(_ blocks: [(values: [Float], users: [String]?)]) -> (user: String, count: Int)? {
        var rises: [String: Int] = [:]
        var seen: [String: Set<Float>] = [:]
        for block in blocks {
            var previous: [String: Float] = [:]
            for (r, v) in block.values.enumerated() {
                let user = block.users?[r] ?? ""
                if let p = previous[user] {
                    if v < p { return nil }
                    if v > p { rises[user, default: 0] += 1 }
                }
                previous[user] = v
                seen[user, default: []].insert(v)
            }
        }
        // A clock moves through many values; a 0/1 flag sorted within many short blocks does not.
        return rises.filter { seen[$0.key, default: []].count > minimumRises }
            .max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }.map { ($0.key, $0.value) }
    }

    /// At least `minimumRun` values, all different, covering min…max without a gap.
    static func isRowNumber(_ values: [Float]) -> Bool {
        guard values.count >= minimumRun, let lo = values.min(), let hi = values.max() else { return false }
        return Double(hi) - Double(lo) + 1 == Double(values.count) && Set(values).count == values.count
    }
}
