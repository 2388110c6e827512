import Foundation
import ContinualHDF5

/// The single writer of a sweep's results file, crash-consistent: whatever the moment a kill
/// (SIGKILL, power loss) lands, `NAME.h5` is the previous good state or that plus whole new runs,
/// and every finished run survives (docs/results-format.md#crash-consistency).
///
/// How: the results file is never modified in place. Each finished run is first written as its
/// own small HDF5 file `NAME.h5.journal/<run_id>.h5` (temporary name, fsync, rename: it exists
/// whole or not at all). Journal entries are then *folded* into the results file by copying the
/// file, adding the runs to the copy and renaming the copy over the original (again fsync +
/// rename), after which the folded entries are deleted. A fold happens when the pending journal
/// holds at least an eighth of the file's size (so the copies cost at most ~9× the final file
/// size over a whole sweep, not a copy per run) and always at `finish()`. `--resume` and
/// `continual repair` fold whatever a killed process left in the journal. Readers (h5py,
/// `inspect`) never see a partial write and are never blocked: a rename does not disturb a file
/// someone holds open.
public final class SweepWriter: @unchecked Sendable {
    public let path: String
    public let layout: SummaryLayout
    /// Ids of the runs already in the file (complete) when it was opened, plus those written since.
    public private(set) var completedIds: Set<String> = []
    /// Runs written by this writer.
    public private(set) var written = 0
    /// Run groups found damaged when resuming (skipped, removed and rerun), with the reason.
    public private(set) var damaged: [(id: String, reason: String)] = []
    /// Runs recovered from the journal of an interrupted process when the file was opened.
    public private(set) var recovered = 0
    private let lock = NSLock()
    private var closed = false
    /// Bytes of journal entries written since the last fold.
    private var pendingBytes = 0

    /// The journal directory of results file `path`.
    public static func journalPath(for path: String) -> String { path + ".journal" }
    public var journal: String { Self.journalPath(for: path) }

    /// The address-space limit (bytes) in force while `--resume` reads the old file and its
    /// journal (`rebuild`), given their size; nil (the library's default): none. The CLI sets it
    /// (4 GiB + 8 × the size): libhdf5 allocates what a damaged variable-length length says, and a
    /// byte-flip campaign saw a 210 kB file drive a command to gigabytes.
    nonisolated(unsafe) public static var resumeAddressSpace: (@Sendable (_ fileBytes: Int) -> Int)? = nil

    /// Opens `path` for a sweep. `resume`: keep the complete runs already there (an existing file
    /// must be a sweep file with the same columns), including runs an interrupted process left in
    /// the journal; otherwise a new file replaces any old one (and any old journal).
    public init(path: String, experiment: ExperimentFile, layout: SummaryLayout, resume: Bool,
                shard: String = "") throws {
        self.path = path
        self.layout = layout
        try FileManager.default.createDirectory(at: URL(fileURLWithPath: path).deletingLastPathComponent(),
                                                withIntermediateDirectories: true)
        Self.removeStaleTemporaries(path)
        let fm = FileManager.default
        if resume && (fm.fileExists(atPath: path) || !Self.journalEntries(path).isEmpty) {
            if !fm.fileExists(atPath: path) {
                try Self.createEmpty(path, experiment: experiment, layout: layout, shard: shard)
            }
            let pending = Self.journalEntries(path)
            let bytes = Self.size(path) + pending.reduce(0) { $0 + Self.size($1) }
            let resumed = try AddressSpaceLimit.during(Self.resumeAddressSpace?(bytes)) {
                try HDF5Lock.withLock {
                    try Self.rebuild(path, pending: pending, experiment: experiment, layout: layout, shard: shard)
                }
            }
            // The results file now holds the journal's runs: the entries can go.
            for entry in resumed.absorbed { unlink(entry) }
            Self.removeJournalIfEmpty(path)
            damaged = resumed.damage
            completedIds = Set(resumed.complete)
            recovered = resumed.recoveredIds.filter { completedIds.contains($0) }.count
        } else {
            // A journal left beside a file that is being replaced belongs to the old file.
            try? fm.removeItem(atPath: Self.journalPath(for: path))
            try Self.createEmpty(path, experiment: experiment, layout: layout, shard: shard)
        }
    }

    /// A new results file with its header, no runs and an empty `/summary` (temporary + rename).
    static func createEmpty(_ path: String, experiment: ExperimentFile, layout: SummaryLayout, shard: String) throws {
        try DurableFile.write(path) { temporary in
            try HDF5Lock.withLock {
                let file = try HDF5File.create(path: temporary)
                try Self.writeHeader(file.root, experiment: experiment, layout: layout, shard: shard)
                try file.root.createGroup("runs")
                try Self.writeSummary([], layout: layout, into: file.root)
                try file.close()
            }
        }
    }

    /// Replaces `path` by a modified copy: copies it to a temporary file, lets `body` change the
    /// copy, syncs it to disk and renames it over `path`. On any error (a full disk included) the
    /// temporary file is removed and `path` is untouched. Call inside `HDF5Lock`.
    /// `body` may close the copy and open it again (`absorb` does, to bound libhdf5's memory).
    static func replace(_ path: String, extraBytes: Int, _ body: (inout HDF5File) throws -> Void) throws {
        try DurableFile.write(path) { temporary in
            try DiskSpace.require(size(path) + extraBytes + (1 << 20), toWrite: temporary)
            try FileCopy.copy(from: path, to: temporary)
            var file = try HDF5File.open(path: temporary, mode: .readWrite)
            do {
                try body(&file)
                try file.flush()
                try file.close()
            } catch {
                try? file.close()
                throw error
            }
        }
    }

    /// Journal entries copied into a results file before it is closed and opened again (`absorb`).
    ///
    /// libhdf5 1.10.8 keeps about 0.5 MB per object copied (`H5Ocopy` of one run group of
    /// `Experiments/replay.json`) until the destination file is closed — flushing does not free it.
    /// A fold absorbs up to an eighth of the file's runs at once, so without reopening, a sweep's
    /// memory grew with its number of runs (measured with heaptrack: 40 groups copied in one
    /// session peak at 22.6 MB, with a reopen after each copy at 2.9 MB).
    static let absorbBatch = 4

    /// Closes `file` (freeing what libhdf5 keeps per copied object, see `absorbBatch`), opens it
    /// again and returns its `/runs`.
    static func reopen(_ file: inout HDF5File) throws -> HDF5Group {
        try file.flush()
        try file.close()
        file = try HDF5File.open(path: file.path, mode: .readWrite, trusted: true)
        return try file.root.requireGroup("runs")
    }

    /// Copies the runs of journal `entries` into `/runs` of `file` (runs already there and complete
    /// are kept as they are: a fold cut short after its rename), closing and reopening `file` every
    /// `absorbBatch` entries. `appendRows`: append their summary rows to `/summary`. An entry that
    /// cannot be read is reported in `damaged` (its run reruns).
    static func absorb(_ entries: [String], into file: inout HDF5File, appendRows: Bool) throws
        -> (absorbed: [String], added: [String], damaged: [(id: String, reason: String)])
    {
        var runs = try file.root.requireGroup("runs")
        var rows: [[HDF5Value]] = [], absorbed: [String] = [], added: [String] = []
        var damaged: [(id: String, reason: String)] = []
        for (k, entry) in entries.enumerated() {
            if k > 0 && k % absorbBatch == 0 { runs = try reopen(&file) }
            let id = ((entry as NSString).lastPathComponent as NSString).deletingPathExtension
            do {
                let journalFile = try HDF5File.open(path: entry, mode: .readOnly, trusted: true)
                defer { try? journalFile.close() }
                let source = try journalFile.root.openGroup("runs")
                for name in try source.childNames() {
                    if runs.exists(name) {
                        if (try? runs.openGroup(name).attributes.scalar("complete", as: Int64.self)) == 1 { continue }
                        try runs.delete(name)
                    }
                    try source.copy(name, to: runs)
                    added.append(name)
                    if appendRows, let row = try runs.openGroup(name).openDataset("summary_row").readTable().rows.first {
                        rows.append(row)
                    }
                }
            } catch {
                damaged.append((id, "journal entry \(entry) is unreadable (\(error)); it runs again"))
                if runs.exists(id) { try? runs.delete(id) }
            }
            absorbed.append(entry)
        }
        if appendRows && !rows.isEmpty {
            try file.root.openDataset("summary").append(rows: rows)
        }
        try RunManifest.write(file.root)  // in the same replace as the runs it now lists
        return (absorbed, added, damaged)
    }

    /// Writes one finished run (its journal entry, then a fold when one is due); returns false
    /// (writing nothing) once the writer is closed.
    @discardableResult
    public func write(_ r: RunResult) throws -> Bool {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        return try HDF5Lock.withLock {
            lock.lock()
            defer { lock.unlock() }
            guard !closed else { return false }
            pendingBytes += try writeJournalEntry(r)
            completedIds.insert(r.runId)
            written += 1
            if pendingBytes * 8 >= Self.size(path) { try fold(rebuild: false) }
            return true
        }
    }

    /// The run as a standalone file `journal/<run_id>.h5` holding `/runs/<run_id>` exactly as the
    /// results file will; returns its size. (Internal so tests can leave an entry unfolded.)
    func writeJournalEntry(_ r: RunResult) throws -> Int {
        try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: true)
        let entry = journal + "/" + r.runId + ".h5"
        do {
            try DurableFile.write(entry) { temporary in
                let file = try HDF5File.create(path: temporary)
                do {
                    let runs = try file.root.createGroup("runs")
                    try ResultsWriter.writeRun(r, into: runs)
                    let g = try runs.openGroup(r.runId)
                    try g.attributes.set("variant", r.run.variant)
                    try g.attributes.set("sweep_index", Int64(r.run.sweepIndex))
                    let values = JSONValue.object(Dictionary(uniqueKeysWithValues: r.run.sweepValues.map { ($0.path, $0.value) }))
                    try g.attributes.set("sweep_values_json", values.canonicalText())
                    try g.write(HDF5Table(columns: layout.columns, rows: [layout.row(r)]), name: "summary_row", compress: false, chunkRows: 1)
                    try RunDigest.seal(g)
                    try g.attributes.set("complete", Int64(1))  // last: marks the group as whole
                    try file.close()
                } catch {
                    try? file.close()
                    throw error
                }
            }
            return Self.size(entry)
        } catch {
            throw WriteFailed(path: path, run: r.runId, cause: "\(error)")
        }
    }

    /// Folds the journal into the results file (copy, add, rename), then deletes the folded
    /// entries; the folded runs' rows are appended to `/summary`. `rebuild`: then rewrite
    /// `/summary` sorted by sweep index.
    ///
    /// The sort reads `/summary` itself, not every run group: since this writer opened the file
    /// (a resume rebuilt `/summary` from the groups then), every fold has appended exactly the rows
    /// of the runs it added, in the same transaction. Reading the groups instead cost the process
    /// about 0.2 MB of libhdf5 memory per run in the file at the moment of its highest memory
    /// (21 MB for `Experiments/replay.json`'s 110 runs, measured with heaptrack).
    func fold(rebuild: Bool) throws {
        let entries = Self.journalEntries(path)
        guard !entries.isEmpty || rebuild else { return }
        var absorbed: [String] = []
        do {
            try Self.replace(path, extraBytes: entries.reduce(0) { $0 + Self.size($1) }) { file in
                let result = try Self.absorb(entries, into: &file, appendRows: true)
                absorbed = result.absorbed
                if let d = result.damaged.first { throw HDF5Error(.library, d.reason) }
                if rebuild { try Self.sortSummary(file.root, layout: layout) }
            }
        } catch {
            throw WriteFailed(path: path, run: nil, cause: "\(error)")
        }
        for entry in absorbed { unlink(entry) }
        Self.removeJournalIfEmpty(path)
        pendingBytes = 0
    }

    /// Folds the journal, rewrites `/summary` sorted by sweep index and closes the writer (later
    /// writes are ignored). Safe to call from a signal handler's queue: it waits for a write in progress.
    public func finish() throws {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        try HDF5Lock.withLock {
            lock.lock()
            defer { lock.unlock() }
            guard !closed else { return }
            closed = true
            try fold(rebuild: true)
        }
    }

    /// A run (or a fold) could not be written; what was in the results file and its journal is kept.
    public struct WriteFailed: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var run: String?
        public var cause: String
        public var description: String {
            (run.map { "cannot write run \($0) to \(path)" } ?? "cannot update \(path)") + ": \(cause); "
                + "the file and the runs already written are kept — fix the cause and run again with --resume"
        }
    }
}
