import ContinualHDF5

extension ResultsWriter {
    /// `federation/trace/` (`federation.trace`): `shared_index` and one group `round_<r>` per
    /// traced round with the server's arrays and one row per client of the round
    /// (docs/results-format.md, "The federated trace").
    static func writeFederationTrace(_ t: FederationTrace, into federation: HDF5Group) throws {
        let g = try federation.createGroup("trace")
        try g.attributes.set("meaning", "per traced round: the server step's inputs and outputs and each client's upload and state (federation.trace)")
        try g.attributes.set("rounds", Int64(t.rounds.count))
        let index = try g.write(t.sharedIndex.map(Int64.init), shape: [t.sharedIndex.count], name: "shared_index")
        try index.attributes.set("meaning", "index into the model's parameters of each shared (travelling) parameter, in upload order")
        for traced in t.rounds {
            let digits = String(traced.round)
            let r = try g.createGroup("round_" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits)
            try r.attributes.set("round", Int64(traced.round))
            try writeTracedServer(traced, into: r)
            try writeTracedClients(traced.entries.filter { $0.available || $0.dropped }, into: r)
        }
    }

    /// The server's arrays of one traced round (an empty one is not written).
    private static func writeTracedServer(_ t: TracedRound, into g: HDF5Group) throws {
        for (values, name, meaning) in [
            (t.globalBefore, "global_before", "every parameter of the global model before the round's server step"),
            (t.globalAfter, "global_after", "every parameter of the global model after it"),
            (t.aggregate, "aggregate", "the rule's aggregate of the updates (DP-FedAvg: the clipped, noised mean), shared parameters"),
            (t.serverUpdate, "server_update", "the aggregate after the algorithms' transforms: what the server optimizer applied"),
            (t.serverFirst, "server_first_moment", "the server optimizer's first moment after the round (FedAvgM's velocity, m)"),
            (t.serverSecond, "server_second_moment", "the server optimizer's second moment after the round (v)"),
            (t.stateBefore, "server_state_before", "the algorithm's server state before the round (SCAFFOLD's c, FedDyn's h)"),
            (t.stateAfter, "server_state_after", "the algorithm's server state after the round"),
        ] where !values.isEmpty {
            let d = try g.write(values, shape: [values.count], name: name)
            try d.attributes.set("meaning", meaning)
        }
    }

    /// One row per client that trained a federated round (in client order).
    private static func writeTracedClients(_ es: [RoundEntry], into g: HDF5Group) throws {
        let k = es.count
        func column<T: HDF5Scalar>(_ v: [T], _ name: String, _ meaning: String) throws {
            let d = try g.write(v, shape: [k], name: name)
            try d.attributes.set("meaning", meaning)
        }
        try column(es.map { Int64($0.id) }, "client", "client id of each row")
        try column(es.map { Int8($0.completed ? 1 : 0) }, "completed", "1 if the update reached the server")
        try column(es.map { Int8($0.dropped ? 1 : 0) }, "dropped", "1 if the client dropped out mid-round")
        try column(es.map { Int8($0.straggler ? 1 : 0) }, "straggler", "1 if the update missed round_deadline")
        try column(es.map { Int8($0.adversary ? 1 : 0) }, "adversary", "1 if the client is an adversary")
        try column(es.map { Int64($0.samples) }, "samples", "samples of the client's round (the FedAvg weight)")
        try column(es.map { Int64($0.bytesUp) }, "bytes_up", "bytes the client sent in the round")
        try column(es.map { Int64($0.bytesDown) }, "bytes_down", "bytes the client received in the round")
        try column(es.map(\.steps), "normaliser", "FedNova's a_i (0 otherwise)")
        try column(es.map(\.loss), "loss", "q-FedAvg's F_k: mean loss at the received model (0 otherwise)")
        try column(es.map(\.delay), "delay", "FedBuff: seconds from download to arrival (0 otherwise)")
        try column(es.map { Int64($0.traced?.steps ?? 0) }, "local_steps", "local steps of the round")
        try column(es.map { Int64($0.traced?.appliedSteps ?? 0) }, "applied_steps", "local steps applied (not skipped for overflow)")
        if es.contains(where: { !($0.traced?.alphaBefore.isNaN ?? true) }) {
            try column(es.map { $0.traced?.alphaBefore ?? .nan }, "apfl_alpha_before", "APFL's alpha before the round")
            try column(es.map { $0.traced?.alphaAfter ?? .nan }, "apfl_alpha_after", "APFL's alpha after the round")
        }
        try writeTracedData(es.map(\.traced), into: g)
        for (rows, name, meaning) in [
            (es.map(\.delta), "update", "the update the server received (decoded), shared parameters"),
            (es.map { $0.traced?.rawUpdate ?? [] }, "update_raw", "the update before the encoding"),
            (es.map(\.control), "control_delta", "SCAFFOLD's uploaded Δc_i"),
            (es.map { $0.traced?.stateBefore ?? [] }, "client_state_before", "SCAFFOLD's c_i or FedDyn's ∇L_k before the round (NaN: never set, i.e. 0)"),
            (es.map { $0.traced?.stateAfter ?? [] }, "client_state_after", "SCAFFOLD's c_i or FedDyn's ∇L_k after the round"),
            (es.map { $0.traced?.local ?? [] }, "local_model", "every parameter of the client's learner after its local round"),
            (es.map { $0.traced?.personalBefore ?? [] }, "personal_before", "the personal model before the round (Ditto, APFL)"),
            (es.map { $0.traced?.personalAfter ?? [] }, "personal_after", "the personal model after the round"),
            (es.map { $0.traced?.moonPrevious ?? [] }, "moon_previous", "MOON's previous model (hidden layers) the round's term used (NaN: none)"),
            (es.map { $0.traced?.teacher ?? [] }, "lwf_previous", "the lwf strategy's old model the round distilled (FLwF-2T's first teacher)"),
        ] {
            guard let width = rows.map(\.count).max(), width > 0 else { continue }
            let flat = rows.flatMap { $0.count == width ? $0 : [Float](repeating: .nan, count: width) }
            let d = try g.write(flat, shape: [k, width], name: name)
            try d.attributes.set("meaning", meaning + "; a NaN row: the client has none")
        }
    }

    /// The clients' round data, concatenated in row order: `data_count` [k], `data_inputs`
    /// [Σ rows, features], `data_labels` [Σ rows].
    private static func writeTracedData(_ traces: [ClientTrace?], into g: HDF5Group) throws {
        let d = traces.compactMap { $0?.dimension }.max() ?? 0
        guard d > 0 else { return }
        let counts = traces.map { $0?.labels.count ?? 0 }, n = counts.reduce(0, +)
        for (values, shape, name, meaning) in [
            (counts.map(Int64.init), [counts.count], "data_count", "rows of each client's round data"),
            (traces.flatMap { $0?.labels ?? [] }.map(Int64.init), [n], "data_labels", "labels of the round data, client after client"),
        ] {
            let ds = try g.write(values, shape: shape, name: name)
            try ds.attributes.set("meaning", meaning)
        }
        let x = try g.write(traces.flatMap { $0?.inputs ?? [] }, shape: [n, d], name: "data_inputs")
        try x.attributes.set("meaning", "features of the round data the local round trained on, client after client")
        try writeTracedOrder(traces.map { $0?.order ?? [] }, "data_order", "the learner's", into: g)
        try writeTracedOrder(traces.map { $0?.personalOrder ?? [] }, "personal_order", "the personal learner's (Ditto, APFL)", into: g)
    }

    /// Each client's batch order, concatenated: `<name>_count` [k] and `<name>` [Σ] int32, the row
    /// (into the client's round data) each local step visited, step after step; not written when
    /// no client has one. Each pass over the data is cut into batches of `training.batch_size`
    /// in this order, the last partial.
    private static func writeTracedOrder(_ orders: [[Int]], _ name: String, _ whose: String, into g: HDF5Group) throws {
        guard orders.contains(where: { !$0.isEmpty }) else { return }
        let counts = try g.write(orders.map { Int64($0.count) }, shape: [orders.count], name: name + "_count")
        try counts.attributes.set("meaning", "rows \(whose) local steps visited in the round, per client (0: not stated)")
        let flat = orders.flatMap { $0.map(Int32.init) }
        let d = try g.write(flat, shape: [flat.count], name: name)
        try d.attributes.set("meaning", "row of the client's round data each of \(whose) local steps visited, step after step, client after client; "
            + "each pass over the data is cut into batches of training.batch_size in this order, the last one partial")
    }
}
