import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 41.2: results files written by earlier releases stay usable. Each fixture in
/// `Tests/Fixtures/PreviousReleases` is `Tests/Fixtures/PreviousReleases/experiment.json` swept by
/// the release build of a past commit (its README says which and how): the end of wave 3
/// (`1b6f5af`, the release before this one) and the end of wave 2 (`d0e7a94`, whose `/summary` has
/// 41 columns to today's 45 — the file an audit found `merge`, `repair` and `--resume` refusing).
@Suite("Results files of earlier releases", .serialized)
struct PreviousReleaseTests {
    static let fixtures = packageRoot.appendingPathComponent("Tests/Fixtures/PreviousReleases")

    /// The committed fixtures, by the commit that wrote them.
    static let releases = ["1b6f5af", "d0e7a94"]

    /// A working copy of the fixture of `release` and of the experiment that wrote it.
    func copy(_ release: String, into work: TemporaryDirectory) throws -> (file: String, experiment: String) {
        let file = work.path("old.h5"), experiment = work.path("experiment.json")
        try FileManager.default.copyItem(atPath: Self.fixtures.appendingPathComponent("release-\(release).h5").path, toPath: file)
        try FileManager.default.copyItem(atPath: Self.fixtures.appendingPathComponent("experiment.json").path, toPath: experiment)
        return (file, experiment)
    }

    /// ACC per run id, from `/summary` as the old release wrote it (read with the table reader).
    func storedACC(_ path: String) throws -> [String: Double] {
        let f = try HDF5File.open(path: path)
        defer { try? f.close() }
        let t = try f.root.openDataset("summary").readTable()
        let id = try #require(t.columns.firstIndex { $0.name == "run_id" }), acc = try #require(t.columns.firstIndex { $0.name == "acc" })
        return Dictionary(uniqueKeysWithValues: t.rows.map { ($0[id].stringValue ?? "", $0[acc].doubleValue ?? .nan) })
    }

    @Test("inspect, inspect --verify, merge (alone and with itself), repair and sweep --resume read it, keeping every run's numbers",
          arguments: releases)
    func everyCommandReadsIt(_ release: String) throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let (file, experiment) = try copy(release, into: work)
        let original = try storedACC(file)
        #expect(original.count == 4)

        let inspect = try runCLI(["inspect", file])
        #expect(inspect.status == 0 && inspect.stdout.contains("replay"), "\(inspect.stderr)")
        let verify = try runCLI(["inspect", file, "--verify"])
        #expect(verify.status == 0 && verify.stdout.contains("4 run group(s)"), "\(verify.stdout) \(verify.stderr)")

        for (name, inputs, note) in [("alone.h5", [file], "4 runs"), ("twice.h5", [file, file], "4 identical duplicates skipped")] {
            let merged = work.path(name)
            let m = try runCLI(["merge", merged] + inputs)
            #expect(m.status == 0 && m.stdout.contains(note), "\(m.stdout) \(m.stderr)")
            #expect(try storedACC(merged) == original)
            #expect(try runCLI(["inspect", merged, "--verify"]).status == 0)
        }
        let repaired = work.path("repaired.h5")
        let r = try runCLI(["repair", file, "-o", repaired])
        #expect(r.status == 0 && r.stdout.contains("4 runs copied"), "\(r.stdout) \(r.stderr)")
        #expect(try storedACC(repaired) == original)

        // --resume keeps the old runs (nothing reruns) and the file verifies with today's checks.
        let resumed = try runCLI(["sweep", experiment, "-o", file, "--resume"])
        #expect(resumed.status == 0 && resumed.stdout.contains("0 written now, 4 already there"), "\(resumed.stdout) \(resumed.stderr)")
        #expect(try storedACC(file) == original)
        #expect(try runCLI(["inspect", file, "--verify"]).status == 0)
    }

    @Test("an older row gains the added columns at their place with 'not recorded'; any other missing column leaves it to the column check")
    func upgradeRules() throws {
        let today = SummaryLayout(swept: [.init(path: "optimizer.lr", name: "lr", kind: .float64)], sweptPaths: ["seed", "optimizer.lr"]).columns
        let added = Set(ResultsSchema.addedColumns.keys)
        let olderColumns = today.filter { !added.contains($0.name) }
        let row: [HDF5Value] = olderColumns.enumerated().map { i, c in
            switch c.kind { case .int64: .int(Int64(i)); case .float64: .double(Double(i)); case .string: .string("v\(i)") }
        }
        let up = SummaryUpgrade.upgraded(HDF5Table(columns: olderColumns, rows: [row]))
        #expect(up.columns == today)
        for (c, v) in zip(up.columns, up.rows[0]) {
            if let filler = ResultsSchema.addedColumns[c.name] {
                #expect(v.intValue == filler.intValue && (v.doubleValue?.isNaN ?? false) == (filler.doubleValue?.isNaN ?? false), "\(c.name)")
            } else {
                #expect(v == row[olderColumns.firstIndex(of: c)!], "\(c.name)")
            }
        }
        // Today's rows, and rows lacking a column that was never added later, are left alone.
        let current = HDF5Table(columns: today, rows: [])
        #expect(SummaryUpgrade.upgraded(current) == current)
        let foreign = HDF5Table(columns: olderColumns.filter { $0.name != "acc" }, rows: [])
        #expect(SummaryUpgrade.upgraded(foreign) == foreign)
    }
}
