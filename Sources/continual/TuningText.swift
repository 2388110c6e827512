import ContinualExperiments
import Foundation

/// `continual inspect`'s account of a `/tuning` group: per variant, the chosen values, their
/// validation score, the grid's size and the compute spent choosing them.
enum TuningText {
    static func lines(_ tuning: [(variant: String, recordJSON: String, meanScores: [Double])]) -> String {
        var out = ["hyperparameters selected on validation splits of the training data (test sets not read):"]
        for t in tuning {
            let record = (try? JSONSerialization.jsonObject(with: Data(t.recordJSON.utf8))) as? [String: Any] ?? [:]
            let chosen = (record["chosen"] as? [String: Any] ?? [:]).sorted { $0.key < $1.key }
                .map { "\($0.key.split(separator: ".").last.map(String.init) ?? $0.key)=\($0.value)" }.joined(separator: ", ")
            let index = record["chosen_index"] as? Int
            let score = index.flatMap { $0 < t.meanScores.count ? String(format: "%.2f %%", t.meanScores[$0] * 100) : nil } ?? "—"
            let seeds = (record["seeds"] as? [Any])?.count ?? 0
            let flops = (record["total_training_flops"] as? NSNumber)?.doubleValue ?? 0
            out.append("  \(t.variant): \(chosen.isEmpty ? "nothing chosen" : chosen)  (validation ACC \(score))")
            out.append("      \(t.meanScores.count) point(s) × \(seeds) seed(s), \(String(format: "%.2g", flops)) training FLOPs")
        }
        return out.joined(separator: "\n")
    }
}
