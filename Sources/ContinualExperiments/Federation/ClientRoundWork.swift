import ContinualCore
import ContinualMetrics

/// The local round's work, as the engine hands it to `FederatedAlgorithm.afterLocalRound`: only
/// this file makes one, after the round trained (the hooks' call order, enforced by the type).
struct TrainedRound {
    let record: ExperienceRecord
    /// Whether the update reaches the server (false: a straggler past `round_deadline`, whose
    /// upload the server never uses; the phone keeps its training).
    let arrives: Bool
    fileprivate init(record: ExperienceRecord, arrives: Bool) {
        self.record = record
        self.arrives = arrives
    }
}

/// One round's work of a client on its rank (clients in parallel, each by one worker): an
/// invited client whose device allows it trains a federated round and uploads; a client that
/// trains on its own (`FederatedAlgorithm.trainsAlone`) trains without the server.
struct ClientRoundWork: Sendable {
    let setup: FederationSetup
    let algorithms: [any FederatedAlgorithm]
    let round: Int
    /// The clients that start the round.
    let invited: Set<Int>
    /// The round's global parameters.
    let global: [Float]
    let errors: ErrorBox

    /// Whether `c` does any work this round.
    func trains(_ c: FederatedClient) -> Bool {
        invited.contains(c.id) || algorithms.contains { $0.trainsAlone(c, round: round) }
    }

    /// `c`'s round and what it contributed (sent to every rank).
    func run(_ c: inout FederatedClient, scratch: inout LoopScratch) -> RoundEntry {
        let r = round
        let end = c.schedule.arrival(r + 1)
        let p = c.schedule.period(ofRound: r)
        var e = RoundEntry()
        e.id = c.id
        e.adversary = c.adversary
        // The client's data for this round (regenerated unless held), released after it
        // unless the client keeps it (`FederationStorage`).
        let keep = setup.storage.retainsData || setup.isEvaluated.contains(c.id)
        defer { if !keep && c.holdsData { c.dropData() } }
        do {
            if !c.holdsData { try c.restoreData(from: setup.source(c.id).stream) }
            guard invited.contains(c.id) else {
                try alone(&c, period: p, end: end, &e, scratch: &scratch)
                return e
            }
            c.invitations += 1
            e.available = c.available[r]
            guard e.available, c.schedule.start(c.federatedCursor, round: r) < end else {
                if e.available { try alone(&c, period: p, end: end, &e, scratch: &scratch) }
                return e
            }
            return try federated(&c, period: p, end: end, e, scratch: &scratch)
        } catch let error as TrainingError {
            errors.record(c.id, "client \(c.id), round \(r): \(error.description)")
        } catch {
            errors.record(c.id, "client \(c.id), round \(r): \(error)")
        }
        return e
    }

    /// Training without the server, by the first algorithm that has it for `c` this round.
    func alone(_ c: inout FederatedClient, period p: Int, end: Int, _ e: inout RoundEntry,
               scratch: inout LoopScratch) throws {
        for algorithm in algorithms where algorithm.trainsAlone(c, round: round) {
            if let record = try algorithm.aloneRound(&c, round: round, period: p, end: end, scratch: &scratch) {
                e.joules = trainingJoules(record)
                e.processed = record.samplesProcessed
            }
            return
        }
    }

    /// A federated round: the received shared parameters, the algorithms' local round, the
    /// upload; a dropout loses the round, a straggler's upload is not used.
    func federated(_ c: inout FederatedClient, period p: Int, end: Int, _ entry: RoundEntry,
                   scratch: inout LoopScratch) throws -> RoundEntry {
        let fed = setup.fed
        var e = entry
        // Client failure, drawn per round and client: a dropout loses its whole round (the
        // phone's state at its start is kept), at a uniform point of the round.
        let dropAt = dropoutPoint(c.id)
        let atStart: FederatedClient? = dropAt == nil ? nil : c
        if fed.share != .none {
            for range in setup.shared { c.trainer.model.parameters.replaceSubrange(range, with: global[range]) }
        }
        let lo = c.schedule.start(c.federatedCursor, round: round)
        let local = ClientRound(round: round, period: p, lo: lo, end: end,
                               data: c.data(lo, end, flip: c.adversary && fed.attack == .labelFlip ? setup.classes : nil),
                               global: global, pass: setup.pass, config: setup.config)
        let traced = fed.trace?.traces(round) ?? false
        var trace = traced ? ClientTrace(before: c, data: local.data) : nil
        if traced { c.startBatchOrderLogs() }
        defer { if traced { c.endBatchOrderLogs(into: &trace) } }
        for algorithm in algorithms { try algorithm.beforeLocalRound(&c, local, &e) }
        var own: ExperienceRecord? = nil
        for algorithm in algorithms where own == nil { own = try algorithm.localRound(&c, local, scratch: &scratch) }
        let record = try own ?? c.trainRound(on: local.data, period: p, round: round, pass: setup.pass, scratch: &scratch,
                                             dataEnd: fed.consolidate == .experience ? c.schedule.finished(afterRound: round) : nil)
        let trained = TrainedRound(record: record, arrives: !late(c.id, record))
        var further: [ExperienceRecord] = []
        for algorithm in algorithms {
            if let w = try algorithm.afterLocalRound(&c, local, trained, &e, scratch: &scratch) { further.append(w) }
        }
        c.endBatchOrderLogs(into: &trace)
        trace?.finish(after: c, record)
        e.trace = trace.map(ClientTraceBox.init)
        c.federatedCursor = end
        upload(c, local, trained, further, into: &e)
        c.participations += 1
        if let at = dropAt, let start = atStart {
            // Dropped mid-round: the energy up to the drop and the download are spent;
            // nothing is uploaded, nothing of the round persists on the phone.
            var d = RoundEntry()
            d.id = e.id
            d.adversary = e.adversary
            d.available = true
            d.dropped = true
            d.bytesDown = e.bytesDown
            d.joules = e.joules * at
            d.processed = Int((Double(e.processed) * at).rounded(.down))
            c = start
            c.dropouts += 1
            return d
        }
        if !trained.arrives {
            // Too late: the phone keeps its training, the server never uses the update.
            e.completed = false
            e.straggler = true
            e.delta = []
            e.control = []
            e.bytesUp = 0
            c.participations -= 1
            c.straggles += 1
        }
        return e
    }

    /// The update Δ of the shared parameters (an adversary's attack applied), encoded, with its
    /// bytes (and what the algorithms send beside it), and the round's energy and rows.
    func upload(_ c: FederatedClient, _ local: ClientRound, _ trained: TrainedRound, _ further: [ExperienceRecord],
                into e: inout RoundEntry) {
        let fed = setup.fed, sharedCount = setup.sharedCount
        var delta = [Float](unsafeUninitializedCapacity: sharedCount) { d, count in
            c.trainer.model.parameters.withUnsafeBufferPointer { p in
                global.withUnsafeBufferPointer { g in
                    for range in setup.shared {
                        for i in range { d[count] = p[i] - g[i]; count += 1 }
                    }
                }
            }
        }
        if c.adversary {
            switch fed.attack {
            case .labelFlip: break
            case .scale: delta = delta.map { $0 * Float(fed.attackScale) }
            case .signFlip: delta = delta.map { -$0 * Float(fed.attackScale) }
            }
        }
        e.completed = true
        e.samples = local.data.count
        if fed.share != .none {
            if var t = e.traced, fed.updateEncoding != .float32 {
                t.rawUpdate = delta
                e.trace = ClientTraceBox(t)
            }
            let (decoded, bytes) = fed.updateEncoding.encode(delta)
            e.delta = decoded
            e.bytesUp = bytes
            e.bytesDown = 4 * sharedCount
            // What travels beside the update (SCAFFOLD: Δcᵢ up and c down), float32 each.
            let extra = algorithms.reduce((up: 0, down: 0)) { ($0.up + $1.extraFloats.up, $0.down + $1.extraFloats.down) }
            e.bytesUp += 4 * extra.up
            e.bytesDown += 4 * extra.down
        }
        e.joules = trainingJoules(trained.record)
        e.processed = trained.record.samplesProcessed
        for w in further {
            e.joules += trainingJoules(w)
            e.processed += w.samplesProcessed
        }
    }

    /// Where in the round client `id` drops out (a fraction), or nil when it does not.
    func dropoutPoint(_ id: Int) -> Double? {
        guard setup.fed.dropoutProbability > 0 else { return nil }
        var failure = RandomSource(seed: setup.config.seed, stream: "federation.dropout.\(round).\(id)")
        let u = failure.uniform(), at = failure.uniform()
        return u < setup.fed.dropoutProbability ? at : nil
    }

    /// Whether client `id`'s round misses `round_deadline`: its training FLOPs at the profile's
    /// rate, slowed by the phone's load (log-normal, drawn per round and client).
    func late(_ id: Int, _ record: ExperienceRecord) -> Bool {
        guard let deadline = setup.fed.roundDeadline else { return false }
        var load = RandomSource(seed: setup.config.seed, stream: "federation.straggler.\(round).\(id)")
        let slowdown = _exp(setup.fed.stragglerSpread * load.normal())
        let profile = setup.device.profile
        let flops = EnergyEstimate(localRound: record, traffic: setup.traffic, profile: profile).flops
        return Double(flops) / profile.flopsPerSecond * slowdown > deadline
    }

    /// Energy of one local round on the device: training FLOPs and memory traffic.
    func trainingJoules(_ record: ExperienceRecord) -> Double {
        EnergyEstimate(localRound: record, traffic: setup.traffic, profile: setup.device.profile).joules
    }
}
