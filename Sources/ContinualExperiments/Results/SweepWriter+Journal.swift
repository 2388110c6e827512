import Foundation
import ContinualHDF5

extension SweepWriter {
    /// Whole journal entries of results file `path` (`<run_id>.h5`; temporaries excluded), sorted.
    public static func journalEntries(_ path: String) -> [String] {
        let dir = journalPath(for: path)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return names.filter { $0.hasSuffix(".h5") }.sorted().map { dir + "/" + $0 }
    }

    static func removeJournalIfEmpty(_ path: String) {
        let dir = journalPath(for: path)
        if let names = try? FileManager.default.contentsOfDirectory(atPath: dir), names.isEmpty {
            rmdir(dir)
        }
    }

    /// Temporary files of a writer that was killed (`NAME.h5.tmp-PID`, journal `*.tmp-PID`). Only
    /// the holder of the writer lock calls this, so no live writer owns them.
    static func removeStaleTemporaries(_ path: String) {
        DurableFile.removeStaleTemporaries(of: path, lockHeld: true)
        let fm = FileManager.default
        let journal = journalPath(for: path)
        for name in (try? fm.contentsOfDirectory(atPath: journal)) ?? [] where name.contains(".tmp-") {
            try? fm.removeItem(atPath: journal + "/" + name)
        }
    }

    /// Bytes of the file at `path`, 0 when it cannot be read.
    public static func size(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : 0
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
        // Callers verified the group; the digest is recomputed over the new index.
        defer { try? RunDigest.seal(g) }
        try g.attributes.set("sweep_index", Int64(index))
        var table = try g.openDataset("summary_row").readTable()
        guard let si = table.columns.firstIndex(where: { $0.name == "sweep_index" }), !table.rows.isEmpty else { return }
        table.rows[0][si] = .int(Int64(index))
        try g.delete("summary_row")
        try g.write(table, name: "summary_row", compress: false, chunkRows: 1)
    }
}
