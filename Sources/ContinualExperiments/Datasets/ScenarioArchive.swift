import Foundation
import ContinualCore
import ContinualHDF5

/// Reads and writes a whole `ExperienceStream` in the documented HDF5 scenario layout
/// (docs/scenarios.md), so other tools run on the very same data and users can bring their own.
///
/// ```
/// /                         attrs: format = "continualkit-scenario", format_version = 1, name,
///                                  head ("binary" | "multiclass"), classes, dimension,
///                                  experience_count, metadata_json, options_json, toolkit_version
/// /feature_names            string [D]
/// /experience_names         string [T]
/// /experiences/000/         attrs: index, name, metadata_json
///     train/features        float32 [n, D]     train/labels  int32 [n]   (train/routes int32 [n])
///     test/features         float32 [m, D]     test/labels   int32 [m]   (test/routes  int32 [m])
/// ```
public enum ScenarioArchive {
    public static let format = "continualkit-scenario"
    public static let formatVersion: Int64 = 1

    /// Group name of experience `i` of `count`: zero-padded to max(3, digits of count − 1), so
    /// lexical order is stream order. Readers still order groups numerically (by `index`).
    public static func groupName(_ i: Int, count: Int = 0) -> String {
        let s = String(i)
        let width = max(3, String(max(count - 1, 0)).count)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    /// Writes `stream` to `path` (replacing it), atomically through a temporary name.
    public static func write(_ stream: ExperienceStream, to path: String, optionsJSON: String = "") throws {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        try HDF5Lock.withLock {
            let url = URL(fileURLWithPath: path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let temporary = path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
            do {
                let file = try HDF5File.create(path: temporary)
                let root = file.root
                let a = root.attributes
                try a.set("format", format)
                try a.set("format_version", formatVersion)
                try a.set("name", stream.name)
                try a.set("head", stream.head == .binary ? "binary" : "multiclass")
                try a.set("classes", Int64(stream.head.classCount))
                try a.set("dimension", Int64(stream.dimension))
                try a.set("experience_count", Int64(stream.experiences.count))
                try a.set("metadata_json", try JSONValue.encodeCanonicalText(stream.metadata))
                try a.set("options_json", optionsJSON)
                try a.set("toolkit_version", ResultsSchema.toolkitVersion)
                _ = try root.write(stream.featureNames, name: "feature_names")
                _ = try root.write(stream.experiences.map(\.name), name: "experience_names")
                let experiences = try root.createGroup("experiences")
                for e in stream.experiences {
                    let g = try experiences.createGroup(groupName(e.index, count: stream.experiences.count))
                    try g.attributes.set("index", Int64(e.index))
                    try g.attributes.set("name", e.name)
                    try g.attributes.set("metadata_json", try JSONValue.encodeCanonicalText(e.metadata))
                    for (split, samples) in [("train", e.train), ("test", e.test)] {
                        let s = try g.createGroup(split)
                        let f = try s.write(samples.features, shape: [samples.count, stream.dimension], name: "features")
                        try f.attributes.set("axis0", "sample")
                        try f.attributes.set("axis1", "feature (see /feature_names)")
                        _ = try s.write(samples.labels, shape: [samples.count], name: "labels")
                        if let routes = samples.routes { _ = try s.write(routes, shape: [samples.count], name: "routes") }
                    }
                }
                try file.close()
                guard rename(temporary, path) == 0 else {
                    throw ScenarioError("cannot move \(temporary) to \(path): \(String(cString: strerror(errno)))")
                }
            } catch {
                try? FileManager.default.removeItem(atPath: temporary)
                throw error
            }
        }
    }

    /// Reads a stream written by `write` (or by any tool following the layout).
    public static func read(path: String) throws -> ExperienceStream {
        try read(path: path, keyColumns: []).stream
    }

    /// Reads a stream and, per experience, the key columns (user, session, time) named in
    /// `keyColumns` (each the per-split 1-D dataset `train/<name>` / `test/<name>` of strings,
    /// integers or numbers, one value per sample; paired with the JSON key that named it).
    public static func read(path: String, keyColumns: [(name: String, key: String)]) throws
        -> (stream: ExperienceStream, keys: [SampleKeys]) {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        return try HDF5Lock.withLock {
            guard FileManager.default.fileExists(atPath: path) else { throw ScenarioError("\(path): no such file") }
            let file: HDF5File
            do { file = try HDF5File.open(path: path) } catch { throw ScenarioError("\(path): \(error)") }
            defer { try? file.close() }
            let root = file.root
            let a = root.attributes
            func fail(_ message: String) -> ScenarioError { ScenarioError("\(path): \(message)") }
            let (name, head) = try nameAndHead(a, fail: fail)
            guard root.exists("feature_names") else { throw fail("missing dataset /feature_names") }
            let featureNames = try root.openDataset("feature_names").readStrings()
            let metadata = try decodeMetadata(try a.string("metadata_json") ?? "{}", fail("bad root attribute metadata_json"))
            guard root.exists("experiences") else { throw fail("missing group /experiences") }
            let group = try root.openGroup("experiences")
            let names = try numericOrder(group)
            let layout = Layout(featureCount: featureNames.count, head: head, experienceCount: names.count, keyColumns: keyColumns)
            var experiences: [Experience] = []
            var allKeys: [SampleKeys] = []
            for (i, child) in names.enumerated() {
                let (experience, keys) = try readExperience(try group.openGroup(child), child: child, position: i,
                                                            layout: layout, fail: fail)
                allKeys.append(keys)
                experiences.append(experience)
            }
            guard experiences.map(\.index) == Array(0..<experiences.count) else {
                throw fail("experience indices must be 0..<\(experiences.count), each once, found \(experiences.map(\.index))")
            }
            if keyColumns.isEmpty { try ExperienceStream.requireNonEmptySplits(experiences, source: path) }
            var stream = ExperienceStream(name: name, featureNames: featureNames, head: head, experiences: experiences, metadata: metadata)
            // Where the file came from (converted real data records source, licence and version).
            for attribute in ["source_version", "content_digest", "convert_command"] {
                if let value = try? a.string(attribute), !value.isEmpty { stream.metadata["file_" + attribute] = value }
            }
            try stream.validateData(source: path)
            return (stream, allKeys)
        }
    }

    /// What every experience group of a file is read against: the root's features and head, the
    /// number of experiences (routes index them) and the key columns asked for.
    private struct Layout {
        var featureCount: Int
        var head: OutputHead
        var experienceCount: Int
        var keyColumns: [(name: String, key: String)]
    }

    /// The stream's name and head from the root attributes, once `format` and `format_version`
    /// say the file is a scenario this reader knows.
    private static func nameAndHead(_ a: HDF5Attributes, fail: (String) -> ScenarioError) throws -> (String, OutputHead) {
        guard (try? a.string("format")) == format else {
            throw fail("not a ContinualKit scenario file (root attribute \"format\" must be \"\(format)\")")
        }
        let version = (try? a.scalar("format_version", as: Int64.self)) ?? 0
        guard version == formatVersion else { throw fail("unsupported format_version \(version) (this reader knows \(formatVersion))") }
        let name = try a.string("name") ?? "dataset"
        let headName = try a.string("head") ?? "multiclass"
        let classes = Int(try a.scalar("classes", as: Int64.self) ?? 0)
        guard headName == "binary" || (headName == "multiclass" && classes >= 2 && classes <= DataLimits.maxClasses) else {
            throw fail("root attributes head/classes must be \"binary\" or \"multiclass\" with classes in "
                + "2...\(DataLimits.maxClasses) (DataLimits.maxClasses), found \(headName)/\(classes)")
        }
        return (name, headName == "binary" ? .binary : .multiclass(classes: classes))
    }

    /// The experience groups' names in numeric order (by the stored index, else the group name),
    /// never text order: "1000" must come after "999" and "101".
    private static func numericOrder(_ group: HDF5Group) throws -> [String] {
        var keyed: [(key: Int, name: String)] = []
        for child in try group.childNames() {
            let stored = try group.openGroup(child).attributes.scalar("index", as: Int64.self).map { Int($0) }
            keyed.append((stored ?? Int(child) ?? Int.max, child))
        }
        return keyed.sorted { $0.key != $1.key ? $0.key < $1.key : $0.name < $1.name }.map(\.name)
    }

    /// Experience group `child` (the `position`-th in numeric order) and its key columns' values.
    private static func readExperience(_ g: HDF5Group, child: String, position i: Int, layout: Layout,
                                       fail: (String) -> ScenarioError) throws -> (Experience, SampleKeys) {
        let where_ = "/experiences/\(child)"
        let index = Int(try g.attributes.scalar("index", as: Int64.self) ?? Int64(i))
        let ename = try g.attributes.string("name") ?? child
        let emeta = try decodeMetadata(try g.attributes.string("metadata_json") ?? "{}",
                                       fail("\(where_): bad attribute metadata_json"))
        var splits: [Samples] = []
        var keys = SampleKeys()
        for split in ["train", "test"] {
            splits.append(try readSplit(g, split, at: "\(where_)/\(split)", experience: (index, ename), layout: layout,
                                        keys: &keys, fail: fail))
        }
        return (Experience(index: index, name: ename, train: splits[0], test: splits[1], metadata: emeta), keys)
    }

    /// One split's samples (finite features, labels and routes in range, as many as rows), its
    /// key columns' values appended to `keys`.
    private static func readSplit(_ g: HDF5Group, _ split: String, at: String, experience: (index: Int, name: String),
                                  layout: Layout, keys: inout SampleKeys, fail: (String) -> ScenarioError) throws -> Samples {
        let featureCount = layout.featureCount
        guard g.exists("\(split)/features"), g.exists("\(split)/labels") else {
            throw fail("\(at) needs datasets features [n, \(featureCount)] and labels [n]")
        }
        let fds = try g.openDataset("\(split)/features")
        let shape = try fds.shape
        guard shape.count == 2, shape[1] == featureCount else {
            throw fail("\(at)/features has shape \(shape), expected [n, \(featureCount)] (one column per feature name)")
        }
        let features = try fds.read(as: Float.self)
        if let c = features.firstIndex(where: { !$0.isFinite }) {
            throw fail("\(at)/features: experience \(experience.index) (\"\(experience.name)\") \(split) row \(c / max(featureCount, 1)), "
                + "feature \(c % max(featureCount, 1)) is \(features[c]) (features must be finite)")
        }
        let labels = try readIndices(g, "\(split)/labels", at: at, range: 0..<layout.head.classCount, fail: fail)
        guard labels.count == shape[0] else {
            throw fail("\(at)/labels has \(labels.count) values but features has \(shape[0]) rows")
        }
        var routes: [Int32]? = nil
        if g.exists("\(split)/routes") {
            // One route per experience at most (a head per experience): a route beyond
            // would silently select another experience's head.
            routes = try readIndices(g, "\(split)/routes", at: at, range: 0..<layout.experienceCount, fail: fail)
            guard routes!.count == labels.count else { throw fail("\(at)/routes has \(routes!.count) values, expected \(labels.count)") }
        }
        let samples = Samples(dimension: featureCount, features: features, labels: labels, routes: routes)
        for (column, key) in layout.keyColumns {
            guard g.exists("\(split)/\(column)") else {
                throw fail(".scenario.\(key): no dataset \"\(column)\" in \(at) (a key column is a 1-D dataset "
                    + "\(split)/\(column) with one value per sample in every experience)")
            }
            let values = try readKeyColumn(try g.openDataset("\(split)/\(column)"))
            guard values.count == labels.count else {
                throw fail("\(at)/\(column) has \(values.count) values, expected \(labels.count) (one per sample)")
            }
            for v in values { keys.append(v, column: column, test: split == "test") }
        }
        return samples
    }

    /// A key column's values as text: strings as stored, integers in decimal, other numbers as
    /// Swift prints a Double (so they parse back exactly).
    static func readKeyColumn(_ ds: HDF5Dataset) throws -> [String] {
        if let strings = try? ds.readStrings() { return strings }
        if try ds.storesFloatingPoint { return try ds.read(as: Double.self).map { "\($0)" } }
        return try ds.read(as: Int64.self).map { "\($0)" }
    }

    /// An integer dataset (labels, routes) whose every value is integral and within `range`:
    /// floats such as 0.7 are refused rather than truncated, and values beyond Int32 are reported
    /// as stored rather than clipped.
    static func readIndices(_ g: HDF5Group, _ name: String, at: String, range: Range<Int>,
                            fail: (String) -> ScenarioError) throws -> [Int32] {
        let ds = try g.openDataset(name)
        let what = String(name.split(separator: "/").last ?? "")
        if try ds.storesFloatingPoint {
            let values = try ds.read(as: Double.self)
            if let i = values.firstIndex(where: { !($0.rounded() == $0 && $0 >= Double(range.lowerBound) && $0 < Double(range.upperBound)) }) {
                throw fail("\(at)/\(what)[\(i)] = \(values[i]): \(what) must be integers in \(range.lowerBound)..<\(range.upperBound)")
            }
            return values.map { Int32($0) }
        }
        let values = try ds.read(as: Int64.self)
        if let i = values.firstIndex(where: { $0 < Int64(range.lowerBound) || $0 >= Int64(range.upperBound) }) {
            throw fail("\(at)/\(what)[\(i)] = \(values[i]) is out of range \(range.lowerBound)..<\(range.upperBound)")
        }
        return values.map { Int32($0) }
    }

    static func decodeMetadata(_ text: String, _ error: ScenarioError) throws -> [String: String] {
        do { return try JSONDecoder().decode([String: String].self, from: Data(text.utf8)) } catch { throw error }
    }
}
