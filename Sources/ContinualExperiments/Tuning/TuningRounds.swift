import ContinualCore

/// The rounds of one tuning (`Tuner.tune`): the records as trained so far and, per tuned
/// variant, the grid grown so far and each parameter's unused `"extend"` values, from which the
/// next round's points follow. Round one is the grids as written; a later round exists only for a
/// variant whose choice sits at an edge its extension can still move (`GridExtension`).
struct TuningRounds {
    private(set) var records: [TuningRecord]
    private let targets: [TuneTarget]
    /// Each target's grid with the extension values taken so far appended to their parameter's
    /// list: its points are the points trained (its `json` stays the block as written).
    private var grids: [SweepSpec]
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
                                chosen: nil, wallSeconds: 0, json: target.spec.json,
                                runIds: Array(repeating: Array(repeating: "", count: s), count: points.count),
                                runSeconds: Array(repeating: Array(repeating: 0, count: s), count: points.count))
        }
        grids = targets.map(\.spec.grid)
        extensions = targets.map { target in target.spec.grid.parameters.map { target.spec.extensions[$0.path.text] } }
        seen = targets.map { _ in [:] }
    }

    /// Stores a round's scores, FLOPs, run ids and wall times (`entries` in trial order).
    mutating func record(_ trials: [Tuner.Trial], _ entries: [TuningJournal.Entry]) {
        for (trial, entry) in zip(trials, entries) {
            records[trial.target].scores[trial.point][trial.seedIndex] = entry.score
            records[trial.target].flops[trial.point][trial.seedIndex] = entry.flops
            records[trial.target].runIds[trial.point][trial.seedIndex] = trial.run.runId
            records[trial.target].runSeconds[trial.point][trial.seedIndex] = entry.wallSeconds
            records[trial.target].wallSeconds += entry.wallSeconds
            seen[trial.target][trial.configurationId] = trial.point
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
            for j in grids[t].parameters.indices {
                guard case .values(let current) = grids[t].parameters[j].domain, var e = extensions[t][j],
                      let v = e.step(chosen: point[j], values: current) else { continue }
                extensions[t][j] = e
                grids[t].parameters[j].domain = .values(current + [v])
                grew = true
            }
            guard grew else { continue }
            let trained = Set(records[t].points)
            let new = grids[t].points().filter { !trained.contains($0) }
            out += try Tuner.trials(of: targets[t], index: t, points: new, from: records[t].points.count, file: file, seen: &seen[t])
            let s = records[t].seeds.count
            records[t].points += new
            records[t].scores += Array(repeating: Array(repeating: .nan, count: s), count: new.count)
            records[t].flops += Array(repeating: Array(repeating: 0, count: s), count: new.count)
            records[t].runIds += Array(repeating: Array(repeating: "", count: s), count: new.count)
            records[t].runSeconds += Array(repeating: Array(repeating: 0, count: s), count: new.count)
        }
        return out
    }
}
