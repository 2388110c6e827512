import ContinualCore

/// What a `dataset` scenario feeds the model and whose rows it holds: `validate` and
/// `run --verbose` print it, so a column that became a feature by omission, or a missing user,
/// is seen before training (issue 44: no command listed a run's features or users).
public struct DatasetSummary: Equatable, Sendable {
    /// The data file, as resolved.
    public var path: String
    /// The model's inputs, in order.
    public var features: [String]
    /// The user column, if any.
    public var userColumn: String?
    /// The users taking part: a population's members, else every participant (empty without a
    /// user column).
    public var users: [String]
    /// How many users the file has taking part (more than `users` when a population samples).
    public var usersInFile: Int
    /// How experiences and test rows are cut, when the scenario cuts them by time.
    public var cuts: [String] = []

    /// The summary of a run's scenario, or nil when it is not a `dataset` scenario; reads the file.
    public static func of(_ config: RunConfig) throws -> DatasetSummary? {
        guard var scenario = config.scenario.options as? DatasetScenario else { return nil }
        scenario.user = config.population == nil ? scenario.user : nil
        let (stream, keys) = try scenario.readFile()
        let taking = try scenario.participants(keys)
        var users = scenario.user.map { [$0] } ?? taking
        if let population = config.population, scenario.userColumn != nil {
            users = try scenario.forPopulation(users: population.users, seed: population.seed ?? config.seed).memberIds
        }
        return DatasetSummary(path: scenario.path, features: stream.featureNames, userColumn: scenario.userColumn,
                              users: users, usersInFile: taking.count,
                              cuts: scenario.cutLines(experienceCount: stream.experiences.count).map(\.value))
    }

    /// Indented lines, none wider than `width` (a long list continues on further lines).
    public func lines(width: Int = 80) -> [String] {
        var out = ["  data \(path)"]
        out += Self.wrapped("    features (\(features.count)): ", features, width: width)
        if let userColumn {
            let of = users.count < usersInFile ? " of \(usersInFile)" : ""
            out += Self.wrapped("    users (\(users.count)\(of), column \"\(userColumn)\"): ", users, width: width)
        } else {
            out.append("    users: no user_column (every row is one stream)")
        }
        out += cuts.map { "    " + $0 }
        return out
    }

    /// `head` then `items` comma-separated, wrapped at `width` with continuation lines indented
    /// two spaces past `head`'s indentation; an item longer than a line gets a line of its own.
    static func wrapped(_ head: String, _ items: [String], width: Int) -> [String] {
        let indent = String(repeating: " ", count: head.prefix { $0 == " " }.count + 2)
        var lines: [String] = []
        var line = head
        for (i, item) in items.enumerated() {
            let piece = item + (i < items.count - 1 ? "," : "")
            let fresh = line == head || line == indent
            if !fresh && line.count + 1 + piece.count > width {
                lines.append(line)
                line = indent + piece
            } else {
                line += (fresh ? "" : " ") + piece
            }
        }
        lines.append(line)
        return lines
    }
}
