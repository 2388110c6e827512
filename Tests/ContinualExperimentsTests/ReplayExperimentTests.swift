import ContinualCore
import ContinualExperiments
import Foundation
import Testing

@Suite("Replay in experiment files")
struct ReplayExperimentTests {
    static let text = #"""
    {
      "name": "replay_compose",
      "scenario": {"type": "habit_drift", "train_per_experience": 150, "test_per_experience": 30},
      "training": {"epochs": 1, "batch_size": 16},
      "variants": [
        {"name": "replay-naive", "seed": 3, "strategy": [{"type": "replay", "capacity_bytes": 1024, "precision": "int8"}, {"type": "naive"}]},
        {"name": "joint-replay", "seed": 3, "strategy": ["joint", "replay"]}
      ]
    }
    """#

    @Test("\"replay\" is registered, composes in one strategy list, and reports buffer_bytes")
    func composesFromJSON() throws {
        let file = try ExperimentFile.parse(data: Data(Self.text.utf8))
        #expect(file.runs.map { $0.config.strategyLabel } == ["replay+naive", "joint+replay"])
        // Defaults are filled into the resolved config.
        #expect(file.runs[1].canonicalJSON.contains(#""capacity":200"#))
        #expect(file.runs[1].canonicalJSON.contains(#""policy":"reservoir""#))
        let results = file.runs.map(RunExecutor.execute)
        #expect(results.allSatisfy { $0.status == .completed })
        let report = try #require(results[0].outcome?.pluginReports.first { $0.0 == "replay" }?.1)
        #expect(report.attributes["buffer_bytes"] == .int(40 + 89 * 11))
    }

    @Test("invalid replay options are rejected with the key path")
    func rejectsBadOptions() {
        let bad = Self.text.replacingOccurrences(of: #""precision": "int8""#, with: #""precision": "int8", "capacity": 5"#)
        #expect(throws: ConfigError.self) { _ = try ExperimentFile.parse(data: Data(bad.utf8)) }
    }
}
