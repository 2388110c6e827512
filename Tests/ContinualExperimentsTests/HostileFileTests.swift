import ContinualCore
import ContinualHDF5
import ContinualScenarios
import Foundation
import Testing
@testable import ContinualExperiments

/// Runs a Python script (h5py) that edits a file the way a damaged or hostile file would look;
/// returns false (and the test records why) when Python with h5py is not available.
func h5py(_ script: String) throws -> Bool {
    let ended = try SpawnedChild("/usr/bin/env", ["python3", "-c", "import h5py, numpy as np\n" + script], stdout: .discard).finish()
    let e = ended.stderr
    if ended.status != 0, e.contains("No module named") {
        print("skipped: python3 with h5py and numpy is needed to craft the hostile file (\(e))")
        return false
    }
    guard ended.status == 0 else { throw ScenarioError("h5py script failed: \(e)") }
    return true
}

/// A small 3-experience scenario written to `dir/s.h5`, then edited by `edit` (h5py, file `f`).
func hostileScenario(_ dir: String, _ edit: String) throws -> String? {
    let path = dir + "/s.h5"
    let stream = try HabitDriftScenario(trainPerExperience: 40, testPerExperience: 20).makeStream(seed: 1)
    try ScenarioArchive.write(stream, to: path)
    guard try h5py("f = h5py.File('\(path)', 'r+')\n\(edit)\nf.close()") else { return nil }
    return path
}

func errorText(_ body: () throws -> Any) -> String {
    do { _ = try body(); return "no error" } catch { return "\(error)" }
}

@Suite("Hostile files: every value read from a file is checked")
struct HostileFileTests {
    @Test("routes outside the heads (negative, too large) are refused on import, naming file, split and row")
    func routes() throws {
        for (route, expected) in [(-1, "= -1 is out of range 0..<5"), (-2, "= -2 is out of range 0..<5"), (1000, "= 1000 is out of range 0..<5")] {
            try withScenarioTempDir { dir in
                guard let path = try hostileScenario(dir, """
                    r = np.zeros(40, dtype='i4'); r[7] = \(route)
                    f['experiences/001/train'].create_dataset('routes', data=r)
                    """) else { return }
                let e = errorText { try DatasetScenario(path: path).makeStream(seed: 0) }
                #expect(e.hasPrefix(path) && e.contains("/experiences/001/train/routes[7] \(expected)"), "\(e)")
            }
        }
    }

    @Test("a multi-head run on a stream with a bad route fails with an error, never touches memory")
    func routeAtTheTrainerBoundary() throws {
        var stream = try HabitDriftScenario(trainPerExperience: 40, testPerExperience: 20).makeStream(seed: 1)
        for bad: Int32 in [-1, -2, 1000] {
            stream.experiences[1].train.routes = [Int32](repeating: 1, count: stream.experiences[1].train.count)
            stream.experiences[1].train.routes![3] = bad
            let spec = MLPSpec(inputs: stream.dimension, hidden: [8], head: stream.head, heads: stream.experiences.count)
            var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1), options: TrainingOptions(epochs: 1),
                                  plugins: [], seed: 1)
            let e = errorText { try trainer.run(stream) }
            #expect(e.contains("experience 1") && e.contains("train row 3: route \(bad) is out of range 0..<5"), "\(e)")
        }
        // The layer helpers keep any route inside the copies, checked or not.
        let layer = Layer(inputs: 4, outputs: 2, activation: .identity, copies: 3, offset: 10)
        for r in [-1, -2, -4, 1000, Int.min + 1] { #expect((0..<3).contains(layer.copyIndex(route: r))) }
    }

    @Test("declared-huge shapes in scenario, checkpoint and results files are refused before allocating")
    func declaredHugeShapes() throws {
        try withScenarioTempDir { dir in
            guard let path = try hostileScenario(dir, """
                del f['experiences/000/train/features']
                f['experiences/000/train'].create_dataset('features', shape=(10**9, 10), dtype='f4', chunks=(1024, 10))
                """) else { return }
            let e = errorText { try DatasetScenario(path: path).makeStream(seed: 0) }
            #expect(e.contains("declares 10000000000 elements"), "\(e)")
        }
        try withScenarioTempDir { dir in
            let path = dir + "/c.h5"
            try CheckpointFile.write(sampleCheckpoint(), to: path)
            guard try h5py("""
                f = h5py.File('\(path)', 'r+'); del f['payload']
                f.create_dataset('payload', shape=(2**40,), dtype='u1', chunks=(2**20,)); f.close()
                """) else { return }
            let e = errorText { try CheckpointFile.readRun(path: path) }
            #expect(e.contains("declares 1099511627776 elements"), "\(e)")
        }
        try withScenarioTempDir { dir in
            let path = dir + "/r.h5"
            guard try h5py("""
                f = h5py.File('\(path)', 'w'); g = f.create_group('runs/r0')
                g.create_dataset('accuracy_matrix', shape=(100000, 100000), dtype='f8', chunks=(100, 100)); f.close()
                """) else { return }
            // The run group is refused before allocating, and skipped as damaged (item 4): the rest
            // of the file stays readable, and `inspect` names the group and the limit.
            let contents = try ResultsReader.read(path: path)
            #expect(contents.damaged.count == 1 && contents.damaged[0].reason.contains("declares 10000000000 elements"),
                    "\(contents.damaged)")
            let cli = try runCLI(["inspect", path])
            // Its only run group is damaged: exit 2 naming the group and the limit, not "not a
            // results file" (it has /runs).
            #expect(cli.status == 2, "\(cli)")
            #expect(cli.stderr.contains("run group r0 is unreadable") && cli.stderr.contains("declares 10000000000"), "\(cli)")
            #expect(cli.stderr.contains("no readable run") && !cli.stderr.contains("neither /runs"), "\(cli)")
        }
    }

    @Test("huge labels and class counts are limits named in the error, not allocations")
    func hugeLabelsAndClasses() throws {
        let csv = ScenarioArchiveTests.goodCSV + "\n1,train,0.3,2,2147483647"
        let e = try ScenarioArchiveTests().csvError(csv)
        #expect(e == #"data.csv:6, column 5 ("label"): label 2147483647 is out of range 0..<4096 (at most 4096 classes, DataLimits.maxClasses)"#)
        #expect(throws: ConfigError.self) {
            try ScenarioCatalog.resolve(name: "dataset", optionsText: #"{"path": "a.csv", "classes": 1000000000000}"#)
        }
        try withScenarioTempDir { dir in
            guard let path = try hostileScenario(dir, "f.attrs['head'] = 'multiclass'; f.attrs['classes'] = np.int64(10**12)") else { return }
            let e = errorText { try DatasetScenario(path: path).makeStream(seed: 0) }
            #expect(e.contains("classes in 2...4096 (DataLimits.maxClasses), found multiclass/1000000000000"), "\(e)")
        }
        // The spec's size is computed with overflow-checked arithmetic.
        let huge = MLPSpec(inputs: 1 << 40, hidden: [1 << 30], head: .multiclass(classes: 10))
        #expect(huge.sizeError()?.contains("DataLimits.maxParameters") == true)
        #expect(MLPSpec(inputs: 5, hidden: [16], head: .multiclass(classes: 1 << 40)).sizeError()?.contains("DataLimits.maxClasses") == true)
        #expect(MLPSpec(inputs: 5, hidden: [16, 8], head: .multiclass(classes: 10), heads: 5).sizeError() == nil)
    }

    @Test("NaN and inf features are a data error naming file, experience, split and row (train and test)")
    func nonFiniteFeatures() throws {
        for (split, value) in [("test", "np.nan"), ("train", "np.inf"), ("train", "np.nan"), ("test", "-np.inf")] {
            try withScenarioTempDir { dir in
                guard let path = try hostileScenario(dir, "f['experiences/002/\(split)/features'][5, 1] = \(value)") else { return }
                let e = errorText { try DatasetScenario(path: path).makeStream(seed: 0) }
                #expect(e.hasPrefix(path) && e.contains("experience 2") && e.contains("\(split) row 5, feature 1 is")
                        && e.contains("must be finite"), "\(e)")
            }
        }
        // At the Trainer boundary too (streams built in code), instead of "diverged".
        var stream = try HabitDriftScenario(trainPerExperience: 40, testPerExperience: 20).makeStream(seed: 1)
        stream.experiences[0].test.features[3 * stream.dimension] = .nan
        let spec = MLPSpec(inputs: stream.dimension, hidden: [8], head: stream.head)
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1), options: TrainingOptions(epochs: 1), plugins: [], seed: 1)
        let e = errorText { try trainer.run(stream) }
        #expect(e.contains("experience 0") && e.contains("test row 3: feature 0 is nan"), "\(e)")
    }

    @Test("float labels in HDF5 are refused, not truncated; NUL bytes in CSV fields are refused")
    func floatLabelsAndNUL() throws {
        try withScenarioTempDir { dir in
            guard let path = try hostileScenario(dir, """
                l = f['experiences/000/train/labels'][:].astype('f8'); l[4] = 0.7
                del f['experiences/000/train/labels']; f['experiences/000/train'].create_dataset('labels', data=l)
                """) else { return }
            let e = errorText { try DatasetScenario(path: path).makeStream(seed: 0) }
            #expect(e.contains("/experiences/000/train/labels[4] = 0.7: labels must be integers in 0..<2"), "\(e)")
        }
        let nul = ScenarioArchiveTests.goodCSV + "\n1,train,5\u{0}.75,2,1"
        #expect(try ScenarioArchiveTests().csvError(nul) == "data.csv:6, column 3: a NUL byte inside a field (the file is binary or damaged)")
    }

    @Test("CRLF and BOM+CRLF CSVs (Excel exports) read like LF files")
    func crlf() throws {
        try withScenarioTempDir { dir in
            let lf = dir + "/lf.csv", crlf = dir + "/crlf.csv", bom = dir + "/bom.csv"
            try ScenarioArchiveTests.goodCSV.write(toFile: lf, atomically: true, encoding: .utf8)
            let windows = ScenarioArchiveTests.goodCSV.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n"
            try Data(windows.utf8).write(to: URL(fileURLWithPath: crlf))
            try Data([0xEF, 0xBB, 0xBF] + Array(windows.utf8)).write(to: URL(fileURLWithPath: bom))
            let a = try CSVScenarioReader().read(path: lf)
            for p in [crlf, bom] {
                let b = try CSVScenarioReader().read(path: p)
                #expect(b.featureNames == a.featureNames && b.head == a.head)
                #expect(b.experiences.map(\.train) == a.experiences.map(\.train) && b.experiences.map(\.test) == a.experiences.map(\.test))
            }
        }
    }

    @Test("a 40,000-column CSV loads in time linear in its width (4× the columns: well under 16× the time)")
    func wideCSV() throws {
        try withScenarioTempDir { dir in
            // A 4-row CSV of `columns` feature columns.
            func write(_ columns: Int) throws -> String {
                let path = dir + "/wide\(columns).csv"
                var text = "experience,split,label," + (0..<columns).map { "f\($0)" }.joined(separator: ",") + "\n"
                let row = (0..<columns).map { String(Double($0 % 97) / 10) }.joined(separator: ",")
                for e in 0..<2 { for s in ["train", "test"] { text += "\(e),\(s),\(e)," + row + "\n" } }
                try text.write(toFile: path, atomically: true, encoding: .utf8)
                return path
            }
            func seconds(_ path: String, _ columns: Int) throws -> Double {
                let start = Date()
                let s = try CSVScenarioReader().read(path: path)
                #expect(s.dimension == columns)
                return Date().timeIntervalSince(start)
            }
            // A ratio, not a time limit: a reader quadratic in the width (the bug this guards
            // against) takes 16× as long for 4× the columns. The two sizes are loaded alternately
            // and each keeps its fastest of 5, so a burst of load on a shared machine meets both.
            let (narrowPath, widePath) = (try write(10_000), try write(40_000))
            var narrow = Double.infinity, wide = Double.infinity
            for _ in 0..<5 {
                narrow = min(narrow, try seconds(narrowPath, 10_000))
                wide = min(wide, try seconds(widePath, 40_000))
            }
            print("CSV of 10,000 columns: \(narrow) s; 40,000 columns: \(wide) s (ratio \(wide / narrow))")
            #expect(wide < 8 * narrow + 0.05, "4× the columns took \(wide / narrow)× the time")
        }
    }
}

/// A small real checkpoint (a run stopped after its first experience).
func sampleCheckpoint() throws -> TrainerCheckpoint {
    let stream = try HabitDriftScenario(trainPerExperience: 40, testPerExperience: 20).makeStream(seed: 1)
    let spec = MLPSpec(inputs: stream.dimension, hidden: [4], head: stream.head)
    var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.1), options: TrainingOptions(epochs: 1), plugins: [], seed: 1)
    _ = try trainer.run(stream, source: EpochSource(), resumingFrom: nil, stopAfter: 0)
    return trainer.checkpoint!
}

@Suite("Duplicate JSON keys")
struct DuplicateKeyTests {
    func error(_ json: String) -> String {
        do { _ = try ExperimentFile.parse(data: Data(json.utf8), path: "e.json"); return "no error" } catch { return "\(error)" }
    }

    @Test("a duplicated key is an error naming its key path, at any depth")
    func duplicates() {
        #expect(error(#"{"name": "a", "seed": 1, "seed": 2}"#).hasPrefix("e.json: .seed: this key appears more than once"))
        #expect(error(#"{"name": "a", "training": {"epochs": 1, "batch_size": 8, "epochs": 3}}"#).hasPrefix("e.json: .training.epochs:"))
        #expect(error(#"{"name": "a", "strategy": [{"type": "naive"}, {"type": "ewc", "lambda": 1, "type": "si"}]}"#)
                .hasPrefix("e.json: .strategy[1].type:"))
        // Escapes name the same key: "ep\u006fchs" is "epochs".
        #expect(error(#"{"name": "a", "training": {"epochs": 1, "ep\u006fchs": 2}}"#).hasPrefix("e.json: .training.epochs:"))
        // Equal keys in different objects, and strings that look like keys, are fine.
        #expect(!error(#"{"name": "a", "training": {"epochs": 1}, "strategy": [{"type": "naive"}], "description": "{\"epochs\": 1, \"epochs\": 2}"}"#)
                .contains("more than once"))
    }
}
