import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// A results file swept from `tinyExperiment(name:extra:)` into `work` (`NAME.json` → `NAME.h5`):
/// the starting point the integrity, crash-consistency, full-disk and hostile-input tests share.
/// Fails the calling test if the sweep does not exit 0.
func sweptResults(in work: TemporaryDirectory, name: String, extra: String = "") throws -> (json: String, path: String) {
    let json = work.write(name + ".json", tinyExperiment(name: name, extra: extra))
    let path = work.path(name + ".h5")
    let r = try runCLI(["sweep", json, "-o", path])
    try #require(r.status == 0, "sweep of \(name) failed: \(r.stderr)")
    return (json, path)
}

/// Damage done to one run group of a results file in place, as an editing tool, a script or a bad
/// disk leaves it. The one damage fixture of the tests: the kinds of issue 26 that `RunDigest`
/// must detect, and a garbled object header that libhdf5 cannot read at all.
enum RunDamage: String, CaseIterable {
    /// Every final parameter NaN; the dataset's attributes (layer sizes, meaning, units) are kept,
    /// as a tool that overwrites the values leaves them.
    case nanParameters
    /// accuracy_matrix replaced by a 1×2 matrix.
    case wrongShapeMatrix
    /// metrics/acc set to 0.99.
    case changedMetric
    /// loss_curve deleted.
    case droppedDataset
    /// The strategy attribute changed to "ewc".
    case changedAttribute
    /// The run's own summary row given another ACC.
    case changedSummaryRow
    /// metrics/acc edited, then the run's `sha256` attribute deleted, which once made the run
    /// "without a digest" instead of damaged (issue 41.5): the file's `RunManifest` still lists it.
    case strippedDigest
    /// metrics/acc edited and the run's digest recomputed: only the file's `RunManifest` disagrees.
    case resealedDigest

    /// Applies this damage to run group `id` of `path`.
    func apply(to path: String, run id: String) throws {
        let f = try HDF5File.open(path: path, mode: .readWrite)
        defer { try? f.close() }
        let g = try f.root.openGroup("runs/\(id)")
        switch self {
        case .nanParameters:
            let old = try g.openDataset("final_parameters")
            let p: [Float] = try old.read()
            let meaning = try old.attributes.string("meaning"), units = try old.attributes.string("units")
            let sizes = try old.attributes.array("layer_sizes", as: Int64.self)
            try g.delete("final_parameters")
            let new = try g.write([Float](repeating: .nan, count: p.count), shape: [p.count], name: "final_parameters")
            if let meaning { try new.attributes.set("meaning", meaning) }
            if let units { try new.attributes.set("units", units) }
            if let sizes { try new.attributes.set("layer_sizes", sizes) }
        case .wrongShapeMatrix:
            try g.delete("accuracy_matrix")
            _ = try g.write([0.5, 0.5], shape: [1, 2], name: "accuracy_matrix")
        case .changedMetric:
            try g.openGroup("metrics").attributes.set("acc", 0.99)
        case .droppedDataset:
            try g.delete("loss_curve")
        case .changedAttribute:
            try g.attributes.set("strategy", "ewc")
        case .changedSummaryRow:
            var t = try g.openDataset("summary_row").readTable()
            let i = t.columns.firstIndex { $0.name == "acc" }!
            t.rows[0][i] = .double(0.123)
            try g.delete("summary_row")
            try g.write(t, name: "summary_row", compress: false, chunkRows: 1)
        case .strippedDigest:
            try g.openGroup("metrics").attributes.set("acc", 0.99)
            try g.attributes.delete(RunDigest.attribute)
        case .resealedDigest:
            try g.openGroup("metrics").attributes.set("acc", 0.99)
            try RunDigest.seal(g)
        }
    }

    /// Overwrites the object header of the first run group (in name order) with garbage, as a
    /// SIGKILL under load or a bad disk can leave it; returns its id, or nil without h5py.
    static func garbleFirstGroupHeader(_ path: String) throws -> String? {
        let idFile = path + ".damaged"
        guard try h5py("""
            f = h5py.File('\(path)', 'r'); i = sorted(f['runs'].keys())[0]
            addr = h5py.h5o.get_info(f['runs/' + i].id).addr; f.close()
            open('\(idFile)', 'w').write(i)
            with open('\(path)', 'r+b') as raw: raw.seek(addr); raw.write(b'\\xff' * 64)
            """) else { return nil }
        return try String(contentsOfFile: idFile, encoding: .utf8)
    }
}
