import ContinualCore
import ContinualFederated

extension FederationEngine {
    /// Secure aggregation's extra bytes (Bonawitz et al. 2017, without dropouts): each
    /// participant advertises two 32-byte public keys and receives everyone's, sends an
    /// encrypted pair of shares (≈ 80 B) to each other participant and receives theirs, and
    /// uploads its masked update densely in a 32-bit ring (4 B per coordinate). With client
    /// failure (Bonawitz et al. §4, round 4): every client that started the round (completed,
    /// dropped or straggling) took part in the key exchange; those whose masked update did not
    /// arrive are dropouts, and each survivor uploads one 32-byte share of each dropout's mask
    /// key so the server can remove their pairwise masks — the recovery cost.
    func chargeSecureAggregation(_ all: inout [RoundEntry]) {
        guard setup.fed.secureAggregation, setup.fed.share != .none else { return }
        let completed = all.filter(\.completed).count
        let failed = all.filter { $0.dropped || $0.straggler }.count
        let m = completed + failed
        // A survivor's masked upload: its update, and what the algorithms send beside it that the
        // server also sums (SCAFFOLD's Δcᵢ).
        let masked = 4 * (setup.sharedCount + algorithms.reduce(0) { $0 + $1.extraFloats.up })
        for i in all.indices where all[i].completed || all[i].dropped || all[i].straggler {
            all[i].bytesUp = 64 + (m - 1) * 80 + (all[i].completed ? masked + failed * 32 : 0)
            all[i].bytesDown += (m - 1) * (64 + 80)
        }
    }

    /// Adds each of this rank's clients' bytes and energy (training and radio) to its tallies.
    func charge(_ all: [RoundEntry]) throws {
        for e in all where e.id % setup.size == setup.rank {
            guard let k = table.slot[e.id] else {
                throw FederationRunner.Failure(description: "client \(e.id) has no slot on rank \(setup.rank)")
            }
            table.clients[k].bytesUp += e.bytesUp
            table.clients[k].bytesDown += e.bytesDown
            table.clients[k].joules += e.joules + Double(e.bytesUp + e.bytesDown) * setup.fed.radioJoulesPerByte
        }
    }

    /// The server step: an algorithm's own (FedBuff), or the synchronous one.
    mutating func serverStep(_ r: Int, _ all: [RoundEntry]) throws {
        for i in algorithms.indices {
            if try algorithms[i].serverStep(round: r, entries: all, server: &server) { return }
        }
        guard setup.fed.share != .none else { return }
        try synchronousStep(r, all)
    }

    /// The rule's aggregate of the completed updates (or DP-FedAvg's noisy mean); the algorithms'
    /// server state; the aggregate transformed by the algorithms and applied with the server
    /// optimizer; the privacy accountant.
    mutating func synchronousStep(_ r: Int, _ all: [RoundEntry]) throws {
        let fed = setup.fed, N = setup.N
        let completed = all.filter(\.completed)
        let updates = completed.map { ClientUpdate(delta: $0.delta, samples: $0.samples, steps: $0.steps, loss: $0.loss) }
        var aggregate: [Float]? = nil
        if let clip = fed.clipNorm {
            // DP-FedAvg: the mechanism releases noise even when no client took part.
            var noise = RandomSource(seed: setup.config.seed, stream: "federation.noise.\(r)")
            let dp = GaussianAggregation(clipNorm: clip, noiseMultiplier: fed.noiseMultiplier)
            if updates.isEmpty {
                let sd = fed.noiseMultiplier * clip
                aggregate = (0..<setup.sharedCount).map { _ in Float((sd > 0 ? sd * noise.normal() : 0) / (q * Double(N))) }
            } else {
                aggregate = try dp.aggregate(updates, expectedClients: q * Double(N), random: &noise)
            }
        } else if !updates.isEmpty {
            aggregate = try Self.robustAggregate(rule, updates)
        }
        for i in algorithms.indices { algorithms[i].updateServerState(completed, clients: N) }
        if let aggregate {
            let applied = algorithms.reduce(aggregate) { $1.transform($0) }
            if setup.fed.trace?.traces(r) ?? false { traceAggregate = (aggregate, applied) }
            try server.apply(applied, round: r)
        }
        if fed.noiseMultiplier > 0 { accountant.compose(samplingRate: q, noiseMultiplier: fed.noiseMultiplier) }
    }

    /// The rule's aggregate, or nil when the round has too few updates for it (a round without
    /// aggregation, recorded as such); other aggregation errors end the run.
    static func robustAggregate(_ rule: AggregationRule, _ updates: [ClientUpdate]) throws -> [Float]? {
        let result: Result<[Float], AggregationError> = Result { () throws(AggregationError) -> [Float] in
            try rule.aggregate(updates)
        }
        switch result {
        case .success(let value): return value
        case .failure(let error):
            if case .tooFewClients = error { return nil }
            throw FederationRunner.Failure(description: error.description)
        }
    }

    /// The round's numbers in the outcome (per round: invitations, traffic, energy, ε, …).
    mutating func record(invited: Int, _ all: [RoundEntry]) {
        let fed = setup.fed
        let completed = all.filter(\.completed)
        outcome.invited.append(invited)
        outcome.available.append(all.filter { $0.available }.count)
        outcome.completed.append(completed.count)
        outcome.adversarial.append(completed.filter(\.adversary).count)
        outcome.bytesUp.append(all.reduce(0) { $0 + $1.bytesUp })
        outcome.bytesDown.append(all.reduce(0) { $0 + $1.bytesDown })
        outcome.trainingJoules.append(all.reduce(0.0) { $0 + $1.joules })
        outcome.radioJoules.append(Double(all.reduce(0) { $0 + $1.bytesUp + $1.bytesDown }) * fed.radioJoulesPerByte)
        outcome.meanUpdateNorm.append(completed.isEmpty ? .nan
            : completed.reduce(0.0) { $0 + ClientUpdate(delta: $1.delta, samples: $1.samples).l2Norm } / Double(completed.count))
        outcome.epsilon.append(fed.noiseMultiplier > 0 ? accountant.epsilon(delta: fed.delta).epsilon
                               : (fed.clipNorm != nil ? .infinity : .nan))
        outcome.aggregated.append(server.aggregated)
        outcome.dropped.append(all.filter(\.dropped).count)
        outcome.stragglers.append(all.filter(\.straggler).count)
        outcome.samplesTrained.append(all.reduce(0) { $0 + $1.processed })
    }
}
