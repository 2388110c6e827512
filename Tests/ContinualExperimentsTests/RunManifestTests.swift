import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 41.5: the file's run manifest makes a missing or replaced digest, a run the file never
/// listed and a listed run that is gone into damage; a file written before manifests keeps the
/// old run-by-run check. (The damage kinds themselves run through `RunDamage` in
/// `CrashConsistencyTests.damageIsDetected`.)
@Suite("Run manifest")
struct RunManifestTests {
    @Test("a sweep's file lists every run with its digest")
    func theManifestListsEveryRun() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let path = try sweptResults(in: work, name: "mf").path
        let file = try HDF5File.open(path: path, mode: .readOnly)
        defer { try? file.close() }
        let manifest = try #require(RunManifest.read(file.root))
        let runs = try file.root.openGroup("runs")
        #expect(Set(manifest.keys) == Set(try runs.childNames()) && manifest.count == 2)
        for (id, digest) in manifest {
            let stored = try runs.openGroup(id).attributes.string(RunDigest.attribute)
            #expect(digest.count == 64 && digest == stored)
        }
    }

    @Test("a deleted run group is named as damage; without a manifest a stripped digest is only 'without a digest'")
    func deletedGroupsAndOlderFiles() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let path = try sweptResults(in: work, name: "mg").path
        let victim = try ResultsReader.read(path: path).runs[0].runId
        do {
            let f = try HDF5File.open(path: path, mode: .readWrite)
            defer { try? f.close() }
            try f.root.openGroup("runs").delete(victim)
        }
        let gone = try ResultsReader.verify(path: path).filter { $0.runId == victim }
        #expect(gone.count == 1 && gone[0].status.isDamaged && gone[0].status.description.contains("group is gone"))

        // A file as the release before manifests wrote it: the digest-less run is unchecked, not damaged.
        let old = try sweptResults(in: work, name: "mh").path
        let run = try ResultsReader.read(path: old).runs[0].runId
        do {
            let f = try HDF5File.open(path: old, mode: .readWrite)
            defer { try? f.close() }
            try f.root.attributes.delete(RunManifest.attribute)
            try f.root.openGroup("runs/\(run)").attributes.delete(RunDigest.attribute)
        }
        let status = try #require(try ResultsReader.verify(path: old).first { $0.runId == run }).status
        #expect(status == .unsealed)
    }

    @Test("a manifest that is not a JSON object of digests lists nothing, so every run is damage")
    func aGarbledManifestIsNotTrusted() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let path = try sweptResults(in: work, name: "mi").path
        do {
            let f = try HDF5File.open(path: path, mode: .readWrite)
            defer { try? f.close() }
            try f.root.attributes.set(RunManifest.attribute, "{\"a\": 1}")
        }
        let results = try ResultsReader.verify(path: path)
        #expect(results.count == 2 && results.allSatisfy { $0.status.isDamaged })
    }
}
