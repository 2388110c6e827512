import Foundation
import ContinualHDF5

/// Merges sweep results files (shards, or partial sweeps) into one, rebuilding `/summary`.
///
/// Run groups are copied as they are (`H5Ocopy`), each checked first against its SHA-256 digest
/// (`RunDigest`): a damaged run is skipped and reported by id and name, never copied, and never
/// counted as a duplicate of a good copy. Finished runs a killed writer left in an input's journal
/// (`NAME.h5.journal/`) are merged too. A run id present in several inputs must have
/// the same content (config and every summary value except wall times); otherwise the merge is
/// refused, because two different results under one id mean the inputs are inconsistent.
/// Inputs made from different experiment files (`experiment_json`), or two runs with one
/// `sweep_index`, are refused too unless `allowMixed` (then rows sort by sweep index, run id).
public enum ResultsMerger {
    public struct Report: Sendable {
        public var runs: Int
        public var duplicates: Int
        public var skippedIncomplete: Int
        public var warnings: [String]
        /// Run groups skipped because they could not be read or copied, or failed their digest.
        public var damaged = 0
        /// Ids of the damaged runs skipped.
        public var damagedRuns: [String] = []
    }

    public struct Conflict: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// `salvage` (`continual repair`): groups that cannot be read or copied are skipped and
    /// reported in the warnings instead of failing the merge.
    public static func merge(inputs: [String], output: String, allowMixed: Bool = false, salvage: Bool = true) throws -> Report {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        return try HDF5Lock.withLock {
            guard !inputs.isEmpty else { throw Conflict(description: "no input files") }
            try FileManager.default.createDirectory(at: URL(fileURLWithPath: output).deletingLastPathComponent(),
                                                    withIntermediateDirectories: true)
            let temporary = output + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
            var merge = Merge(inputs: inputs, allowMixed: allowMixed, salvage: salvage)
            do {
                // The output is at most the inputs' size: refuse up front when the disk cannot take it.
                let needed = inputs.reduce(0) { total, input in
                    total + SweepWriter.size(input) + SweepWriter.journalEntries(input).reduce(0) { $0 + SweepWriter.size($1) }
                }
                try DiskSpace.require(needed + (1 << 20), toWrite: temporary)
                let out = try HDF5File.create(path: temporary)
                let outRuns = try out.root.createGroup("runs")
                for (n, input) in inputs.enumerated() {
                    try merge.add(input, first: n == 0, into: out.root, runs: outRuns)
                }
                try merge.finish(out.root)
                try out.close()
                merge.report.runs = merge.rows.count
                guard rename(temporary, output) == 0 else {
                    throw HDF5Error(.library, "cannot move \(temporary) to \(output): \(String(cString: strerror(errno)))")
                }
            } catch {
                try? FileManager.default.removeItem(atPath: temporary)
                throw error
            }
            return merge.report
        }
    }

    /// One stored run: its id, summary row and the row's columns (`SweepWriter.storedRows`).
    private typealias StoredRow = (id: String, row: [HDF5Value], columns: [HDF5Table.Column])

    /// A merge in progress: the first input's layout and experiment, the runs kept (by id, with
    /// their source, config and row, and by sweep index), their summary rows, and the report.
    private struct Merge {
        let inputs: [String]
        let allowMixed: Bool
        let salvage: Bool
        var report = Report(runs: 0, duplicates: 0, skippedIncomplete: 0, warnings: [])
        var layout: SummaryLayout?
        var firstSweep: String?
        // id → (input path, config JSON, row) of the copy kept.
        var kept: [String: (source: String, config: String, row: [HDF5Value])] = [:]
        var rows: [[HDF5Value]] = []
        // sweep_index → run id of the kept run, to catch two runs claiming one position.
        var byIndex: [Int64: (id: String, source: String)] = [:]
        var mixed = Set<String>()
        var clashes = 0, firstClash = ""

        init(inputs: [String], allowMixed: Bool, salvage: Bool) {
            self.inputs = inputs
            self.allowMixed = allowMixed
            self.salvage = salvage
        }

        /// Merges `input` (the `first` one gives the header and layout) and its journal's finished
        /// runs into `out`, copying the run groups into `outRuns`.
        mutating func add(_ input: String, first: Bool, into out: HDF5Group, runs outRuns: HDF5Group) throws {
            let file = try HDF5File.open(path: input, mode: .readOnly)
            defer { try? file.close() }
            let root = file.root
            let inputLayout = try checkHeader(input, root, first: first, into: out)
            let names = inputLayout.columns.map(\.name)
            let compared = names.indices.filter { !ResultsSchema.timingColumns.contains(names[$0]) }
            // The file's own runs, then the finished runs a killed writer left in its journal.
            var sources: [(label: String, root: HDF5Group, keep: HDF5File?)] = [(input, root, nil)]
            for entry in SweepWriter.journalEntries(input) {
                do {
                    let j = try HDF5File.open(path: entry, mode: .readOnly)
                    sources.append(("\(input) (journal)", j.root, j))
                } catch {
                    report.warnings.append("\(input): journal entry \(entry) is unreadable, skipped (\(error))")
                    report.damaged += 1
                }
            }
            defer { for s in sources { try? s.keep?.close() } }
            for source in sources {
                try addSource(source.label, source.root, names: names, compared: compared, into: outRuns)
            }
        }

        /// `input`'s layout, checked against the first input's: the same swept columns and (unless
        /// `allowMixed`) the same experiment file; the first input's header is copied to `out`.
        mutating func checkHeader(_ input: String, _ root: HDF5Group, first: Bool, into out: HDF5Group) throws -> SummaryLayout {
            guard try root.attributes.string("kind") == "sweep", let inputLayout = try SweepWriter.readLayout(root) else {
                throw Conflict(description: "\(input) is not a sweep results file (written by `continual sweep`)")
            }
            let sweep = try root.attributes.string("experiment_json") ?? ""
            if first {
                layout = inputLayout
                firstSweep = sweep
                try copyHeader(from: root, to: out)
            } else {
                guard inputLayout == layout else {
                    throw Conflict(description: "\(input) comes from a different sweep: swept columns \(inputLayout.sweptColumnNames) (kinds \(inputLayout.swept.map { "\($0.kind)" })) ≠ \(layout!.sweptColumnNames) (kinds \(layout!.swept.map { "\($0.kind)" })) in \(inputs[0])")
                }
                if sweep != firstSweep {
                    guard allowMixed else {
                        throw Conflict(description: "\(input) was made from a different experiment file (experiment_json) than \(inputs[0]); refusing to mix two experiments in one /summary (use --allow-mixed to merge them anyway)")
                    }
                    mixed.insert(sweep)
                    report.warnings.append("\(input) was made from a different experiment file than \(inputs[0]); kept (--allow-mixed)")
                }
            }
            return inputLayout
        }

        /// The runs of one source (an input or a journal entry, named `label`): damaged ones
        /// (failing their digest) are reported and skipped, the others merged.
        mutating func addSource(_ label: String, _ root: HDF5Group, names: [String], compared: [Int], into outRuns: HDF5Group) throws {
            let runs = try root.openGroup("runs")
            var damaged: [(id: String, reason: String)] = []
            let stored = try SweepWriter.storedRows(root, damaged: &damaged)
            report.skippedIncomplete += try runs.childNames().count - stored.count - damaged.count
            var good: [StoredRow] = []
            let manifest = RunManifest.read(root)
            for entry in stored {
                let status = (try? runs.openGroup(entry.id)).map { RunManifest.verify($0, id: entry.id, manifest: manifest) }
                    ?? .unreadable("cannot open")
                if status.isDamaged { damaged.append((entry.id, status.description)) } else { good.append(entry) }
            }
            for d in damaged {
                let name = stored.first { $0.id == d.id }.flatMap { $0.row[names.firstIndex(of: "name")!].stringValue }
                report.warnings.append("\(label): run \(d.id)\(name.map { " (\($0))" } ?? "") is damaged, skipped (\(d.reason))")
                report.damagedRuns.append(d.id)
            }
            report.damaged += damaged.count
            for entry in good {
                try addRun(entry, from: runs, label: label, names: names, compared: compared, into: outRuns)
            }
        }

        /// One intact run: an id already kept must have the same content (then it counts as a
        /// duplicate); a sweep index already taken is refused unless `allowMixed`; then the group
        /// is copied (with `salvage`, a group that cannot be copied is skipped and reported).
        mutating func addRun(_ entry: StoredRow, from runs: HDF5Group, label: String, names: [String], compared: [Int],
                             into outRuns: HDF5Group) throws {
            let config = try runs.openGroup(entry.id).attributes.string("config_json") ?? ""
            if let previous = kept[entry.id] {
                if previous.config != config {
                    throw Conflict(description: "run \(entry.id) has different configs in \(previous.source) and \(label); refusing to merge")
                }
                for i in compared where !same(previous.row[i], entry.row[i]) {
                    throw Conflict(description: "run \(entry.id) (\(entry.row[names.firstIndex(of: "name")!].stringValue ?? "")) differs between \(previous.source) and \(label): \(names[i]) = \(previous.row[i]) vs \(entry.row[i]); refusing to merge")
                }
                report.duplicates += 1
                return
            }
            let index = entry.row[names.firstIndex(of: "sweep_index")!].intValue ?? -1
            if let other = byIndex[index] {
                guard allowMixed else {
                    throw Conflict(description: "runs \(other.id) (\(other.source)) and \(entry.id) (\(label)) both have sweep_index \(index): the inputs come from different sweeps; refusing to merge (use --allow-mixed to keep both)")
                }
                if clashes == 0 { firstClash = "\(other.id) and \(entry.id) at \(index)" }
                clashes += 1
            } else {
                byIndex[index] = (entry.id, label)
            }
            do {
                try runs.copy(entry.id, to: outRuns)
            } catch where salvage {
                report.warnings.append("\(label): run group \(entry.id) cannot be copied, skipped (\(error))")
                report.damaged += 1
                report.damagedRuns.append(entry.id)
                if outRuns.exists(entry.id) { try? outRuns.delete(entry.id) }
                return
            }
            kept[entry.id] = (label, config, entry.row)
            rows.append(entry.row)
        }

        /// After the last input: the clash warning, `/summary` of the kept rows and the merge's root
        /// attributes (shard, merged_from, mixed).
        mutating func finish(_ root: HDF5Group) throws {
            if clashes > 0 {
                report.warnings.append("\(clashes) run(s) share a sweep_index with another run (e.g. \(firstClash)); all kept (--allow-mixed)")
            }
            try SweepWriter.writeSummary(rows, layout: layout!, into: root)
            try root.attributes.set("shard", "")
            try root.attributes.set("merged_from", inputs.map { URL(fileURLWithPath: $0).lastPathComponent })
            // 1 when --allow-mixed kept runs of several experiments (the header is the first input's).
            try root.attributes.set("mixed", Int64(mixed.isEmpty && report.warnings.isEmpty ? 0 : 1))
        }
    }

    /// Equal values, with NaN equal to NaN (a diverged run's metrics).
    static func same(_ a: HDF5Value, _ b: HDF5Value) -> Bool {
        if case .double(let x) = a, case .double(let y) = b, x.isNaN && y.isNaN { return true }
        return a == b
    }

    private static func copyHeader(from source: HDF5Group, to target: HDF5Group) throws {
        let a = source.attributes, t = target.attributes
        for name in try a.names() {
            if let s = try? a.string(name) { try t.set(name, s) }
            else if let i = try? a.scalar(name, as: Int64.self) { try t.set(name, i) }
            else if let d = try? a.scalar(name, as: Double.self) { try t.set(name, d) }
        }
        try t.set("created_utc", UTCTimestamp.now())
        if source.exists("metric_definitions") { try source.copy("metric_definitions", to: target) }
    }
}
