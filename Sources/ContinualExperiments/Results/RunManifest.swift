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
/// not a signature: whoever rewrites runs, digests and manifest together is not detected —
/// unless the file is sealed with a key (`ResultsKey`): then the root attribute
/// `run_manifest_hmac` holds HMAC-SHA256(key, manifest text) and `run_manifest_key_id` names
/// the key, and a reader holding the key calls every run of a file with a missing or wrong seal
/// damaged.
public enum RunManifest {
    public static let attribute = "run_manifest"
    public static let sealAttribute = "run_manifest_hmac"
    public static let keyIdAttribute = "run_manifest_key_id"

    /// A file's manifest as read: the listed digests, and why its seal fails under this
    /// process's key (nil: no key set, or the seal holds).
    public struct Listing: Sendable {
        public var digests: [String: String]
        public var sealProblem: String?
    }

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
        let text = JSONValue.object(entries).canonicalText()
        try root.attributes.set(attribute, text)
        if let seal = ResultsKey.seal(Array(text.utf8)) {
            try root.attributes.set(sealAttribute, seal.hmac)
            try root.attributes.set(keyIdAttribute, seal.keyId)
        } else {
            for stale in [sealAttribute, keyIdAttribute] where root.attributes.contains(stale) { try root.attributes.delete(stale) }
        }
    }

    /// `root`'s manifest, nil when the file has none (written before manifests). An attribute
    /// that is not a JSON object of strings is reported as an empty manifest that lists nothing,
    /// so every run of the file counts as damaged rather than unchecked. With a key set
    /// (`ResultsKey`), the seal is checked too.
    public static func read(_ root: HDF5Group) -> Listing? {
        guard let text = (try? root.attributes.string(attribute)) ?? nil else {
            return ResultsKey.key == nil ? nil : Listing(digests: [:], sealProblem: "the file has no run manifest to check against the key in \(ResultsKey.variable)")
        }
        let digests = (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
        return Listing(digests: digests, sealProblem: sealProblem(root, text: text))
    }

    /// Why `root`'s seal does not hold under this process's key; nil when no key is set or it holds.
    static func sealProblem(_ root: HDF5Group, text: String) -> String? {
        ResultsKey.sealProblem(Array(text.utf8), seal: (try? root.attributes.string(sealAttribute)) ?? nil,
                               keyId: (try? root.attributes.string(keyIdAttribute)) ?? nil,
                               subject: "the file", sealName: "the run manifest's seal")
    }

    /// The status of run group `group` (id `id`): its own digest check, then, when the file has a
    /// manifest, the manifest's word on it.
    public static func verify(_ group: HDF5Group, id: String, manifest listing: Listing?) -> RunDigest.Status {
        let own = RunDigest.verify(group)
        guard let listing, !own.isDamaged else { return own }
        if let problem = listing.sealProblem { return .unlisted(problem) }
        let manifest = listing.digests
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
    public static func missing(_ manifest: Listing?, present: [String]) -> [String] {
        guard let manifest else { return [] }
        return Set(manifest.digests.keys).subtracting(present).sorted()
    }
}
