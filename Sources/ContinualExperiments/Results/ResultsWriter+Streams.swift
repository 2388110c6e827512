import ContinualCore
import ContinualHDF5

extension ResultsWriter {
    /// `runs/<id>/prequential/`: the online accuracy curve of a prequential run.
    static func writePrequential(_ c: PrequentialCurve, into run: HDF5Group) throws {
        let g = try run.createGroup("prequential")
        try g.attributes.set("window", Int64(c.window))
        try g.attributes.set("record_every", Int64(c.recordEvery))
        try g.attributes.set("meaning", "test-then-train: each training sample predicted before it is learned")
        let n = c.position.count
        let position = try g.write(c.position.map { Int64($0) }, shape: [n], name: "position")
        try position.attributes.set("meaning", "samples predicted so far (1-based stream position)")
        try position.makeDimensionScale(name: "position")
        for (name, values, meaning) in [
            ("window_accuracy", c.windowAccuracy, "accuracy over the last `window` predictions"),
            ("cumulative_accuracy", c.cumulativeAccuracy, "accuracy over all predictions so far"),
        ] {
            let d = try g.write(values, shape: [n], name: name)
            try d.attributes.set("meaning", meaning)
            try d.attributes.set("units", "fraction correct (0..1)")
            try d.attachDimensionScale(position, toDimension: 0)
        }
        let e = try g.write(c.experience.map { Int64($0) }, shape: [n], name: "experience")
        try e.attributes.set("meaning", "experience being streamed at each point")
        try e.attachDimensionScale(position, toDimension: 0)
        let s = try g.write(c.experienceStarts.map { Int64($0) }, shape: [c.experienceStarts.count], name: "experience_starts")
        try s.attributes.set("meaning", "samples seen before each experience started")
    }

    /// `population/final_parameters` (users × parameters): every user's final model, NaN rows for
    /// users that did not complete (`keep_models`; `continual export --user` reads it).
    static func writeUserModels(_ p: PopulationOutcome, into g: HDF5Group, scale user: HDF5Dataset) throws {
        let n = p.users
        guard p.finalParameters.count == n, let P = p.finalParameters.first(where: { !$0.isEmpty })?.count,
              p.finalParameters.allSatisfy({ $0.isEmpty || $0.count == P }) else { return }
        let rows = p.finalParameters.flatMap { $0.isEmpty ? [Float](repeating: .nan, count: P) : $0 }
        let d = try g.write(rows, shape: [n, P], name: "final_parameters")
        try d.attributes.set("meaning", "each user's final model, in the layout of the run's final_parameters (NaN: the user did not complete)")
        try d.attachDimensionScale(user, toDimension: 0)
    }

    /// `runs/<id>/population/`: per-user metrics and seeds, and the aggregate over users.
    static func writePopulation(_ p: PopulationOutcome, into run: HDF5Group) throws {
        let g = try run.createGroup("population")
        let a = g.attributes
        try a.set("users", Int64(p.users))
        try a.set("spread", p.config.spread)
        try a.set("seed", Int64(bitPattern: p.seed))
        try a.set("completed", Int64(p.status.filter { $0 == .completed }.count))
        try a.set("meaning", "one model per simulated user; datasets indexed by user")
        let n = p.users
        let user = try g.write((p.userIds ?? Array(0..<n)).map { Int64($0) }, shape: [n], name: "user")
        try user.makeDimensionScale(name: "user")
        func perUser<T: HDF5Scalar>(_ values: [T], _ name: String, _ meaning: String) throws {
            let d = try g.write(values, shape: [values.count], name: name)
            try d.attributes.set("meaning", meaning)
            try d.attachDimensionScale(user, toDimension: 0)
        }
        if let names = p.userNames {
            // A population read from a data file's user column: each index's user in that file.
            let d = try g.write(names, name: "user_name")
            try d.attributes.set("meaning", "the user's id in the data file (its user column)")
        }
        try writeUserModels(p, into: g, scale: user)
        try perUser(p.dataSeeds.map { Int64(bitPattern: $0) }, "data_seed", "seed of the user's generated data (int64 bit pattern)")
        try perUser(p.modelSeeds.map { Int64(bitPattern: $0) }, "model_seed", "seed of the user's model (int64 bit pattern)")
        try perUser(p.trainSeconds, "train_seconds", "training wall time of the user's model, seconds")
        _ = try g.write(p.status.map(\.rawValue), name: "status")
        _ = try g.write(p.messages, name: "message")
        let metrics = try g.createGroup("metrics")
        for (m, name) in p.metricNames.enumerated() {
            let d = try metrics.write(p.values[m], shape: [n], name: name)
            try d.attributes.set("meaning", p.metricMeanings[m])
            try d.attachDimensionScale(user, toDimension: 0)
        }
        let T = p.finalAccuracy.first?.count ?? 0
        if T > 0, p.finalAccuracy.allSatisfy({ $0.count == T }) {
            let f = try g.write(p.finalAccuracy.flatMap { $0 }, shape: [n, T], name: "final_accuracy")
            try f.attributes.set("meaning", "R[T-1][j]: accuracy on experience j after the whole stream, per user")
            try f.attachDimensionScale(user, toDimension: 0)
            if !p.matrices.isEmpty, p.matrices.allSatisfy({ $0.count == T }) {
                let m = try g.write(p.matrices.flatMap { $0.flatMap { $0 } }, shape: [n, T, T], name: "accuracy_matrices")
                try m.attributes.set("meaning", "R[i][j] per user: axis1 = trained through experience i, axis2 = evaluated experience j")
                try m.attachDimensionScale(user, toDimension: 0)
            }
        }
        let agg = try g.createGroup("aggregate")
        try agg.attributes.set("meaning", "over users that completed: mean, sample std and quantiles (linear interpolation) per metric")
        _ = try agg.write(p.metricNames, name: "metric")
        _ = try agg.write(p.config.quantiles, shape: [p.config.quantiles.count], name: "quantile_levels")
        _ = try agg.write(p.mean, shape: [p.mean.count], name: "mean")
        _ = try agg.write(p.std, shape: [p.std.count], name: "std")
        _ = try agg.write(p.quantiles.flatMap { $0 }, shape: [p.quantiles.count, p.config.quantiles.count], name: "quantiles")
        for (m, name) in p.metricNames.enumerated() {
            try agg.attributes.set(name + "_mean", p.mean[m])
            try agg.attributes.set(name + "_std", p.std[m])
        }
    }
}
