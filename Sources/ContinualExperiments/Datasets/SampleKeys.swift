/// The values of a data file's key columns (user, session, time) for one experience: per split,
/// column name → one text value per sample, in the experience's row order. Key columns are never
/// features; `DatasetScenario` uses them to pick a user's rows and order them in time.
public struct SampleKeys: Sendable, Equatable {
    public var train: [String: [String]] = [:]
    public var test: [String: [String]] = [:]

    public init() {}

    mutating func append(_ value: String, column: String, test isTest: Bool) {
        if isTest { test[column, default: []].append(value) } else { train[column, default: []].append(value) }
    }
}
