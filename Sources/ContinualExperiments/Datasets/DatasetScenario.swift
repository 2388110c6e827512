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

    public init(path: String) { self.path = path }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case path, classes, head, experienceColumn = "experience_column", splitColumn = "split_column"
        case labelColumn = "label_column"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
        path = try c.decode(String.self, forKey: .path)
        classes = try c.decodeIfPresent(Int.self, forKey: .classes)
        head = try c.decodeChoice(.head, default: .auto)
        experienceColumn = try c.decode(.experienceColumn, default: "experience")
        splitColumn = try c.decode(.splitColumn, default: "split")
        labelColumn = try c.decode(.labelColumn, default: "label")
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
    }

    /// The seed is unused: the data is what the file holds.
    public func makeStream(seed: UInt64) throws -> ExperienceStream {
        var stream: ExperienceStream
        if path.hasSuffix(".csv") {
            var reader = CSVScenarioReader()
            reader.experienceColumn = experienceColumn
            reader.splitColumn = splitColumn
            reader.labelColumn = labelColumn
            reader.classes = classes
            reader.forceMulticlass = head == .multiclass
            stream = try reader.read(path: path)
        } else {
            stream = try ScenarioArchive.read(path: path)
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
