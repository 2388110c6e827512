import Foundation
import ContinualHDF5

/// The single writer of a sweep's results file: each finished run is written, flushed and the
/// file closed at once (open → write → flush → close), so h5py can read it between runs.
///
/// Crash safety: a run group gets its `complete` attribute last. Ctrl-C/SIGTERM take the writer's
/// lock, so they never interrupt a write; a hard kill during the few milliseconds of a write can
/// leave an incomplete group, which `--resume` deletes and reruns. `/summary` is an index rebuilt
/// from the complete run groups (each holds its own one-row `summary_row`), sorted by sweep index.
public final class SweepWriter: @unchecked Sendable {
    public let path: String
    public let layout: SummaryLayout
    /// Ids of the runs already in the file (complete) when it was opened, plus those written since.
    public private(set) var completedIds: Set<String> = []
    /// Runs written by this writer.
    public private(set) var written = 0
    /// Run groups found damaged when resuming (skipped, removed and rerun), with the reason.
    public private(set) var damaged: [(id: String, reason: String)] = []
    private let lock = NSLock()
    private var closed = false

    /// Opens `path` for a sweep. `resume`: keep the complete runs already there (an existing file
    /// must be a sweep file with the same columns); otherwise a new file replaces any old one.
    public init(path: String, experiment: ExperimentFile, layout: SummaryLayout, resume: Bool,
                shard: String = "") throws {
        self.path = path
        self.layout = layout
        if resume && FileManager.default.fileExists(atPath: path) {
            damaged = try Self.salvageDamagedGroups(path)
            let file = try Self.openForWriting(path)
            defer { try? file.close() }
            guard try file.root.attributes.string("kind") == "sweep" else {
                throw HDF5Error(.invalidArgument, "\(path) is not a sweep results file (written by `continual run`?); choose another output")
            }
            let runs = try file.root.requireGroup("runs")
            var incomplete: [String] = []
            var complete: [String] = []
            for id in try runs.childNames() {
                let g: HDF5Group
                let columns: [HDF5Table.Column]
                do {
                    g = try runs.openGroup(id)
                    guard (try? g.attributes.scalar("complete", as: Int64.self)) == 1, g.exists("summary_row") else {
                        incomplete.append(id)  // a write that was cut short: rerun it
                        continue
                    }
                    columns = try g.openDataset("summary_row").readTable().columns
                } catch {
                    // Damaged after all (salvageDamagedGroups found it readable): run it again.
                    damaged.append((id, "\(error)"))
                    incomplete.append(id)
                    continue
                }
                guard columns == layout.columns else {
                    throw HDF5Error(.typeMismatch, "\(path) holds runs of a different sweep (summary columns \(columns.map(\.name).filter { !layout.columns.map(\.name).contains($0) }) not in this sweep's, or of other types; expected swept columns \(layout.sweptColumnNames)); choose another output")
                }
                complete.append(id)
            }
            // Run ids hash the resolved config: a complete run the experiment does not expand to
            // comes from a changed config, and keeping it would mix two experiments in /summary.
            let expected = Dictionary(experiment.runs.map { ($0.runId, $0) }, uniquingKeysWith: { a, _ in a })
            let foreign = complete.filter { expected[$0] == nil }.sorted()
            guard foreign.isEmpty else {
                throw ForeignRuns(path: path, foreign: foreign, total: complete.count)
            }
            for id in incomplete {
                try runs.delete(id)
            }
            for id in complete {
                try Self.renumber(try runs.openGroup(id), to: expected[id]!.sweepIndex)
                completedIds.insert(id)
            }
            // The header describes the experiment being completed now (e.g. more seeds added).
            let created = try? file.root.attributes.string("created_utc")
            try Self.writeHeader(file.root, experiment: experiment, layout: layout, shard: shard)
            if let created { try file.root.attributes.set("created_utc", created) }
            try Self.rebuildSummary(file.root, layout: layout)
            try file.flush()
        } else {
            try FileManager.default.createDirectory(at: URL(fileURLWithPath: path).deletingLastPathComponent(),
                                                    withIntermediateDirectories: true)
            let temporary = path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
            do {
                let file = try HDF5File.create(path: temporary)
                try Self.writeHeader(file.root, experiment: experiment, layout: layout, shard: shard)
                try file.root.createGroup("runs")
                try Self.writeSummary([], layout: layout, into: file.root)
                try file.close()
                guard rename(temporary, path) == 0 else {
                    throw HDF5Error(.library, "cannot move \(temporary) to \(path): \(String(cString: strerror(errno)))")
                }
            } catch {
                try? FileManager.default.removeItem(atPath: temporary)
                throw error
            }
        }
    }

    /// Before a resume: run groups that cannot be opened (a crash under load, a bad disk) are
    /// unlinked so they run again. HDF5 cannot unlink an object whose header is unreadable; then
    /// the readable runs are copied into a fresh file (`ResultsMerger`, as `continual repair`),
    /// the damaged file is kept beside it as `NAME.h5.damaged-N` and the fresh one takes its place.
    static func salvageDamagedGroups(_ path: String) throws -> [(id: String, reason: String)] {
        var damaged: [(id: String, reason: String)] = []
        var stuck = false
        try HDF5Lock.withLock {
            let file = try openForWriting(path)
            defer { try? file.close() }
            guard file.root.exists("runs") else { return }
            let runs = try file.root.openGroup("runs")
            for id in try runs.childNames() {
                do { _ = try runs.openGroup(id) } catch {
                    damaged.append((id, "\(error)"))
                    if (try? runs.delete(id)) == nil { stuck = true }
                }
            }
            try file.close()
        }
        guard stuck else { return damaged }
        let repaired = path + ".repair-\(ProcessInfo.processInfo.processIdentifier)"
        _ = try ResultsMerger.merge(inputs: [path], output: repaired, salvage: true)
        var k = 1
        while FileManager.default.fileExists(atPath: "\(path).damaged-\(k)") { k += 1 }
        guard rename(path, "\(path).damaged-\(k)") == 0, rename(repaired, path) == 0 else {
            try? FileManager.default.removeItem(atPath: repaired)
            throw HDF5Error(.library, "cannot replace damaged \(path) by its repaired copy: \(String(cString: strerror(errno)))")
        }
        return damaged.map { ($0.id, $0.reason + "; the damaged file is kept as \(path).damaged-\(k)") }
    }

    /// `--resume` found complete runs whose ids the experiment does not expand to (its config changed).
    public struct ForeignRuns: Error, Sendable, CustomStringConvertible {
        public var path: String
        /// Ids of the foreign complete runs, sorted.
        public var foreign: [String]
        /// Complete runs in the file.
        public var total: Int
        public var description: String {
            "\(path) holds \(foreign.count) of \(total) complete run(s) that this experiment does not produce (e.g. run id \(foreign[0])): "
                + "its config changed since they were written; use --overwrite to start again or -o to write another file"
        }
    }

    /// Sets a stored run's sweep index (attribute and `summary_row`) to its position in the
    /// current expansion, which moves when the sweep grows (e.g. seeds added before --resume).
    static func renumber(_ g: HDF5Group, to index: Int) throws {
        guard (try? g.attributes.scalar("sweep_index", as: Int64.self)) != Int64(index) else { return }
        try g.attributes.set("sweep_index", Int64(index))
        var table = try g.openDataset("summary_row").readTable()
        guard let si = table.columns.firstIndex(where: { $0.name == "sweep_index" }), !table.rows.isEmpty else { return }
        table.rows[0][si] = .int(Int64(index))
        try g.delete("summary_row")
        try g.write(table, name: "summary_row", compress: false, chunkRows: 1)
    }

    /// Writes one finished run and flushes; returns false (writing nothing) once the writer is closed.
    @discardableResult
    public func write(_ r: RunResult) throws -> Bool {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        return try HDF5Lock.withLock {
            lock.lock()
            defer { lock.unlock() }
            guard !closed else { return false }
            let file = try Self.openForWriting(path)
            defer { try? file.close() }
            let runs = try file.root.requireGroup("runs")
            try ResultsWriter.writeRun(r, into: runs)
            let g = try runs.openGroup(r.runId)
            try g.attributes.set("variant", r.run.variant)
            try g.attributes.set("sweep_index", Int64(r.run.sweepIndex))
            let values = JSONValue.object(Dictionary(uniqueKeysWithValues: r.run.sweepValues.map { ($0.path, $0.value) }))
            try g.attributes.set("sweep_values_json", values.canonicalText())
            let row = layout.row(r)
            try g.write(HDF5Table(columns: layout.columns, rows: [row]), name: "summary_row", compress: false, chunkRows: 1)
            try g.attributes.set("complete", Int64(1))  // last: marks the group as whole
            if file.root.exists("summary") {
                try file.root.openDataset("summary").append(rows: [row])
            } else {
                try Self.writeSummary([row], layout: layout, into: file.root)
            }
            try file.flush()
            try file.close()
            completedIds.insert(r.runId)
            written += 1
            return true
        }
    }

    /// Rewrites `/summary` sorted by sweep index and closes the writer (later writes are ignored).
    /// Safe to call from a signal handler's queue: it waits for a write in progress.
    public func finish() throws {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        try HDF5Lock.withLock {
            lock.lock()
            defer { lock.unlock() }
            guard !closed else { return }
            closed = true
            let file = try Self.openForWriting(path)
            defer { try? file.close() }
            try Self.rebuildSummary(file.root, layout: layout)
            try file.flush()
            try file.close()
        }
    }

    // MARK: - Shared with merge

    /// Root attributes of a sweep file.
    static func writeHeader(_ root: HDF5Group, experiment: ExperimentFile, layout: SummaryLayout, shard: String) throws {
        try ResultsWriter.writeHeader(root, experiment: experiment)
        let a = root.attributes
        try a.set("kind", "sweep")
        try a.set("sweep_json", experiment.sweepJSON?.canonicalText() ?? "")
        try a.set("sweep_run_count", Int64(experiment.runs.count))
        try a.set("shard", shard)
        try writeLayout(layout, to: a)
    }

    static func writeLayout(_ layout: SummaryLayout, to a: HDF5Attributes) throws {
        try a.set("swept_paths_json", (try? JSONValue.encodeCanonicalText(layout.sweptPaths)) ?? "[]")
        try a.set("swept_columns_json", (try? JSONValue.encodeCanonicalText(layout.sweptColumnNames)) ?? "[]")
    }

    /// The layout recorded in a sweep file's root attributes and its runs' `summary_row` tables.
    static func readLayout(_ root: HDF5Group) throws -> SummaryLayout? {
        guard let pathsText = try root.attributes.string("swept_paths_json"),
              let columnsText = try root.attributes.string("swept_columns_json"),
              let paths = try? JSONDecoder().decode([String].self, from: Data(pathsText.utf8)),
              let names = try? JSONDecoder().decode([String].self, from: Data(columnsText.utf8)),
              paths.count == names.count, root.exists("summary") else { return nil }
        let columns = try root.openDataset("summary").readTable().columns
        var swept: [SummaryLayout.SweptColumn] = []
        for (p, n) in zip(paths, names) where p != "seed" {
            guard let c = columns.first(where: { $0.name == n }) else { return nil }
            swept.append(.init(path: p, name: n, kind: c.kind))
        }
        return SummaryLayout(swept: swept, sweptPaths: paths)
    }

    /// The complete runs' summary rows, keyed by run id. Groups that cannot be read (damaged) are
    /// skipped and listed in `damaged` with the reason, so one bad group does not cost the rest.
    static func storedRows(_ root: HDF5Group, damaged: inout [(id: String, reason: String)])
        throws -> [(id: String, row: [HDF5Value], columns: [HDF5Table.Column])]
    {
        guard root.exists("runs") else { return [] }
        let runs = try root.openGroup("runs")
        var out: [(String, [HDF5Value], [HDF5Table.Column])] = []
        for id in try runs.childNames() {
            do {
                let g = try runs.openGroup(id)
                guard (try? g.attributes.scalar("complete", as: Int64.self)) == 1, g.exists("summary_row") else { continue }
                let t = try g.openDataset("summary_row").readTable()
                guard let row = t.rows.first else { continue }
                out.append((id, row, t.columns))
            } catch {
                damaged.append((id, "\(error)"))
            }
        }
        return out
    }

    static func storedRows(_ root: HDF5Group) throws -> [(id: String, row: [HDF5Value], columns: [HDF5Table.Column])] {
        var damaged: [(id: String, reason: String)] = []
        return try storedRows(root, damaged: &damaged)
    }

    /// Rebuilds `/summary` from the complete run groups.
    static func rebuildSummary(_ root: HDF5Group, layout: SummaryLayout) throws {
        let rows = try storedRows(root).filter { $0.columns == layout.columns }.map(\.row)
        try writeSummary(rows, layout: layout, into: root)
    }

    /// Writes `/summary` (replacing it) with `rows` sorted by (sweep_index, run_id).
    static func writeSummary(_ rows: [[HDF5Value]], layout: SummaryLayout, into root: HDF5Group) throws {
        let names = layout.columns.map(\.name)
        let si = names.firstIndex(of: "sweep_index")!, ri = names.firstIndex(of: "run_id")!
        let sorted = rows.sorted { a, b in
            let ia = a[si].intValue ?? 0, ib = b[si].intValue ?? 0
            return ia != ib ? ia < ib : (a[ri].stringValue ?? "") < (b[ri].stringValue ?? "")
        }
        if root.exists("summary") { try root.delete("summary") }
        let d = try root.write(HDF5Table(columns: layout.columns, rows: sorted), name: "summary")
        try d.attributes.set("meaning", "one row per run, sorted by sweep_index; metrics as in /metric_definitions; fractions 0..1")
        try writeLayout(layout, to: d.attributes)
        try d.attributes.set("timing_columns_json", (try? JSONValue.encodeCanonicalText(ResultsSchema.timingColumns.sorted())) ?? "[]")
    }

    /// Opens an existing file for writing, retrying for up to a minute while another process
    /// (h5py, h5dump) holds it open: HDF5 ≥ 1.10 locks files.
    static func openForWriting(_ path: String) throws -> HDF5File {
        try AppendReserve.reserve(path)
        var lastError: (any Error)?
        for attempt in 0..<300 {
            do { return try HDF5File.open(path: path, mode: .readWrite) } catch {
                lastError = error
                if !FileManager.default.fileExists(atPath: path) { break }
                if attempt == 0 { FileHandle.standardError.write(Data("note: \(path) is busy (open in another program?); retrying\n".utf8)) }
                usleep(200_000)
            }
        }
        throw lastError ?? HDF5Error(.library, "cannot open \(path)")
    }
}
