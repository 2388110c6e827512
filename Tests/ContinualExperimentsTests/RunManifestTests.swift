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
        let manifest = try #require(RunManifest.read(file.root)).digests
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

    /// With `CONTINUALKIT_RESULTS_KEY_FILE` the manifest is sealed (HMAC-SHA256): an edit that
    /// recomputes the run's digest and the manifest — undetectable by digests — is damage to a
    /// reader holding the key, whether the forger drops the seal or keeps the old one.
    @Test("a keyed seal catches a run edited with its digest and manifest recomputed; another key and a short key are named")
    func keyedSeal() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let key = work.path("k.key"), other = work.path("o.key"), short = work.path("s.key")
        #expect(FileManager.default.createFile(atPath: key, contents: Data((0..<32).map { UInt8($0) })))
        #expect(FileManager.default.createFile(atPath: other, contents: Data((0..<32).map { UInt8(255 - $0) })))
        #expect(FileManager.default.createFile(atPath: short, contents: Data([1, 2, 3])))
        let keyed = [ResultsKey.variable: key]
        let json = work.write("k.json", tinyExperiment(name: "k"))
        let path = work.path("k.h5")
        #expect(try runCLI(["sweep", json, "-o", path], environment: keyed).status == 0)
        let clean = try runCLI(["inspect", path, "--verify"], environment: keyed)
        #expect(clean.status == 0 && clean.stdout.contains("2 verified"), "\(clean.stdout) \(clean.stderr)")
        let run = try ResultsReader.read(path: path).runs[0].runId
        let seal: String = try {
            let f = try HDF5File.open(path: path, mode: .readWrite)
            defer { try? f.close() }
            let seal = try #require(try f.root.attributes.string(RunManifest.sealAttribute))
            let g = try f.root.openGroup("runs/\(run)")
            try g.openGroup("metrics").attributes.set("acc", 0.99)
            try RunDigest.seal(g)
            try RunManifest.write(f.root)   // this process has no key: the seal is dropped
            return seal
        }()
        // Digests alone: the forgery passes.
        #expect(try runCLI(["inspect", path, "--verify"]).status == 0)
        let dropped = try runCLI(["inspect", path, "--verify"], environment: keyed)
        #expect(dropped.status == 2 && dropped.stdout.contains("the file is not sealed"), "\(dropped.stdout)")
        do {
            let f = try HDF5File.open(path: path, mode: .readWrite)
            defer { try? f.close() }
            try f.root.attributes.set(RunManifest.sealAttribute, seal)
        }
        let kept = try runCLI(["inspect", path, "--verify"], environment: keyed)
        #expect(kept.status == 2 && kept.stdout.contains("seal does not match"), "\(kept.stdout)")
        let merged = try runCLI(["merge", work.path("m.h5"), path], environment: keyed)
        #expect(merged.stderr.contains("seal does not match"), "\(merged.stderr)")
        // A file sealed with another key says so; a key file that is too short stops every command.
        let json2 = work.write("o.json", tinyExperiment(name: "o"))
        #expect(try runCLI(["sweep", json2, "-o", work.path("o.h5")], environment: [ResultsKey.variable: other]).status == 0)
        let foreign = try runCLI(["inspect", work.path("o.h5"), "--verify"], environment: keyed)
        #expect(foreign.status == 2 && foreign.stdout.contains("sealed with another key"), "\(foreign.stdout)")
        let bad = try runCLI(["inspect", work.path("o.h5")], environment: [ResultsKey.variable: short])
        #expect(bad.status == 2 && bad.stderr.contains("at least 16"), "\(bad.stderr)")
    }
}

