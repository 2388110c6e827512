import Foundation
import ContinualHDF5

/// `--resume`: the results file as it was, completed for the experiment being run now.
extension SweepWriter {
    /// What resuming found: the journal entries folded in, the runs they added, the groups found
    /// damaged (rerun) and the complete runs kept.
    struct Resumed {
        var absorbed: [String] = []
        var recoveredIds: [String] = []
        var damage: [(id: String, reason: String)] = []
        var complete: [String] = []
    }

    /// Resumes results file `path` by writing a fresh file in its place (temporary + rename): the
    /// header for `experiment` (keeping `created_utc`), the old file's complete runs that pass
    /// their digests and *its* run manifest, the `pending` journal entries' runs, every run
    /// renumbered to the current expansion, and `/summary` rebuilt from the groups. The old file
    /// is only read. Refuses a file that is not a sweep's, or complete runs of another sweep or
    /// of a changed config. Call inside `HDF5Lock`.
    ///
    /// Why not edit a copy, as a fold does: a resume is where a file this process did not write
    /// comes in, and libhdf5 1.10.8 crashes when it rewrites an attribute of a damaged object
    /// header (`H5Adelete` → `H5SM_delete`: 5 of 10,400 commands of the byte-flip campaign, all
    /// `--resume`). A fresh file has no damaged structure to edit, and the old groups are copied
    /// only once the read check passed them. Checking against the old manifest before writing a
    /// new one also keeps a run whose digest was removed from being accepted on resume.
    static func rebuild(_ path: String, pending: [String], experiment: ExperimentFile, layout: SummaryLayout,
                        shard: String) throws -> Resumed {
        let expected = Dictionary(experiment.runs.map { ($0.runId, $0.sweepIndex) }, uniquingKeysWith: { a, _ in a })
        var resumed = Resumed()
        try DurableFile.write(path) { temporary in
            try DiskSpace.require(size(path) + pending.reduce(0) { $0 + size($1) } + (1 << 20), toWrite: temporary)
            let old = try HDF5File.open(path: path, mode: .readOnly)
            defer { try? old.close() }
            guard try old.root.attributes.string("kind") == "sweep" else {
                throw HDF5Error(.invalidArgument, "\(path) is not a sweep results file (written by `continual run`?); choose another output")
            }
            var kept: [String] = []
            var oldRuns: HDF5Group?
            if old.root.exists("runs") {
                let runs = try old.root.openGroup("runs")
                kept = try classifyRuns(runs, ids: try runs.childNames(), manifest: RunManifest.read(old.root), layout: layout,
                                        path: path, damage: &resumed.damage)
                try refuseForeign(kept, expected: expected, path: path)
                oldRuns = runs
            }
            let oldDamage = resumed.damage.count
            var file = try HDF5File.create(path: temporary)
            do {
                try writeHeader(file.root, experiment: experiment, layout: layout, shard: shard)
                if let created = try? old.root.attributes.string("created_utc") {
                    try file.root.attributes.set("created_utc", created)
                }
                try file.root.createGroup("runs")
                var rows = try oldRuns.map { try copyRuns(kept, from: $0, into: &file, expected: expected) } ?? []
                try old.close()
                let result = try absorb(pending, into: &file, appendRows: false)
                resumed.absorbed = result.absorbed
                resumed.recoveredIds = result.added
                resumed.damage += result.damaged
                let runs = try file.root.requireGroup("runs")
                let added = try classifyRuns(runs, ids: result.added, manifest: nil, layout: layout, path: path,
                                             damage: &resumed.damage)
                for id in Set(result.added).subtracting(added) { try runs.delete(id) }
                resumed.complete = kept + added
                try refuseForeign(resumed.complete, expected: expected, path: path)
                for id in added { rows += try renumbered(try runs.openGroup(id), to: expected[id]!) }
                try writeSummary(rows, layout: layout, into: file.root)
                try file.flush()
                try file.close()
            } catch {
                try? file.close()
                throw error
            }
            if oldDamage > 0 {
                let kept = try keepDamaged(path)
                for k in 0..<oldDamage { resumed.damage[k].reason += "; the damaged file is kept as \(kept)" }
            }
        }
        return resumed
    }

    /// Copies run groups `ids` of `source` into `/runs` of `file`, each renumbered to its index in
    /// `expected`; returns their summary rows. Each group is finished (copied, renumbered, its row
    /// read) before the next is copied, so a libhdf5 crash is reported in the source group it came
    /// from (`HDF5Quarantine.openObserver`, `Supervisor`). `file` is closed and reopened every
    /// `absorbBatch` groups (libhdf5 keeps memory per copied object until then).
    private static func copyRuns(_ ids: [String], from source: HDF5Group, into file: inout HDF5File,
                                 expected: [String: Int]) throws -> [[HDF5Value]] {
        var runs = try file.root.requireGroup("runs")
        var rows: [[HDF5Value]] = []
        for (k, id) in ids.enumerated() {
            if k > 0 && k % absorbBatch == 0 { runs = try reopen(&file) }
            try source.copy(id, to: runs)
            rows += try renumbered(try runs.openGroup(id), to: expected[id]!)
        }
        return rows
    }

    /// Renumbers run group `g` (`renumber`) and returns its summary row (none if it has none).
    private static func renumbered(_ g: HDF5Group, to index: Int) throws -> [[HDF5Value]] {
        try renumber(g, to: index)
        return Array(SummaryUpgrade.upgraded(try g.openDataset("summary_row").readTable()).rows.prefix(1))
    }

    /// Keeps the file at `path` beside the one replacing it as `NAME.h5.damaged-N` (a hard link:
    /// `NAME.h5` exists at every moment); returns that name.
    private static func keepDamaged(_ path: String) throws -> String {
        var k = 1
        while FileManager.default.fileExists(atPath: "\(path).damaged-\(k)") { k += 1 }
        guard link(path, "\(path).damaged-\(k)") == 0 else {
            throw HDF5Error(.library, "cannot keep damaged \(path) as \(path).damaged-\(k): \(String(cString: strerror(errno)))")
        }
        return "\(path).damaged-\(k)"
    }

    /// Run ids hash the resolved config: a complete run the experiment does not expand to comes
    /// from a changed config, and keeping it would mix two experiments in `/summary`.
    private static func refuseForeign(_ complete: [String], expected: [String: Int], path: String) throws {
        let foreign = complete.filter { expected[$0] == nil }.sorted()
        guard foreign.isEmpty else { throw ForeignRuns(path: path, foreign: foreign, total: complete.count) }
    }

    /// The complete runs among groups `ids` of `runs` (sealed, with a summary row, passing their
    /// digest and `manifest`), in order; the others are to rerun: cut short, or damaged (the
    /// reason appended to `damage`). A complete run whose summary columns are not this sweep's is
    /// refused.
    private static func classifyRuns(_ runs: HDF5Group, ids: [String], manifest: RunManifest.Listing?, layout: SummaryLayout,
                                     path: String, damage: inout [(id: String, reason: String)]) throws -> [String] {
        var complete: [String] = []
        for id in ids {
            let columns: [HDF5Table.Column]
            do {
                let g = try runs.openGroup(id)
                // A write that was cut short (older versions): rerun it.
                guard (try? g.attributes.scalar("complete", as: Int64.self)) == 1, g.exists("summary_row") else { continue }
                columns = SummaryUpgrade.upgraded(try g.openDataset("summary_row").readTable()).columns
                let status = RunManifest.verify(g, id: id, manifest: manifest)
                if status.isDamaged {
                    damage.append((id, status.description))
                    continue
                }
            } catch {
                // libhdf5 cannot open or read it, or it is quarantined: run it again.
                damage.append((id, "\(error)"))
                continue
            }
            guard columns == layout.columns else {
                throw HDF5Error(.typeMismatch, "\(path) holds runs of a different sweep (summary columns \(columns.map(\.name).filter { !layout.columns.map(\.name).contains($0) }) not in this sweep's, or of other types; expected swept columns \(layout.sweptColumnNames)); choose another output")
            }
            complete.append(id)
        }
        return complete
    }
}
