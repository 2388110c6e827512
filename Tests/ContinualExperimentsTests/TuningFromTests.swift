import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// One tuning for every shard of a sweep: `sweep --tune-only` writes the choices, and
/// `sweep --tuning-from FILE` takes them, checked to be the experiment's own tune blocks.
@Suite("Shards taking one tuning's choices")
struct TuningFromTests {
    func experiment(grid: String = "[0.0001, 0.01]") -> String {
        """
        {"name": "tune_from", "seed": 1,
         "scenario": {"type": "split_digits", "path": "\(digitsPath)", "setting": "class"},
         "model": {"hidden": [16]}, "optimizer": {"type": "adam", "lr": 0.001},
         "training": {"steps_per_experience": 6, "batch_size": 32},
         "tune": {"parameters": {"optimizer.lr": \(grid)}, "extend": {"optimizer.lr": [0.03, 0.1]},
                  "validation_fraction": 0.2, "experiences": 2, "seeds": [7]},
         "variants": [
           {"name": "naive", "strategy": ["naive"]},
           {"name": "ewc", "strategy": [{"type": "ewc", "lambda": 10}], "tune": {"parameters": {"strategy[0].lambda": [1, 100]}}},
           {"name": "paper", "strategy": ["naive"], "tune": null}
         ],
         "sweep": {"parameters": {"seed": [1, 2]}}}
        """
    }

    func runIds(_ path: String) throws -> Set<String> {
        let file = try HDF5File.open(path: path)
        defer { try? file.close() }
        guard file.root.exists("runs") else { return [] }
        return Set(try file.root.openGroup("runs").childNames())
    }

    @Test("--tune-only then --tuning-from: the records and runs of a sweep that tuned itself, no selection run")
    func shards() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("e.json", experiment())
        let tuned = dir.path("tuned.h5"), whole = dir.path("whole.h5")
        let t = try runCLI(["sweep", exp, "-o", tuned, "--tune-only", "--jobs", "2"])
        #expect(t.status == 0 && t.stdout.contains("tuning written to"), "\(t.stderr)")
        #expect(try runIds(tuned).isEmpty)
        let w = try runCLI(["sweep", exp, "-o", whole, "--jobs", "2"])
        #expect(w.status == 0, "\(w.stderr)")
        var shardIds = Set<String>()
        for k in 0..<2 {
            let out = dir.path("s\(k).h5")
            let s = try runCLI(["sweep", exp, "-o", out, "--shard", "\(k)/2", "--tuning-from", tuned, "--jobs", "2"])
            #expect(s.status == 0 && s.stdout.contains("taken from") && !s.stdout.contains("selection runs"), "\(s.stdout)\(s.stderr)")
            shardIds.formUnion(try runIds(out))
            let a = try TuningReader.read(path: out), b = try TuningReader.read(path: whole)
            #expect(a.map(\.variant) == b.map(\.variant) && a.map(\.chosen) == b.map(\.chosen) && a.map(\.points) == b.map(\.points))
            #expect(a.flatMap { $0.scores.joined() }.map(\.bitPattern) == b.flatMap { $0.scores.joined() }.map(\.bitPattern))
        }
        #expect(shardIds == (try runIds(whole)) && shardIds.count == 6)
    }

    @Test("a file tuned with another grid, or without tuning, is refused with the reason")
    func refusals() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("e.json", experiment())
        let tuned = dir.path("tuned.h5")
        #expect(try runCLI(["sweep", exp, "-o", tuned, "--tune-only", "--jobs", "2"]).status == 0)
        let other = dir.write("o.json", experiment(grid: "[0.0001, 0.001]"))
        let r = try runCLI(["sweep", other, "-o", dir.path("o.h5"), "--tuning-from", tuned])
        #expect(r.status == 2 && r.stderr.contains("another tune block"), "\(r.stderr)")
        let noTuning = dir.path("none.h5")
        let untuned = dir.write("u.json", """
            {"name": "u", "seed": 1, "scenario": {"type": "split_digits", "path": "\(digitsPath)", "setting": "class"},
             "model": {"hidden": [16]}, "training": {"steps_per_experience": 2}, "strategy": ["naive"]}
            """)
        #expect(try runCLI(["sweep", untuned, "-o", noTuning]).status == 0)
        let n = try runCLI(["sweep", exp, "-o", dir.path("n.h5"), "--tuning-from", noTuning])
        #expect(n.status == 2 && n.stderr.contains("has no /tuning group"), "\(n.stderr)")
    }
}
