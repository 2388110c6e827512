import Foundation
import ContinualExperiments
import ContinualHDF5

/// A fresh temporary directory for one test (removed by the caller via `cleanup`).
struct SweepScratch {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("SweepTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func cleanup() { try? FileManager.default.removeItem(at: url) }
}

enum SweepFixtures {
    /// 3 variants × 2 learning rates × 4 seeds = 24 tiny runs (a fraction of a second each in debug).
    static func twentyFour(trainPerExperience: Int = 120, epochs: Int = 2) -> String {
        """
        {
          "name": "t24",
          "scenario": {"type": "habit_drift", "train_per_experience": \(trainPerExperience), "test_per_experience": 60,
                       "phases": ["morning", "night", "weekend_only"]},
          "model": {"hidden": [8]},
          "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
          "training": {"epochs": \(epochs), "batch_size": 16},
          "variants": [
            {"name": "naive", "strategy": ["naive"]},
            {"name": "joint", "strategy": ["joint"]},
            {"name": "naive_m0", "strategy": ["naive"], "optimizer": {"type": "sgd", "momentum": 0}}
          ],
          "sweep": {"parameters": {"optimizer.lr": [0.02, 0.1], "seed": {"range": [0, 4]}}}
        }
        """
    }

    static func experiment(_ text: String, path: String = "") throws -> ExperimentFile {
        try ExperimentFile.parse(data: Data(text.utf8), path: path)
    }

    /// Runs a whole session into `path`.
    @discardableResult
    static func sweep(_ e: ExperimentFile, to path: String, jobs: Int, shard: SweepShard? = nil, resume: Bool = false,
                      shouldStop: @escaping @Sendable () -> Bool = { false },
                      execute: @escaping @Sendable (ResolvedRun) -> RunResult = RunExecutor.execute) async throws -> SweepSession.Outcome {
        let session = SweepSession(experiment: e, shard: shard)
        let writer = try session.makeWriter(path: path, resume: resume)
        return try await session.run(writer: writer, jobs: jobs, shouldStop: shouldStop, execute: execute)
    }

    /// `/summary` without the wall-time columns, as comparable rows (NaN compares equal to NaN,
    /// doubles compared bit for bit).
    static func comparableSummary(_ path: String) throws -> (columns: [String], rows: [[String]]) {
        let (table, _) = try SweepReport.read(path: path)
        let keep = table.columns.indices.filter { !ResultsSchema.timingColumns.contains(table.columns[$0].name) }
        return (keep.map { table.columns[$0].name },
                table.rows.map { row in keep.map { i -> String in
                    if case .double(let d) = row[i] { return d.isNaN ? "nan" : String(d.bitPattern, radix: 16) }
                    return row[i].description
                } })
    }
}

/// Thread-safe counter for stop conditions in tests.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func increment() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}
