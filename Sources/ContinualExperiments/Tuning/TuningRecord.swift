import ContinualCore
import ContinualScenarios

/// What a tuning of one variant did and chose: the grid, the validation data, every selection
/// run's score and compute, and the chosen point. Written to the results file (`/tuning`,
/// docs/results-format.md) and printed by `continual inspect` and `continualkit table`.
public struct TuningRecord: Sendable, Equatable {
    public var variant: String
    /// Tuned key paths, in grid order.
    public var parameters: [String]
    /// Grid points: one value per parameter.
    public var points: [[JSONValue]]
    public var seeds: [UInt64]
    public var split: ValidationSplit
    /// Final ACC on the validation data, `scores[point][seed]` (NaN: the run diverged or failed).
    public var scores: [[Double]]
    /// Training FLOPs of each selection run, `flops[point][seed]` (`TrainingBudget`).
    public var flops: [[Int]]
    /// Index of the chosen point (nil when every point failed).
    public var chosen: Int?
    /// Wall time of all selection runs, seconds (a timing: differs between runs of the same file).
    public var wallSeconds: Double
    /// The merged `"tune"` block as written.
    public var json: JSONValue
    /// Each selection run's id, `runIds[point][seed]` (the digest of its whole resolved
    /// configuration, `TuningJournal`'s key), and its wall time, `runSeconds[point][seed]`: with
    /// them a resumed command reuses every selection run the results file holds (its journal is
    /// removed when the sweep finishes). Empty in files written before they were stored.
    public var runIds: [[String]] = []
    public var runSeconds: [[Double]] = []

    /// The selection runs this record holds, as tuning-journal entries by run id.
    public var entries: [String: TuningJournal.Entry] {
        var out: [String: TuningJournal.Entry] = [:]
        for (p, ids) in runIds.enumerated() {
            for (s, id) in ids.enumerated() where !id.isEmpty {
                out[id] = TuningJournal.Entry(score: scores[p][s], flops: flops[p][s], wallSeconds: runSeconds[p][s])
            }
        }
        return out
    }

    /// Mean score of each point over its seeds (NaN if any seed failed).
    public var meanScores: [Double] { scores.map { $0.reduce(0, +) / Double(max($0.count, 1)) } }

    /// The chosen values as (path, value), empty when nothing was chosen.
    public var chosenValues: [SweepValue] {
        guard let c = chosen else { return [] }
        return zip(parameters, points[c]).map { SweepValue(path: $0, value: $1) }
    }

    /// Tuned parameters whose chosen value is the smallest or largest of the numbers trained for
    /// it (two or more distinct): the best may lie beyond the grid (`GridExtension`). In
    /// parameter order.
    public var edges: [(path: String, edge: GridExtension.Edge)] {
        guard let c = chosen else { return [] }
        return parameters.indices.compactMap { j in
            var column: [JSONValue] = []
            for p in points where !column.contains(p[j]) { column.append(p[j]) }
            return GridExtension.edge(of: points[c][j], in: column).map { (parameters[j], $0) }
        }
    }

    /// "lr at its upper edge" for each of `edges`, or nil when the choice is inside every range.
    public var edgeText: String? {
        let e = edges
        guard !e.isEmpty else { return nil }
        return e.map { "\(Self.shortName($0.path)) at its \($0.edge.rawValue) edge" }
            .joined(separator: ", ")
    }

    /// Total training FLOPs spent on selection.
    public var totalFLOPs: Int { flops.joined().reduce(0, +) }

    /// Index of the best point: the highest mean score, the first in grid order on ties; NaN
    /// scores never win.
    static func best(_ means: [Double]) -> Int? {
        var best: Int? = nil
        for (i, m) in means.enumerated() where m.isFinite {
            if best == nil || m > means[best!] { best = i }
        }
        return best
    }

    /// A tuned key path as the messages show it: its last component ("lr" for "optimizer.lr").
    public static func shortName(_ path: String) -> String {
        path.split(separator: ".").last.map(String.init) ?? path
    }

    /// "lambda=100, lr=0.001" of the chosen point.
    public var chosenText: String {
        chosenValues.map { "\(Self.shortName($0.path))=\($0.value.shortDescription)" }
            .joined(separator: ", ")
    }

    /// The record as JSON (stored beside the numeric datasets so any reader gets it in one string).
    public var jsonValue: JSONValue {
        var o: [String: JSONValue] = [
            "variant": .string(variant),
            "parameters": .array(parameters.map { .string($0) }),
            "points": .array(points.map { .array($0) }),
            "seeds": .array(seeds.map { .int(Int64($0)) }),
            "validation_fraction": .double(split.fraction),
            "split_seed": .int(Int64(split.seed)),
            "metric": .string("final ACC on the validation split (mean over selection seeds)"),
            "total_training_flops": .int(Int64(totalFLOPs)),
            "tune": json,
        ]
        o["experiences"] = split.experiences.map { .int(Int64($0)) } ?? .null
        o["chosen_index"] = chosen.map { .int(Int64($0)) } ?? .null
        o["chosen"] = .object(Dictionary(uniqueKeysWithValues: chosenValues.map { ($0.path, $0.value) }))
        o["edges"] = .object(Dictionary(uniqueKeysWithValues: edges.map { ($0.path, JSONValue.string($0.edge.rawValue)) }))
        return .object(o)
    }
}
