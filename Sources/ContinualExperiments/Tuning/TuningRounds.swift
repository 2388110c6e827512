import ContinualCore

/// The rounds of one tuning (`Tuner.tune`): the records as trained so far and, per tuned
/// variant, each parameter's current values and unused `"extend"` values, from which the next
/// round's points follow. Round one is the grids as written; a later round exists only for a
/// variant whose choice sits at an edge its extension can still move (`GridExtension`).
struct TuningRounds {
    private(set) var records: [TuningRecord]
    private let targets: [TuneTarget]
    /// `values[target][parameter]`: the values trained so far, in the order they were added.
    private var values: [[[JSONValue]]]
    private var extensions: [[GridExtension?]]
    /// Each target's configurations (run ids without the name) → point index: a later round
    /// refuses a duplicate (`Tuner.trials(of:…)`).
    private var seen: [[String: Int]]

    init(_ experiment: ExperimentFile) {
        targets = experiment.tuneTargets
        records = targets.map { target in
            let points = target.spec.grid.points(), s = target.spec.seeds.count
            return TuningRecord(variant: target.variant, parameters: target.spec.grid.parameters.map(\.path.text),
                                points: points, seeds: target.spec.seeds, split: target.spec.split,
                                scores: Array(repeating: Array(repeating: .nan, count: s), count: points.count),
                                flops: Array(repeating: Array(repeating: 0, count: s), count: points.count),
                                chosen: nil, wallSeconds: 0, json: target.spec.json)
        }
        values = targets.map { target in
            target.spec.grid.parameters.map { p -> [JSONValue] in if case .values(let v) = p.domain { return v } else { return [] } }
        }
        extensions = targets.map { target in target.spec.grid.parameters.map { target.spec.extensions[$0.path.text] } }
        seen = targets.map { _ in [:] }
    }

    /// Stores a round's scores, FLOPs and wall times (`entries` in trial order).
    mutating func record(_ trials: [Tuner.Trial], _ entries: [TuningJournal.Entry]) {
        for (trial, entry) in zip(trials, entries) {
            records[trial.target].scores[trial.point][trial.seedIndex] = entry.score
            records[trial.target].flops[trial.point][trial.seedIndex] = entry.flops
            records[trial.target].wallSeconds += entry.wallSeconds
            var unnamed = trial.run.config
            unnamed.name = ""
            seen[trial.target][unnamed.runId] = trial.point
        }
    }

    /// Chooses each variant's best point so far and returns the next round's selection runs:
    /// for every variant whose choice sits at a movable edge, the new points of the cartesian
    /// product of its grown value lists (empty: tuning is over).
    mutating func next(file: String) throws -> [Tuner.Trial] {
        var out: [Tuner.Trial] = []
        for t in records.indices {
            records[t].chosen = TuningRecord.best(records[t].meanScores)
            guard let c = records[t].chosen else { continue }
            let point = records[t].points[c]
            var grew = false
            for j in values[t].indices {
                guard var e = extensions[t][j], let v = e.step(chosen: point[j], values: values[t][j]) else { continue }
                extensions[t][j] = e
                values[t][j].append(v)
                grew = true
            }
            guard grew else { continue }
            let trained = Set(records[t].points)
            let new = Self.product(values[t]).filter { !trained.contains($0) }
            out += try Tuner.trials(of: targets[t], index: t, points: new, from: records[t].points.count, file: file, seen: &seen[t])
            let s = records[t].seeds.count
            records[t].points += new
            records[t].scores += Array(repeating: Array(repeating: .nan, count: s), count: new.count)
            records[t].flops += Array(repeating: Array(repeating: 0, count: s), count: new.count)
        }
        return out
    }

    /// The cartesian product of `lists`, last list fastest (the order of a grid's points).
    static func product(_ lists: [[JSONValue]]) -> [[JSONValue]] {
        lists.reduce([[]]) { acc, list in acc.flatMap { prefix in list.map { prefix + [$0] } } }
    }
}
