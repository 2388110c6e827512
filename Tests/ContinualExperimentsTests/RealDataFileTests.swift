import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// A file converted by `continualkit datasets … --stats S.json`, read through the dataset scenario,
/// must show what the Python converter wrote: users, experiences, label ranges per user and
/// experience, and every feature column's mean. CI converts a slice of HAPT and sets
/// CONTINUALKIT_DATASET_STATS to its statistics (.ci/run); without it there is no file to check.
@Suite("Converted real data files")
struct RealDataFileTests {
    static let statsPath = ProcessInfo.processInfo.environment["CONTINUALKIT_DATASET_STATS"]

    @Test("the converted file read in Swift matches the converter's statistics",
          .enabled(if: statsPath != nil, "set CONTINUALKIT_DATASET_STATS to a --stats JSON (CI does)"))
    func matchesConverter() throws {
        let statsURL = URL(fileURLWithPath: try #require(Self.statsPath))
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: statsURL)) as? [String: Any])
        var path = try #require(stats["file"] as? String)
        if !path.hasPrefix("/") { path = statsURL.deletingLastPathComponent().appendingPathComponent(path).path }
        var scenario = DatasetScenario(path: path)
        scenario.userColumn = "user"
        scenario.timeColumn = "time"
        let pooled = try scenario.makeStream(seed: 0)
        #expect(pooled.head.classCount == stats["classes"] as? Int)
        #expect(pooled.dimension == stats["dimension"] as? Int)
        #expect(pooled.featureNames == stats["feature_names"] as? [String])
        #expect(pooled.experiences.map(\.name) == stats["experience_names"] as? [String])
        #expect(pooled.metadata["file_content_digest"] == stats["content_digest"] as? String)

        let users = try #require(stats["users"] as? [String])
        #expect(try scenario.forPopulation(users: users.count, seed: 1).memberIds == users)
        let perUser = try #require(stats["per_user"] as? [String: [String: [String: [Int]]]])
        for user in users {
            var one = scenario
            one.user = user
            let stream = try one.makeStream(seed: 0)
            let expected = try #require(perUser[user])
            for (split, pick) in [("train", { (e: Experience) in e.train }), ("test", { (e: Experience) in e.test })] {
                let samples = stream.experiences.map(pick)
                #expect(samples.map(\.count) == expected[split]?["rows"], "user \(user) \(split) rows")
                #expect(samples.map { Int($0.labels.min() ?? -1) } == expected[split]?["label_min"], "user \(user) \(split)")
                #expect(samples.map { Int($0.labels.max() ?? -1) } == expected[split]?["label_max"], "user \(user) \(split)")
            }
        }
        // Every feature column's mean per experience and split, over all users' rows.
        let means = try #require(stats["feature_mean"] as? [String: [[Double]]])
        for (split, pick) in [("train", { (e: Experience) in e.train }), ("test", { (e: Experience) in e.test })] {
            for (i, e) in pooled.experiences.enumerated() {
                let s = pick(e)
                let want = try #require(means[split]?[i])
                for j in 0..<pooled.dimension {
                    var sum = 0.0
                    for r in 0..<s.count { sum += Double(s.features[r * pooled.dimension + j]) }
                    #expect(abs(sum / Double(s.count) - want[j]) <= 1e-6 * max(1, abs(want[j])),
                            "experience \(i) \(split) feature \(pooled.featureNames[j])")
                }
            }
        }
    }
}
