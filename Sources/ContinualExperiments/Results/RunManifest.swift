import ContinualCore
import ContinualHDF5
import Foundation

/// The file's list of its runs and their digests: the root attribute `run_manifest`, canonical
/// JSON `{run_id: sha256 hex}` ("" for a run stored without a digest), rewritten with `/summary`
/// whenever a writer commits the file (`SweepWriter.writeSummary`: a sweep's fold, `continual
/// run`, `merge`, `repair`), so it changes together with the runs it lists.
///
/// Without it, deleting a run group's `sha256` attribute after editing the run made the run
/// "without a digest" — unknown, not damaged — and `merge`, `repair` and `export` carried the
/// edit on. With it, a run whose digest is missing, differs from the manifest's, or that the
/// manifest does not list, is damage; so is a listed run that is gone. Files written before
/// manifests (no attribute) are checked run by run as before. Like the digests, the manifest is
/// not a signature: whoever rewrites runs, digests and manifest together is not detected.
public enum RunManifest {
    public static let attribute = "run_manifest"

    /// Sets `root`'s manifest from the digests stored on the groups of `/runs`.
    static func write(_ root: HDF5Group) throws {
        var entries: [String: JSONValue] = [:]
        if root.exists("runs") {
            let runs = try root.openGroup("runs")
            for id in try runs.childNames() {
                let digest = (try? runs.openGroup(id)).flatMap { try? $0.attributes.string(RunDigest.attribute) } ?? ""
                entries[id] = .string(digest)
            }
        }
        try root.attributes.set(attribute, JSONValue.object(entries).canonicalText())
    }

    /// `root`'s manifest, nil when the file has none (written before manifests). An attribute
    /// that is not a JSON object of strings is reported as an empty manifest that lists nothing,
    /// so every run of the file counts as damaged rather than unchecked.
    public static func read(_ root: HDF5Group) -> [String: String]? {
        guard let text = (try? root.attributes.string(attribute)) ?? nil else { return nil }
        return (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }

    /// The status of run group `group` (id `id`): its own digest check, then, when the file has a
    /// manifest, the manifest's word on it.
    public static func verify(_ group: HDF5Group, id: String, manifest: [String: String]?) -> RunDigest.Status {
        let own = RunDigest.verify(group)
        guard let manifest, !own.isDamaged else { return own }
        guard let listed = manifest[id] else {
            return .unlisted("not in the file's run manifest (added to the file after it was written)")
        }
        let stored = (try? group.attributes.string(RunDigest.attribute)) ?? nil
        switch (listed.isEmpty, stored) {
        case (true, nil): return own
        case (false, nil): return .unlisted("its sha256 digest was removed (the run manifest holds \(listed.prefix(12))…)")
        case (_, let s?) where s != listed:
            return .unlisted("its digest \(s.prefix(12))… is not the run manifest's \(listed.isEmpty ? "(none)" : String(listed.prefix(12)) + "…")")
        default: return own
        }
    }

    /// Runs the manifest lists that `present` lacks (deleted groups), sorted.
    public static func missing(_ manifest: [String: String]?, present: [String]) -> [String] {
        guard let manifest else { return [] }
        return Set(manifest.keys).subtracting(present).sorted()
    }
}
