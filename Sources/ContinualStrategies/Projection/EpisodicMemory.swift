import ContinualCore

/// The per-experience episodic memory of GEM and A-GEM: after each experience, `perExperience`
/// samples drawn uniformly without replacement from its own training set (the plugin's seeded
/// stream), kept with the experience's route; and the mean task-loss gradient on a set of them.
struct EpisodicMemory: Equatable {
    var dimension: Int
    var features: [Float] = []
    var labels: [Int32] = []
    var routes: [Int32] = []
    /// Experience index of each stored sample.
    var experiences: [Int32] = []

    /// Classes of the head: restored labels must be in `0..<classes`.
    var classes: Int

    init(dimension: Int, classes: Int = Int(Int32.max)) {
        self.dimension = dimension
        self.classes = classes
    }

    var count: Int { labels.count }

    /// Stores `perExperience` random samples of `samples` (all if fewer) for experience `index`.
    mutating func store(_ samples: Samples, experience index: Int, route: Int32, perExperience: Int, rng: inout RandomSource) {
        var order = Array(0..<samples.count)
        rng.shuffle(&order)
        for k in order.prefix(perExperience).sorted() {
            features.append(contentsOf: samples.row(k))
            labels.append(samples.labels[k])
            routes.append(samples.routes?[k] ?? route)
            experiences.append(Int32(index))
        }
    }

    /// Bytes kept on the device: float32 features, int32 label, route and experience per sample.
    var bytes: Int { count * (4 * dimension + 12) }

    /// Adds the gradient of the mean task loss over `rows` (grouped by route, each group scaled by
    /// 1/rows.count so the sum is the mean's gradient) into `gradient`.
    func meanLossGradient(model: MLP, rows: [Int], workspace ws: Workspace, into gradient: UnsafeMutablePointer<Float>) {
        guard !rows.isEmpty else { return }
        let scale = 1 / Float(rows.count)
        var byRoute: [Int32: [Int]] = [:]
        for r in rows { byRoute[routes[r], default: []].append(r) }
        for route in byRoute.keys.sorted() {
            let group = byRoute[route]!
            var x = [Float]()
            x.reserveCapacity(group.count * dimension)
            for r in group { x.append(contentsOf: features[(r * dimension)..<((r + 1) * dimension)]) }
            let y = group.map { labels[$0] }
            ws.reserve(rows: group.count)
            _ = model.lossAndGradient(features: x, labels: y, count: group.count, route: Int(route), scale: scale,
                                      workspace: ws, gradient: gradient)
        }
    }

    func state(prefix: String) -> PluginState {
        PluginState(floats: ["\(prefix)features": features],
                    ints: ["\(prefix)labels": labels.map(Int64.init), "\(prefix)routes": routes.map(Int64.init),
                           "\(prefix)experiences": experiences.map(Int64.init)])
    }

    mutating func restore(_ state: PluginState, prefix: String) throws {
        guard let f = state.floats["\(prefix)features"], let l = state.ints["\(prefix)labels"],
              let r = state.ints["\(prefix)routes"], let e = state.ints["\(prefix)experiences"],
              l.count == r.count, l.count == e.count, f.count == l.count * dimension else {
            throw CheckpointError.mismatch("the episodic memory's state does not fit (dimension \(dimension))")
        }
        features = f
        labels = try PluginState.sampleIndices(l, "label", limit: classes)
        routes = try PluginState.sampleIndices(r, "route")
        experiences = try PluginState.sampleIndices(e, "experience number")
    }
}
