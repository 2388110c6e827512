import ContinualCore
import ContinualFederated
import ContinualMetrics

/// FedBuff (Nguyen et al. 2022, Algorithm 1; `fedbuff`): asynchronous buffered aggregation.
/// A client's update arrives after its round's time on the device (training FLOPs at the
/// profile's rate, slowed by a log-normal load drawn per round and client; or at once with
/// `delay: "none"`); updates arriving before the next round's downloads enter the buffer in
/// (time, client id) order, and every K-th arrival is a server step of the staleness-weighted
/// mean (`BufferedAggregation`). A client whose update is still in flight is not started again.
/// The trace is written to `federation/fedbuff/` (`FedBuffTrace`).
struct FedBuff: FederatedAlgorithm {
    let config: FedBuffConfig
    let seed: UInt64
    let traffic: TrainingTraffic
    let profile: DeviceProfile
    var buffer: BufferedAggregation
    /// Updates in flight, ordered by arrival time then client id, and the download rounds of the
    /// buffered ones.
    var inFlight: [(time: Double, round: Int, arrival: BufferedAggregation.Arrival)] = []
    var bufferedRounds: [Int] = []
    var trace = FedBuffTrace()
    /// The server model version the round's clients download.
    var downloadVersion = 0

    init?(_ setup: AlgorithmSetup) {
        guard let fb = setup.fed.fedbuff else { return nil }
        config = fb
        seed = setup.config.seed
        traffic = setup.traffic
        profile = setup.profile
        buffer = fb.buffer
    }

    mutating func admit(_ invited: [Int]) -> [Int] {
        let busy = Set(inFlight.map(\.arrival.client))
        let admitted = invited.filter { !busy.contains($0) }
        trace.busy.append(invited.count - admitted.count)
        downloadVersion = buffer.version
        return admitted
    }

    func afterLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ trained: TrainedRound,
                         _ upload: inout RoundEntry, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        guard config.delay == .device else { return nil }
        // The straggler model's draw, per round and client.
        var load = RandomSource(seed: seed, stream: "federation.straggler.\(round.round).\(c.id)")
        let slowdown = _exp(config.slowdownSpread * load.normal())
        let flops = EnergyEstimate(localRound: trained.record, traffic: traffic, profile: profile).flops
        upload.delay = Double(flops) / profile.flopsPerSecond * slowdown
        return nil
    }

    mutating func serverStep(round r: Int, entries: [RoundEntry], server: inout ServerModel) throws -> Bool {
        for e in entries where e.completed {
            inFlight.append((Double(r) * config.roundSeconds + e.delay, r,
                             .init(client: e.id, version: downloadVersion, update: ClientUpdate(delta: e.delta, samples: e.samples))))
        }
        inFlight.sort { ($0.time, $0.arrival.client) < ($1.time, $1.arrival.client) }
        let end = Double(r + 1) * config.roundSeconds
        var taken = 0
        while taken < inFlight.count, inFlight[taken].time < end {
            let next = inFlight[taken]
            taken += 1
            bufferedRounds.append(next.round)
            guard let step = buffer.receive(next.arrival) else { continue }
            trace.stepRound.append(r)
            trace.stepTime.append(next.time)
            trace.stepClients.append(step.clients)
            trace.stepDownloadRounds.append(bufferedRounds)
            trace.stepStaleness.append(step.staleness)
            trace.stepWeights.append(step.weights)
            bufferedRounds = []
            try server.apply(step.delta, round: r)
        }
        inFlight.removeFirst(taken)
        return true
    }

    func encodeState(into w: inout ByteWriter) {
        w.int(downloadVersion)
        w.int(buffer.version)
        w.int(buffer.buffer.count)
        for a in buffer.buffer { Self.encode(a, into: &w) }
        w.int(inFlight.count)
        for f in inFlight {
            w.doubles([f.time])
            w.int(f.round)
            Self.encode(f.arrival, into: &w)
        }
        w.ints(bufferedRounds)
        trace.encode(into: &w)
    }

    mutating func restoreState(from r: inout ByteReader) throws {
        downloadVersion = try r.int()
        let version = try r.int()
        let buffered = try (0..<r.count(elementSize: 8)).map { _ in try Self.arrival(&r) }
        guard buffer.restore(version: version, buffer: buffered) else {
            throw CheckpointError.mismatch("FedBuff's buffer of \(buffered.count) updates at version \(version) does not fit buffer_size \(config.bufferSize)")
        }
        inFlight = try (0..<r.count(elementSize: 8)).map { _ in
            let time = try r.doubles()
            guard time.count == 1 else { throw CheckpointError.mismatch("FedBuff: an update in flight without its arrival time") }
            return (time[0], try r.int(), try Self.arrival(&r))
        }
        bufferedRounds = try r.ints()
        trace = try FedBuffTrace(reading: &r)
    }

    static func encode(_ a: BufferedAggregation.Arrival, into w: inout ByteWriter) {
        w.int(a.client)
        w.int(a.version)
        w.int(a.update.samples)
        w.doubles([a.update.steps, a.update.loss])
        w.floats(a.update.delta)
    }

    static func arrival(_ r: inout ByteReader) throws -> BufferedAggregation.Arrival {
        let client = try r.int(), version = try r.int(), samples = try r.int(), d = try r.doubles()
        guard d.count == 2 else { throw CheckpointError.mismatch("FedBuff: a buffered update without its steps and loss") }
        return .init(client: client, version: version, update: ClientUpdate(delta: try r.floats(), samples: samples, steps: d[0], loss: d[1]))
    }

    func report(into outcome: inout FederationOutcome, finals: [ClientFinal], clients: Int) {
        var t = trace
        t.inFlightAtEnd = inFlight.count
        t.bufferedAtEnd = buffer.buffer.count
        outcome.fedbuff = t
    }
}
