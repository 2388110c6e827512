import ContinualExperiments
import Foundation

/// `continual inspect`'s account of a `/tuning` group: per variant, the chosen values, their
/// validation score, the grid's size, the compute spent choosing them, and whether a choice sits
/// at an edge of the values trained (where the best may lie beyond them).
enum TuningText {
    static func lines(_ tuning: [TuningRecord]) -> String {
        var out = ["hyperparameters chosen on validation splits of the training data",
                   "(no test set read):"]
        for r in tuning {
            let score = r.chosen.map { String(format: "%.2f %%", r.meanScores[$0] * 100) } ?? "—"
            out.append("  \(r.variant): \(r.chosen == nil ? "nothing chosen" : r.chosenText)  (validation ACC \(score))")
            out.append("      \(r.points.count) point(s) × \(r.seeds.count) seed(s), "
                + "\(String(format: "%.2g", Double(r.totalFLOPs))) training FLOPs")
            let edges = r.edges.map { "\(TuningRecord.shortName($0.path)) (\($0.edge.rawValue))" }
            if !edges.isEmpty { out.append("      at an edge of the values trained: \(edges.joined(separator: ", "))") }
        }
        return out.joined(separator: "\n")
    }
}
