import Foundation
import ContinualCore

/// Users in a data file: the `user_column` picks a user's rows (never a feature), the session and
/// time columns order them, and `forPopulation` turns the file into a population of its users.
extension DatasetScenario {
    /// The key columns this scenario names, with the JSON keys that named them (for errors).
    var keyColumns: [(name: String, key: String)] {
        [(userColumn, "user_column"), (sessionColumn, "session_column"), (timeColumn, "time_column")]
            .compactMap { name, key in name.map { ($0, key) } }
    }

    /// The stream as stored (its features as `feature_columns` says, its experiences and splits
    /// cut by time when the scenario says so) and, per experience, its key columns; checks
    /// `source_version` and that no undeclared feature looks like a time or an id.
    func readFile() throws -> (stream: ExperienceStream, keys: [SampleKeys]) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ScenarioError("\(path): no such file" + Self.missingFileHint(path))
        }
        var result: (stream: ExperienceStream, keys: [SampleKeys])
        if path.hasSuffix(".csv") {
            var reader = CSVScenarioReader()
            reader.experienceColumn = experienceColumn
            reader.splitColumn = splitColumn
            reader.labelColumn = labelColumn
            reader.classes = classes
            reader.forceMulticlass = head == .multiclass
            reader.keyColumns = keyColumns
            reader.featureColumns = featureColumns
            reader.readsExperiences = experiences == nil
            reader.readsSplits = test == nil
            result = try reader.readWithKeys(path: path)
        } else {
            result = try ScenarioArchive.read(path: path, keyColumns: keyColumns)
            result.stream = try selectingFeatures(result.stream)
        }
        if let sourceVersion {
            let found = result.stream.metadata["file_source_version"]
            guard found == sourceVersion else {
                let command = result.stream.metadata["file_convert_command"].map {
                    "; convert it again: " + $0.replacingOccurrences(of: "FILE.h5", with: path) } ?? ""
                throw ScenarioError("\(path): .scenario.source_version: the experiment needs a file converted from "
                    + "\(sourceVersion), but this one " + (found.map { "was converted from \($0)" } ?? "records no source_version")
                    + command)
            }
        }
        try requireExplicitFeatures(result.stream, keys: result.keys)
        return try cutByTime(result.stream, keys: result.keys)
    }

    /// For a missing file whose name is one of the importers' (`continualkit datasets …`), what to run.
    static func missingFileHint(_ path: String) -> String {
        let base = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        for (name, extra) in [("hapt", "hapt"), ("watch", "watch"), ("actigraphy", "actigraphy")] where base.hasPrefix(name) {
            return " (real per-user data is converted, not shipped: pip install './python[\(extra)]' && "
                + "continualkit datasets \(name) -o \(path); see docs/real-users.md)"
        }
        return ""
    }

    /// Every user id in the file, integer ids in numeric order and others in text order.
    static func userIds(_ keys: [SampleKeys], column: String) -> [String] {
        var seen = Set<String>()
        for k in keys {
            for split in [k.train, k.test] { seen.formUnion(split[column] ?? []) }
        }
        let ids = Array(seen)
        if ids.allSatisfy({ Int($0) != nil }) { return ids.sorted { Int($0)! < Int($1)! } }
        return ids.sorted()
    }

    /// The users taking part: `users` (each checked to be in the file) or every user in the file.
    func participants(_ keys: [SampleKeys]) throws -> [String] {
        guard let column = userColumn else { return [] }
        let inFile = Self.userIds(keys, column: column)
        guard let users else { return inFile }
        let known = Set(inFile)
        if let missing = users.first(where: { !known.contains($0) }) {
            throw ScenarioError("\(path): .scenario.users: no rows of user \"\(missing)\" in the file (\(inFile.count) users: "
                + "\(Self.preview(inFile)))")
        }
        return users
    }

    /// The JSON key path a data-file error names (".scenario.user_column", ".population.users"), if any.
    public static func keyPath(in message: String) -> String? {
        for prefix in [".scenario.", ".population."] {
            guard let r = message.range(of: prefix) else { continue }
            let tail = message[r.upperBound...].prefix { $0.isLetter || $0 == "_" }
            if !tail.isEmpty { return prefix + tail }
        }
        return nil
    }

    static func preview(_ ids: [String]) -> String {
        ids.count <= 12 ? ids.joined(separator: ", ") : ids.prefix(10).joined(separator: ", ") + ", … " + ids.last!
    }

    /// The rows of `user` (or of every participant), each user's in (session, time) order
    /// (stable), truncated to `caps` when set.
    func selectRows(_ stream: ExperienceStream, keys: [SampleKeys]) throws -> ExperienceStream {
        let allowed = Set(try participants(keys))
        if let user, userColumn != nil, !allowed.contains(user) {
            throw ScenarioError("\(path): .scenario.user: no rows of user \"\(user)\" in the file (users: \(Self.preview(allowed.sorted())))")
        }
        var out = stream
        for (i, e) in stream.experiences.enumerated() {
            var parts: [Samples] = []
            for (split, samples, columns) in [("train", e.train, keys[i].train), ("test", e.test, keys[i].test)] {
                var rows = Array(0..<samples.count)
                if let column = userColumn, let u = columns[column] {
                    if let user { rows = rows.filter { u[$0] == user } } else { rows = rows.filter { allowed.contains(u[$0]) } }
                }
                var order: [[Double]] = Array(repeating: [], count: samples.count)
                for (column, key) in [(sessionColumn, "session_column"), (timeColumn, "time_column")] {
                    guard let column, let values = columns[column] else { continue }
                    for r in rows {
                        guard let v = Double(values[r]), v.isFinite else {
                            throw ScenarioError("\(path): .scenario.\(key): experience \(e.index) (\"\(e.name)\") \(split) row \(r): "
                                + "\"\(values[r])\" is not a finite number")
                        }
                        order[r].append(v)
                    }
                }
                if sessionColumn != nil || timeColumn != nil {
                    rows = rows.enumerated().sorted { a, b in
                        order[a.element].lexicographicallyPrecedes(order[b.element]) ? true
                            : order[b.element].lexicographicallyPrecedes(order[a.element]) ? false : a.offset < b.offset
                    }.map(\.element)
                }
                if let caps {
                    rows = Array(rows.prefix(split == "train" ? caps[i].train : caps[i].test))
                }
                parts.append(samples.subset(rows))
            }
            out.experiences[i].train = parts[0]
            out.experiences[i].test = parts[1]
            if userColumn != nil { out.experiences[i].metadata["user"] = user ?? "all" }
        }
        if userColumn != nil {
            out.metadata["user"] = user ?? "all (\(allowed.count) users)"
            out.metadata["user_column"] = userColumn
        }
        try ExperienceStream.requireNonEmptySplits(out.experiences, source: path + (user.map { ", user \"\($0)\"" } ?? ""))
        return out
    }
}
