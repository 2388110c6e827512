import ContinualHDF5

extension ResultsWriter {
    /// `runs/<id>/federation/`: per round (participation, bytes, energy, ε, global and personal
    /// accuracy), per client (invitations, participation, bytes, energy, adversary, device
    /// pattern) and the final global model's accuracy per evaluated client. Per-client accuracy
    /// matrices and metrics are in `population/` (its users are the evaluated clients).
    static func writeFederation(_ f: FederationOutcome, into run: HDF5Group) throws {
        let g = try run.createGroup("federation")
        try writeFederationAttributes(f, into: g)
        try writeRoundSeries(f, into: g)
        if let trace = f.fedbuff, let fb = f.config.fedbuff { try writeFedBuff(trace, fb, into: g) }
        if let trace = f.trace { try writeFederationTrace(trace, into: g) }

        let E = f.evaluatedRounds.count
        let evaluation = try g.write(f.evaluatedRounds.map(Int64.init), shape: [E], name: "evaluated_round")
        try evaluation.attributes.set("meaning", "round after which each evaluation was taken")
        try evaluation.makeDimensionScale(name: "evaluated_round")
        try along(evaluation, in: g, f.globalAccuracy, "global_accuracy", "mean accuracy of the global model on the evaluated clients' current test data (NaN unless share = all)")
        try along(evaluation, in: g, f.personalAccuracy, "personal_accuracy", "mean accuracy of the model each phone predicts with, on its current test data")

        try writeClientSeries(f, into: g)
        try writeEvaluatedClients(f, evaluations: E, into: g)
        if let pc = f.config.partition, !f.partitionTrainCounts.isEmpty {
            // The split of the labelled stream among the clients (federation.partition), as drawn.
            let a = g.attributes
            try a.set("partition", pc.type.rawValue)
            if pc.type == .dirichlet { try a.set("partition_alpha", pc.alpha) }
            if pc.type == .classes { try a.set("partition_classes_per_client", Int64(pc.classesPerClient)) }
            try a.set("partition_draws", Int64(f.partitionAttempts))
            let n = f.partitionTrainCounts.count
            for (values, name, meaning) in [(f.partitionTrainCounts, "partition_train", "training samples of each client (row) in each experience"),
                                            (f.partitionTestCounts, "partition_test", "test samples of each client (row) in each experience"),
                                            (f.partitionLabelCounts, "partition_label_counts", "training samples of each client (row) per label (partition_labels)")] {
                let d = try g.write(values.flatMap { $0 }.map(Int64.init), shape: [n, values.first?.count ?? 0], name: name)
                try d.attributes.set("meaning", meaning)
            }
            _ = try g.write(f.partitionLabels.map(Int64.init), shape: [f.partitionLabels.count], name: "partition_labels")
        }
    }

    /// The federation group's settings and totals: clients, rounds, sampling, sharing, rules,
    /// parameters, ε (and its accountant), global ACC, updates and wall times.
    private static func writeFederationAttributes(_ f: FederationOutcome, into g: HDF5Group) throws {
        let a = g.attributes
        try a.set("meaning", "federated simulation: datasets indexed by round, client or evaluation")
        try a.set("clients", Int64(f.clients))
        try a.set("rounds", Int64(f.config.rounds))
        try a.set("sampling_rate", f.samplingRate)
        try a.set("sampling", f.config.sampling.rawValue)
        try a.set("availability", f.config.availability.rawValue)
        try a.set("share", f.config.share.rawValue)
        try a.set("personal", f.config.personal.rawValue)
        try a.set("aggregation", f.config.aggregation.rawValue)
        try a.set("server_optimizer", f.config.serverOptimizer.rawValue)
        try a.set("encoding", f.config.encoding.rawValue)
        try a.set("consolidate", f.config.consolidate.rawValue)
        try a.set("local_data", f.config.localData.rawValue)
        try a.set("shared_parameters", Int64(f.sharedParameters))
        try a.set("total_parameters", Int64(f.totalParameters))
        try a.set("final_epsilon", f.finalEpsilon)
        // The one definition of global ACC (FederationOutcome.globalACC), stored so every reader prints the same number.
        try a.set("global_acc", f.globalACC)
        try a.set("client_updates", Int64(f.clientUpdates))
        try a.set("setup_seconds", f.setupSeconds)
        try a.set("round_seconds", f.roundSeconds)
        try a.set("client_train_seconds", f.clientTrainSeconds)
        if f.config.noiseMultiplier > 0 {
            try a.set("delta", f.config.delta)
            try a.set("accountant", "RDP of the Poisson-subsampled Gaussian mechanism (Mironov et al. 2019), converted to "
                + "(ε, δ) as in Google's dp-accounting; assumes each client is included independently with probability q")
        }
    }

    /// A 1-D dataset of `g` along `scale` (round, evaluation or client), with its meaning and units.
    private static func along<T: HDF5Scalar>(_ scale: HDF5Dataset, in g: HDF5Group, _ v: [T], _ name: String, _ meaning: String,
                                             _ units: String? = nil) throws {
        let d = try g.write(v, shape: [v.count], name: name)
        try d.attributes.set("meaning", meaning)
        if let units { try d.attributes.set("units", units) }
        try d.attachDimensionScale(scale, toDimension: 0)
    }

    /// The `round` scale and the per-round series: participation, bytes, energy, update norms,
    /// ε, samples, aggregation (and client failures when configured).
    private static func writeRoundSeries(_ f: FederationOutcome, into g: HDF5Group) throws {
        let R = f.invited.count
        let round = try g.write((0..<R).map { Int64($0) }, shape: [R], name: "round")
        try round.makeDimensionScale(name: "round")
        func perRound<T: HDF5Scalar>(_ v: [T], _ name: String, _ meaning: String, _ units: String? = nil) throws {
            try along(round, in: g, v, name, meaning, units)
        }
        try perRound(f.invited.map(Int64.init), "invited", "clients sampled in the round")
        try perRound(f.available.map(Int64.init), "available", "invited clients whose device allowed training that day")
        try perRound(f.completed.map(Int64.init), "completed", "clients whose update reached the aggregate")
        try perRound(f.adversarial.map(Int64.init), "adversarial", "completed clients that were adversaries")
        try perRound(f.bytesUp.map(Int64.init), "bytes_up", "bytes sent by all clients in the round", "bytes")
        try perRound(f.bytesDown.map(Int64.init), "bytes_down", "bytes received by all clients in the round", "bytes")
        try perRound(f.trainingJoules, "training_joules", "energy of all local training in the round", "J")
        try perRound(f.radioJoules, "radio_joules", "energy of the round's transfers", "J")
        try perRound(f.meanUpdateNorm, "mean_update_norm", "mean L2 norm of the received updates, before clipping")
        try perRound(f.epsilon, "epsilon", "ε after the round at δ (NaN: no noise; inf: clipping without noise)")
        try perRound(f.samplesTrained.map(Int64.init), "samples_trained", "rows processed by the round's local training (all clients)")
        try perRound(f.aggregated.map { Int8($0 ? 1 : 0) }, "aggregated", "1 if the server updated the model this round")
        if f.config.dropoutProbability > 0 || f.config.roundDeadline != nil {
            // Client failure (written only when configured, so other runs' files keep their layout).
            try perRound(f.dropped.map(Int64.init), "dropped", "clients that started the round and dropped out before uploading (their update never reached the server)")
            try perRound(f.stragglers.map(Int64.init), "stragglers", "clients whose local round missed round_deadline (their update was discarded)")
        }
    }

    /// The `client` scale and the per-client series: invitations, participations, adversaries,
    /// bytes, energy, device pattern (and failures when configured).
    private static func writeClientSeries(_ f: FederationOutcome, into g: HDF5Group) throws {
        let n = f.clients
        let client = try g.write((0..<n).map { Int64($0) }, shape: [n], name: "client")
        try client.makeDimensionScale(name: "client")
        func perClient<T: HDF5Scalar>(_ v: [T], _ name: String, _ meaning: String, _ units: String? = nil) throws {
            try along(client, in: g, v, name, meaning, units)
        }
        try perClient(f.invitations.map(Int64.init), "invitations", "rounds the client was sampled in")
        try perClient(f.participations.map(Int64.init), "participations", "rounds whose aggregate got the client's update")
        try perClient(f.isAdversary.map { Int8($0 ? 1 : 0) }, "adversary", "1 if the client sends poisoned updates")
        try perClient(f.clientBytesUp.map(Int64.init), "client_bytes_up", "bytes the client sent over the run", "bytes")
        try perClient(f.clientBytesDown.map(Int64.init), "client_bytes_down", "bytes the client received over the run", "bytes")
        try perClient(f.clientJoules, "client_joules", "energy of the client's training and transfers over the run", "J")
        _ = try g.write(f.devicePattern, name: "device_pattern")
        if f.config.dropoutProbability > 0 || f.config.roundDeadline != nil {
            try perClient(f.clientDropouts.map(Int64.init), "client_dropouts", "rounds in which the client dropped out mid-round")
            try perClient(f.clientStraggles.map(Int64.init), "client_straggles", "rounds in which the client missed the deadline")
        }
    }

    /// The evaluated clients' ids, the final global model's accuracy on each, and the accuracy
    /// quantiles over them at each of the `E` evaluations.
    private static func writeEvaluatedClients(_ f: FederationOutcome, evaluations E: Int, into g: HDF5Group) throws {
        let m = f.evaluatedClients.count
        let evaluated = try g.write(f.evaluatedClients.map(Int64.init), shape: [m], name: "evaluated_client")
        try evaluated.attributes.set("meaning", "ids of the clients whose models are evaluated (population/ is indexed by them)")
        let T = f.globalFinalAccuracy.first?.count ?? 0
        if T > 0, f.globalFinalAccuracy.count == m {
            let d = try g.write(f.globalFinalAccuracy.flatMap { $0 }, shape: [m, T], name: "global_final_accuracy")
            try d.attributes.set("meaning", "accuracy of the final global model on each evaluated client's experience j")
        }
        let q = f.personalQuantiles.first?.count ?? 0
        if E > 0, q > 0 {
            let p = try g.write(f.personalQuantiles.flatMap { $0 }, shape: [E, q], name: "personal_accuracy_quantiles")
            try p.attributes.set("meaning", "quantiles (population.quantiles levels) over evaluated clients, per evaluation")
            let gq = try g.write(f.globalQuantiles.flatMap { $0 }, shape: [E, q], name: "global_accuracy_quantiles")
            try gq.attributes.set("meaning", "quantiles (population.quantiles levels) over evaluated clients, per evaluation")
        }
    }

    /// `federation/fedbuff/`: FedBuff's server steps (one row each, K buffered updates per row),
    /// per-step mean staleness, the run's staleness histogram and the per-round busy clients.
    static func writeFedBuff(_ t: FedBuffTrace, _ fb: FedBuffConfig, into federation: HDF5Group) throws {
        let g = try federation.createGroup("fedbuff")
        let a = g.attributes
        try a.set("meaning", "buffered asynchronous aggregation (Nguyen et al. 2022): datasets indexed by server step")
        try a.set("buffer_size", Int64(fb.bufferSize))
        try a.set("staleness_exponent", fb.stalenessExponent)
        try a.set("staleness_weight", "s(tau) = (1 + tau)^-staleness_exponent, tau = server steps since the client's download")
        try a.set("weighting", fb.weighting.rawValue)
        try a.set("delay", fb.delay.rawValue)
        try a.set("round_seconds", fb.roundSeconds)
        try a.set("server_steps", Int64(t.stepRound.count))
        try a.set("in_flight_at_end", Int64(t.inFlightAtEnd))
        try a.set("buffered_at_end", Int64(t.bufferedAtEnd))
        let n = t.stepRound.count, k = fb.bufferSize
        func write<T: HDF5Scalar>(_ v: [T], _ shape: [Int], _ name: String, _ meaning: String) throws {
            let d = try g.write(v, shape: shape, name: name)
            try d.attributes.set("meaning", meaning)
        }
        try write(t.busy.map(Int64.init), [t.busy.count], "busy", "invited clients per round skipped because their previous update was in flight")
        guard n > 0 else { return }   // no server step: no per-step dataset
        try write(t.stepRound.map(Int64.init), [n], "step_round", "round in whose interval the server step happened")
        try write(t.stepTime, [n], "step_time", "simulated time of the step: the arrival that filled the buffer (seconds)")
        try write(t.meanStaleness, [n], "mean_staleness", "mean staleness of the step's buffered updates")
        try write(t.stepClients.flatMap { $0 }.map(Int64.init), [n, k], "step_clients", "buffered clients of each step, in arrival order")
        try write(t.stepDownloadRounds.flatMap { $0 }.map(Int64.init), [n, k], "step_download_rounds", "round in which each buffered client downloaded the model")
        try write(t.stepStaleness.flatMap { $0 }.map(Int64.init), [n, k], "step_staleness", "staleness tau of each buffered update")
        try write(t.stepWeights.flatMap { $0 }, [n, k], "step_weights", "staleness weight s(tau) of each buffered update")
        let h = t.stalenessHistogram
        try write(h.map(Int64.init), [h.count], "staleness_histogram", "applied updates with staleness 0, 1, 2, ...")
    }
}
