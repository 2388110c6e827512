import ContinualHDF5

/// Writes `/tuning` (docs/results-format.md): one group per tuned variant with
/// - `scores` [points, seeds]: final ACC on the validation split of every selection run (NaN: failed),
/// - `training_flops` [points, seeds]: what each selection run spent training,
/// - `run_ids` [points × seeds, point-major] and `run_wall_seconds` [points, seeds]: each selection
///   run's id and wall time, so that a resumed command reuses the runs (`TuningRecord.entries`),
/// - attributes `record_json` (the whole `TuningRecord`: grid, points, seeds, split, chosen values,
///   total FLOPs), `chosen_index` (-1: none) and `wall_seconds` (a timing).
/// `/tuning` itself says what the protocol is, so a reader of the file alone can tell.
enum TuningWriter {
    /// Replaces an existing `/tuning`: a sweep resumed after its tuning finished writes the header
    /// again, with the same records (the journal's selection runs are reused bit for bit).
    static func write(_ records: [TuningRecord], into root: HDF5Group) throws {
        if root.exists("tuning") { try root.delete("tuning") }
        let tuning = try root.createGroup("tuning")
        try tuning.attributes.set("meaning", "hyperparameters selected per variant before its reported runs: every grid point trained "
            + "on each selection seed with a validation split carved from the training data of each experience (test sets not read), "
            + "scored by final ACC on that validation data; the highest mean wins (ties: the earliest trained, grid order first); "
            + "a tune block's \"extend\" adds values beyond a grid's edge while the choice sits there")
        for r in records {
            let g = try tuning.createGroup(r.variant)
            let p = r.points.count, s = r.seeds.count
            let scores = try g.write(r.scores.flatMap { $0 }, shape: [p, s], name: "scores")
            try scores.attributes.set("meaning", "scores[point][seed]: final ACC on the validation split (NaN: the selection run failed or diverged)")
            try scores.attributes.set("units", "fraction correct (0..1)")
            let flops = try g.write(r.flops.flatMap { $0.map(Int64.init) }, shape: [p, s], name: "training_flops")
            try flops.attributes.set("meaning", "training FLOPs of each selection run (TrainingBudget conventions)")
            try flops.attributes.set("units", "FLOPs")
            if r.runIds.count == p {
                let ids = try g.write(r.runIds.flatMap { $0 }, name: "run_ids")
                try ids.attributes.set("meaning", "run id of each selection run, point-major (run_ids[point * seeds + seed]): the digest of its resolved configuration, by which a resumed command reuses it")
                let wall = try g.write(r.runSeconds.flatMap { $0 }, shape: [p, s], name: "run_wall_seconds")
                try wall.attributes.set("meaning", "wall time of each selection run (a timing: differs between runs of the same file)")
                try wall.attributes.set("units", "seconds")
            }
            try g.attributes.set("record_json", r.jsonValue.canonicalText())
            try g.attributes.set("chosen_index", Int64(r.chosen ?? -1))
            try g.attributes.set("wall_seconds", r.wallSeconds)
        }
    }
}
