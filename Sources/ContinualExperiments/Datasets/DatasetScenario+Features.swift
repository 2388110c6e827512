import ContinualCore

/// Features are explicit: `feature_columns` lists the model's inputs; without it, every
/// undeclared column is one, and a column that looks like a time or an id (`FeatureColumnCheck`)
/// is refused, naming the keys that declare it. Runs wherever the file is read, so `validate`
/// (which builds every scenario it can) refuses what `run` would.
extension DatasetScenario {
    /// Every column the scenario declares as something other than a feature, with its key.
    var declaredColumns: [(name: String, key: String)] {
        [(experienceColumn, "experience_column"), (splitColumn, "split_column"), (labelColumn, "label_column")] + keyColumns
    }

    /// Why `feature_columns` cannot be used as written (empty, repeated, or naming a declared
    /// column), or nil.
    var featureColumnsProblem: String? {
        guard let featureColumns else { return nil }
        if featureColumns.isEmpty { return "must list at least one column" }
        if Set(featureColumns).count != featureColumns.count { return "lists a column twice: \(featureColumns)" }
        if let clash = declaredColumns.first(where: { featureColumns.contains($0.name) }) {
            return "\"\(clash.name)\" is the \(clash.key), never a feature"
        }
        return nil
    }

    /// `stream` with only the listed features, in the listed order (HDF5: the file's
    /// /feature_names must hold each); the CSV reader selects its columns itself.
    func selectingFeatures(_ stream: ExperienceStream) throws -> ExperienceStream {
        guard let featureColumns, featureColumns != stream.featureNames else { return stream }
        var index: [String: Int] = [:]
        for (i, name) in stream.featureNames.enumerated() where index[name] == nil { index[name] = i }
        let columns = try featureColumns.map { name in
            guard let i = index[name] else {
                throw ScenarioError("\(path): .scenario.feature_columns: no feature \"\(name)\" in the file (found: "
                    + Self.preview(stream.featureNames) + ")")
            }
            return i
        }
        var out = stream
        out.featureNames = featureColumns
        for (e, experience) in stream.experiences.enumerated() {
            out.experiences[e].train = Self.columns(columns, of: experience.train)
            out.experiences[e].test = Self.columns(columns, of: experience.test)
        }
        return out
    }

    static func columns(_ columns: [Int], of samples: Samples) -> Samples {
        var features = [Float]()
        features.reserveCapacity(samples.count * columns.count)
        for r in 0..<samples.count {
            let row = samples.row(r)
            for c in columns { features.append(row[row.startIndex + c]) }
        }
        return Samples(dimension: columns.count, features: features, labels: samples.labels, routes: samples.routes)
    }

    /// Refuses features that look like a time or an id unless `feature_columns` lists them.
    func requireExplicitFeatures(_ stream: ExperienceStream, keys: [SampleKeys]) throws {
        guard featureColumns == nil else { return }
        let users = userColumn.map { column in keys.map { (train: $0.train[column] ?? [], test: $0.test[column] ?? []) } }
        let findings = FeatureColumnCheck.findings(stream, users: users)
        guard !findings.isEmpty else { return }
        throw ScenarioError(Self.undeclaredMessage(findings, path: path, unset: keyColumnKeysUnset))
    }

    /// The key-column keys not yet set, in the order the message suggests them.
    var keyColumnKeysUnset: [String] {
        [("time_column", timeColumn), ("session_column", sessionColumn), ("user_column", userColumn)]
            .filter { $0.1 == nil }.map(\.0)
    }

    /// The refusal: which columns, why, and the keys that declare them or keep them.
    static func undeclaredMessage(_ findings: [FeatureColumnCheck.Finding], path: String, unset: [String]) -> String {
        let what = findings.map { "\"\($0.column)\" (\($0.reason))" }.joined(separator: ", ")
        let first = findings[0].column
        let declare = unset.isEmpty ? "" : "declare it as a key column, e.g. \"\(unset[0])\": \"\(first)\""
            + (unset.count > 1 ? " (or " + unset.dropFirst().map { "\"\($0)\"" }.joined(separator: ", ") + ")" : "") + ", or "
        return "\(path): .scenario.feature_columns: \(what) \(findings.count == 1 ? "looks" : "look") like a time or an id "
            + "and would be a model input; \(declare)list the model's inputs in \"feature_columns\" (listing \"\(first)\" "
            + "there keeps it as a feature)"
    }
}
