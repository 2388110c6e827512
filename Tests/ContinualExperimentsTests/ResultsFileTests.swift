import Foundation
import Testing
import ContinualCore
import ContinualHDF5
@testable import ContinualExperiments

/// Results files: layout, bit-identical reruns, and the CLI's exit codes.
@Suite(.serialized) struct ResultsFileTests {
    func runExperiment(to path: String) throws -> [RunResult] {
        let file = try ExperimentFile.parse(data: Data(tinyExperiment().utf8))
        let results = file.runs.map(RunExecutor.execute)
        try ResultsWriter.writeExperiment(results, experiment: file, to: path)
        return results
    }

    @Test func sameConfigAndSeedGiveBitIdenticalDatasets() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let a = dir.path("a.h5"), b = dir.path("b.h5")
        _ = try runExperiment(to: a)
        _ = try runExperiment(to: b)
        let fa = try HDF5File.open(path: a), fb = try HDF5File.open(path: b)
        defer { try? fa.close(); try? fb.close() }
        let ids = try fa.root.openGroup("runs").childNames()
        #expect(ids.count == 2)
        #expect(try fb.root.openGroup("runs").childNames() == ids)
        for id in ids {
            for name in ["accuracy_matrix", "baseline_random", "baseline_init", "loss_curve", "penalty_curve"] {
                let x: [Double] = try fa.root.openDataset("runs/\(id)/\(name)").read()
                let y: [Double] = try fb.root.openDataset("runs/\(id)/\(name)").read()
                #expect(x.map(\.bitPattern) == y.map(\.bitPattern), "\(name) differs")
            }
            let pa: [Float] = try fa.root.openDataset("runs/\(id)/final_parameters").read()
            let pb: [Float] = try fb.root.openDataset("runs/\(id)/final_parameters").read()
            #expect(pa.map(\.bitPattern) == pb.map(\.bitPattern))
        }
    }

    @Test func layoutMatchesTheDocumentation() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let path = dir.path("r.h5")
        let results = try runExperiment(to: path)
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"))
        let f = try HDF5File.open(path: path)
        defer { try? f.close() }
        let root = f.root
        #expect(try root.attributes.scalar("schema_version", as: Int64.self) == ResultsSchema.version)
        #expect(try root.attributes.string("toolkit_version") == ResultsSchema.toolkitVersion)
        // The dense kernels' arithmetic that produced the file (docs/versioning.md, Numerics).
        #expect(try root.attributes.scalar("numerics_version", as: Int64.self) == Int64(Kernels.numericsVersion))
        #expect(try root.attributes.string("kernel_path") == Kernels.path)
        #expect(try root.attributes.string("experiment_json")?.contains("habit_drift") == true)
        let r = results[0]
        let g = try root.openGroup("runs/\(r.runId)")
        #expect(try g.attributes.string("name") == "naive")
        #expect(try g.attributes.string("status") == "completed")
        #expect(try g.attributes.string("config_json") == r.run.canonicalJSON)
        let R = try g.openDataset("accuracy_matrix")
        #expect(try R.shape == [3, 3])
        #expect(try R.attributes.string("axis0")?.hasPrefix("trained_through") == true)
        let stored: [Double] = try R.read()
        #expect(stored == r.outcome!.accuracy.flatMap { $0 })
        #expect(try g.openDataset("loss_curve").shape == [3, 3])
        #expect(try g.openDataset("test_sizes").read(as: Int64.self) == [60, 60, 60])
        #expect(try g.openDataset("experience_names").readStrings() == ["morning", "night", "morning"])
        let metrics = try g.openGroup("metrics").attributes
        #expect(try metrics.scalar("acc", as: Double.self) == r.metrics!.acc)
        #expect(try metrics.scalar("bwt", as: Double.self) == r.metrics!.bwt)
        #expect(try g.openGroup("costs").attributes.scalar("total_parameters", as: Int64.self) == 10 * 8 + 8 + 9)
        let summary = try root.openDataset("summary").readTable()
        #expect(summary.rows.count == 2)
        #expect(summary.columns.map(\.name) == ResultsSchema.summaryColumns.map(\.name))
        #expect(summary.column("run_id") == results.map { .string($0.runId) })
        #expect(summary.column("acc")?[1].doubleValue == results[1].metrics!.acc)
    }

    @Test func divergedRunsAreRecordedWithTheirMessage() throws {
        let json = tinyExperiment().replacingOccurrences(
            of: "{\"name\": \"joint\", \"strategy\": [\"joint\"]}",
            with: "{\"name\": \"wild\", \"strategy\": [\"naive\"], \"optimizer\": {\"lr\": 1000000}}")
        let file = try ExperimentFile.parse(data: Data(json.utf8))
        let results = file.runs.map(RunExecutor.execute)
        #expect(results[0].status == .completed)
        #expect(results[1].status == .diverged)
        #expect(results[1].message.contains("diverged"))
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try ResultsWriter.writeExperiment(results, experiment: file, to: dir.path("d.h5"))
        let contents = try ResultsReader.read(path: dir.path("d.h5"))
        let wild = contents.runs.first { $0.name == "wild" }
        #expect(wild?.status == "diverged")
        #expect(wild?.accuracy.isEmpty == true)
    }

    @Test func cliRunWritesTheFileAndBadInputExitsWithTwoAndWritesNothing() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let good = dir.write("good.json", tinyExperiment())
        let out = dir.path("out.h5")
        let ok = try runCLI(["run", good, "--output", out])
        #expect(ok.status == 0, "stderr: \(ok.stderr)")
        #expect(ok.stdout.contains("ACC"))
        #expect(ok.stdout.contains("results: \(out)"))
        #expect(FileManager.default.fileExists(atPath: out))

        let inspect = try runCLI(["inspect", out])
        #expect(inspect.status == 0)
        #expect(inspect.stdout.contains("naive") && inspect.stdout.contains("joint"))

        let bad = dir.write("bad.json", tinyExperiment().replacingOccurrences(of: "\"epochs\": 3", with: "\"epochs\": [3]"))
        let badOut = dir.path("bad.h5")
        let failed = try runCLI(["run", bad, "--output", badOut])
        #expect(failed.status == 2)
        #expect(failed.stderr.split(separator: "\n").count == 1, "one-line error: \(failed.stderr)")
        #expect(failed.stderr.contains(".training.epochs"))
        #expect(!FileManager.default.fileExists(atPath: badOut))

        let missing = try runCLI(["run", dir.path("nope.json")])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("nope.json: no such file"))
        let validate = try runCLI(["validate", bad])
        #expect(validate.status == 2)
        let usage = try runCLI(["run"])
        #expect(usage.status == 2)
        let inspectMissing = try runCLI(["inspect", dir.path("none.h5")])
        #expect(inspectMissing.status == 2)
    }
}
