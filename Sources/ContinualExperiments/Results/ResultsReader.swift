import Foundation
import ContinualHDF5

/// Reads back what `ResultsWriter` wrote, for `continual inspect` and for tests.
public enum ResultsReader {
    /// One run group as stored.
    public struct StoredRun: Sendable {
        public var runId: String
        public var name: String
        public var strategy: String
        public var status: String
        public var message: String
        public var seed: Int64
        public var configJSON: String
        public var accuracy: [[Double]]
        public var randomBaseline: [Double]
        public var experienceNames: [String]
        public var metrics: [String: Double]
        public var trainSeconds: Double
        /// Position in the experiment's expansion: `continual inspect` lists runs in this order.
        public var sweepIndex: Int64 = 0
        /// Federated runs: the federation group's aggregation rule and global ACC
        /// (`FederationOutcome.globalACC`; NaN unless share = all); nil for other runs.
        public var federation: (share: String, aggregation: String, globalACC: Double)? = nil
        /// Optimizer steps per experience and the configured budget ("4 epochs/exp",
        /// "375 steps/exp"; empty in files written before budgets were recorded).
        public var steps: [Int64] = []
        public var budget: String = ""
        /// A population run's users (nil for other runs).
        public var population: PopulationRows? = nil
    }

    public struct Contents: Sendable {
        public var attributes: [String: String]
        public var runs: [StoredRun]
        public var summary: HDF5Table?
        /// Run groups that could not be read (damaged by a crash or a bad disk), with the reason:
        /// skipped, so the rest of the file stays usable (`continual repair` copies the rest).
        public var damaged: [(id: String, reason: String)] = []
        /// `/tuning`: per tuned variant, in name order, what its selection did and chose
        /// (`TuningWriter` writes it, `TuningReader` reads it back).
        public var tuning: [TuningRecord] = []
    }

    public static func read(path: String) throws -> Contents {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        return try HDF5Lock.withLock {
            let file = try HDF5File.open(path: path, mode: .readOnly)
            defer { try? file.close() }
            let root = file.root
            var attributes: [String: String] = [:]
            for name in try root.attributes.names() {
                if let s = try? root.attributes.string(name) { attributes[name] = s }
                else if let i = try? root.attributes.scalar(name, as: Int64.self) { attributes[name] = String(i) }
            }
            var runs: [StoredRun] = []
            var damaged: [(id: String, reason: String)] = []
            if root.exists("runs") {
                let group = try root.openGroup("runs")
                for id in try group.childNames() {
                    do {
                        runs.append(try readRun(group.openGroup(id), id: id))
                    } catch {
                        damaged.append((id, "\(error)"))
                    }
                }
            }
            // Group names are run ids (hashes): list the runs in the experiment's order instead.
            runs.sort { ($0.sweepIndex, $0.runId) < ($1.sweepIndex, $1.runId) }
            var summary: HDF5Table? = nil
            if root.exists("summary") {
                do { summary = try root.openDataset("summary").readTable() } catch { damaged.append(("/summary", "\(error)")) }
            }
            var contents = Contents(attributes: attributes, runs: runs, summary: summary, damaged: damaged)
            if root.exists("tuning") {
                do { contents.tuning = try TuningReader.records(in: root.openGroup("tuning"), path: path) } catch { contents.damaged.append(("/tuning", "\(error)")) }
            }
            return contents
        }
    }
}

extension ResultsReader {
    /// One run group `g` (group name `id`): identity, accuracy matrix, baselines, metrics, costs,
    /// federation, steps, population and training budget.
    private static func readRun(_ g: HDF5Group, id: String) throws -> StoredRun {
        let a = g.attributes
        var run = StoredRun(
            runId: try a.string("run_id") ?? id, name: try a.string("name") ?? "",
            strategy: try a.string("strategy") ?? "", status: try a.string("status") ?? "",
            message: try a.string("message") ?? "", seed: try a.scalar("seed", as: Int64.self) ?? 0,
            configJSON: try a.string("config_json") ?? "", accuracy: [], randomBaseline: [],
            experienceNames: [], metrics: [:], trainSeconds: .nan)
        if g.exists("accuracy_matrix") {
            let d = try g.openDataset("accuracy_matrix")
            let shape = try d.shape
            let values: [Double] = try d.read()
            if shape.count == 2 {
                run.accuracy = (0..<shape[0]).map { Array(values[($0 * shape[1])..<(($0 + 1) * shape[1])]) }
            }
        }
        if g.exists("baseline_random") { run.randomBaseline = try g.openDataset("baseline_random").read() }
        if g.exists("experience_names") { run.experienceNames = try g.openDataset("experience_names").readStrings() }
        if g.exists("metrics") {
            let m = try g.openGroup("metrics").attributes
            for name in try m.names() { run.metrics[name] = try m.scalar(name, as: Double.self) }
        }
        if g.exists("costs") {
            run.trainSeconds = try g.openGroup("costs").attributes.scalar("train_seconds", as: Double.self) ?? .nan
        }
        run.sweepIndex = try a.scalar("sweep_index", as: Int64.self) ?? 0
        if g.exists("federation") { run.federation = try readFederation(g.openGroup("federation")) }
        if g.exists("steps") { run.steps = try g.openDataset("steps").read() }
        run.population = try PopulationRows.read(g)
        if let kind = try? a.string("training_budget"), let value = try? a.scalar("training_budget_value", as: Int64.self) {
            run.budget = kind == "epochs" ? "\(value) epoch\(value == 1 ? "" : "s")/exp"
                : kind == "flops_per_experience" ? String(format: "%.2g FLOPs/exp", Double(value)) : "\(value) steps/exp"
        }
        return run
    }

    /// A federation group's share, aggregation rule and global ACC (NaN unless share = all).
    private static func readFederation(_ f: HDF5Group) throws -> (share: String, aggregation: String, globalACC: Double) {
        var global = try f.attributes.scalar("global_acc", as: Double.self)
        if global == nil, f.exists("global_final_accuracy") {
            // Files written before the attribute: the same definition from the dataset.
            let d = try f.openDataset("global_final_accuracy")
            let shape = try d.shape, values: [Double] = try d.read()
            if shape.count == 2 {
                global = FederationOutcome.globalACC((0..<shape[0]).map { Array(values[($0 * shape[1])..<(($0 + 1) * shape[1])]) })
            }
        }
        let share = try f.attributes.string("share") ?? ""
        return (share, try f.attributes.string("aggregation") ?? "", share == "all" ? (global ?? .nan) : .nan)
    }
}

extension ResultsReader {
    /// One run group's integrity (`continual inspect --verify`).
    public struct Verification: Sendable {
        public var runId: String
        public var name: String
        public var status: RunDigest.Status
    }

    /// Checks every run group of `path` against its SHA-256 digest (`RunDigest`), plus the
    /// finished runs a killed writer left in the file's journal (named `journal:<id>`).
    ///
    /// A running writer folds journal entries into the file (a rename) and then deletes them, so
    /// an entry listed here can be gone when it is read: it is in the file now, not damaged. Such
    /// a pass starts again (up to `attempts` times, then the vanished entries are left out), so a
    /// reader during a sweep sees one committed state and never calls a healthy run damaged.
    public static func verify(path: String, attempts: Int = 5) throws -> [Verification] {
        var attempt = 1
        while true {
            let (found, vanished) = try verifyOnce(path: path)
            if vanished == 0 || attempt >= attempts { return found }
            attempt += 1
        }
    }

    /// One pass of `verify`: the verifications, and how many journal entries vanished during it
    /// (left out of the verifications).
    static func verifyOnce(path: String) throws -> ([Verification], vanished: Int) {
        try HDF5Lock.withLock {
            var out: [Verification] = []
            func scan(_ file: String, prefix: String) throws {
                let f = try HDF5File.open(path: file, mode: .readOnly)
                defer { try? f.close() }
                guard f.root.exists("runs") else {
                    throw HDF5Error(.notFound, "\(file) is not a results file (it has no /runs group)")
                }
                let runs = try f.root.openGroup("runs")
                let manifest = RunManifest.read(f.root), ids = try runs.childNames()
                for id in ids {
                    do {
                        let g = try runs.openGroup(id)
                        out.append(Verification(runId: prefix + id, name: (try? g.attributes.string("name")) ?? "",
                                                status: RunManifest.verify(g, id: id, manifest: manifest)))
                    } catch {
                        out.append(Verification(runId: prefix + id, name: "", status: .unreadable("\(error)")))
                    }
                }
                for id in RunManifest.missing(manifest, present: ids) {
                    out.append(Verification(runId: prefix + id, name: "",
                                            status: .unlisted("listed in the file's run manifest, but its group is gone")))
                }
            }
            // The entries are listed before the file is read: one folded in between is then in
            // the file (and skipped below), one folded after it vanishes (and the pass restarts).
            let entries = SweepWriter.journalEntries(path)
            try scan(path, prefix: "")
            let inFile = Set(out.map(\.runId))
            var vanished = 0
            for entry in entries where !inFile.contains(((entry as NSString).lastPathComponent as NSString).deletingPathExtension) {
                let before = out.count
                do { try scan(entry, prefix: "journal:") } catch {
                    guard FileManager.default.fileExists(atPath: entry) else {
                        out.removeSubrange(before...)   // folded into the file and deleted while read
                        vanished += 1
                        continue
                    }
                    out.append(Verification(runId: "journal:" + (entry as NSString).lastPathComponent, name: "",
                                            status: .unreadable("\(error)")))
                }
            }
            return (out, vanished)
        }
    }
}
