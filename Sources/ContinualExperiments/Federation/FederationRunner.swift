import Foundation
import ContinualCore
import ContinualFederated
import ContinualMetrics
import ContinualScenarios
import ContinualStrategies

/// Runs a federated experiment (`"federation"` + `"population"`): rounds of client sampling,
/// device-gated local rounds with the run's strategy on every client's newly arrived data,
/// encoding, aggregation (FedAvg, robust rules or DP-FedAvg), the server optimizer, privacy
/// accounting, and evaluation of the global and personal models (see `FederationConfig` for the
/// semantics and the choices made).
///
/// Determinism: every random choice is drawn from a stream named by the run seed and the round or
/// client (sampling, noise, adversaries, devices, shuffles), clients train independently of one
/// another within a round, and the server sums their updates in client-id order. Results are
/// therefore bit-identical for any number of threads and of MPI ranks (`FederationTransport`).
public enum FederationRunner {
    /// The materialised clients of this rank (`FederationStorage`), in the order they were built,
    /// and each one's slot by client id: slots written by exactly one worker each within a
    /// parallel section.
    final class Table: @unchecked Sendable {
        var clients: [FederatedClient] = []
        private(set) var slot: [Int: Int] = [:]
        init() {}
        func contains(_ id: Int) -> Bool { slot[id] != nil }
        func append(_ client: FederatedClient) {
            slot[client.id] = clients.count
            clients.append(client)
        }
    }

    final class ErrorBox: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var first: (Int, String)? = nil
        func record(_ id: Int, _ message: String) {
            lock.lock()
            if first == nil || id < first!.0 { first = (id, message) }
            lock.unlock()
        }
    }

    /// What one client contributed to a round (sent to every rank).
    struct Entry {
        var id = 0
        var available = false
        var completed = false
        var adversary = false
        /// Started its round and dropped out before uploading; or missed the round's deadline.
        var dropped = false
        var straggler = false
        var samples = 0
        var processed = 0
        var bytesUp = 0
        var bytesDown = 0
        var joules = 0.0
        /// FedNova's normaliser of the local round (0 unless the rule is fednova).
        var steps = 0.0
        /// q-FedAvg's Fₖ: the client's mean loss at the round's global model (0 otherwise).
        var loss = 0.0
        /// FedBuff: seconds from the round's download to the update's arrival (0 otherwise).
        var delay = 0.0
        var delta: [Float] = []
        /// SCAFFOLD's Δcᵢ (empty otherwise).
        var control: [Float] = []

        func encode(into w: inout ByteWriter) {
            w.int(id)
            w.int((available ? 1 : 0) | (completed ? 2 : 0) | (adversary ? 4 : 0) | (dropped ? 8 : 0) | (straggler ? 16 : 0))
            w.int(samples)
            w.int(processed)
            w.int(bytesUp)
            w.int(bytesDown)
            w.doubles([joules, steps, loss, delay])
            w.floats(delta)
            w.floats(control)
        }

        static func decode(_ r: inout ByteReader) throws -> Entry {
            var e = Entry()
            e.id = try r.int()
            let flags = try r.int()
            e.available = flags & 1 != 0
            e.completed = flags & 2 != 0
            e.adversary = flags & 4 != 0
            e.dropped = flags & 8 != 0
            e.straggler = flags & 16 != 0
            e.samples = try r.int()
            e.processed = try r.int()
            e.bytesUp = try r.int()
            e.bytesDown = try r.int()
            let d = try r.doubles()
            e.joules = d.first ?? 0
            e.steps = d.count > 1 ? d[1] : 0
            e.loss = d.count > 2 ? d[2] : 0
            e.delay = d.count > 3 ? d[3] : 0
            e.delta = try r.floats()
            e.control = try r.floats()
            return e
        }
    }

    /// Executes the run on this process (a rank of `transport`). Every rank returns the same result.
    public static func execute(_ run: ResolvedRun, transport: any FederationTransport = SingleProcess()) -> RunResult {
        execute(run, transport: transport, storage: nil)
    }

    /// `execute` with the clients kept as `storage` says instead of the run's own plan (tests
    /// compare the plans: every plan gives the same bits).
    static func execute(_ run: ResolvedRun, transport: any FederationTransport, storage: FederationStorage?) -> RunResult {
        let clock = ContinuousClock()
        let start = clock.now
        var result = RunResult.notStarted(run)
        do {
            try simulate(run, transport: transport, storage: storage, into: &result)
        } catch let error as TrainingError {
            if error.isDivergence { result.status = .diverged }
            result.message = error.description
        } catch {
            result.message = "\(error)"
        }
        result.wallSeconds = (clock.now - start).seconds
        return result
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func simulate(_ run: ResolvedRun, transport: any FederationTransport, storage plan: FederationStorage? = nil,
                         into result: inout RunResult) throws {
        let config = run.config
        guard let fed = config.federation, let population = config.population else {
            throw Failure(description: "a federated run needs \"federation\" and \"population\" blocks")
        }
        let generator = config.scenario.options as? any PopulationScenario
        guard generator != nil || fed.partition != nil else {
            throw Failure(description: "scenario \"\(config.scenario.typeName)\" does not support populations, so it cannot give "
                + "federated clients; split its data among them with \"federation\": {\"partition\": {...}}")
        }
        let N = population.users, R = fed.rounds
        let clock = ContinuousClock()
        let setupStart = clock.now
        let rank = transport.rank, size = transport.size
        let popSeed = population.seed ?? config.seed
        // A data file's population: its users (one client per person), picked from the file.
        let scenario = try generator.map { try $0.forPopulation(users: N, seed: popSeed) }
        let device = config.device ?? DeviceConfig()
        let pass = TrainingPass(epochs: fed.localEpochs, shuffle: config.training.options.shuffle,
                                maxSteps: fed.localSteps > 0 ? fed.localSteps : nil)
        let workers = max(1, fed.jobs > 0 ? fed.jobs : ProcessInfo.processInfo.activeProcessorCount)

        // Seeded choices fixed for the whole run: the adversaries and the evaluated clients.
        let rootRNG = RandomSource(seed: config.seed, stream: "federation")
        let adversaries: Set<Int> = {
            var ids = Array(0..<N)
            var rng = rootRNG.derived("adversaries")
            rng.shuffle(&ids)
            return Set(ids.prefix(Int((fed.adversaryFraction * Double(N)).rounded())))
        }()
        let evaluated: [Int] = {
            guard fed.evaluateClients > 0, fed.evaluateClients < N else { return Array(0..<N) }
            var ids = Array(0..<N)
            var rng = rootRNG.derived("evaluate")
            rng.shuffle(&ids)
            return ids.prefix(fed.evaluateClients).sorted()
        }()
        let isEvaluated: Set<Int> = Set(evaluated)

        // The clients' data: a population generator's users, or a seeded split of the scenario's
        // stream (the same on every rank).
        var partition: ClientPartition? = nil
        var baseStream: ExperienceStream? = nil
        if let pc = fed.partition {
            let base = try config.scenario.options.makeStream(seed: config.seed)
            switch Result(catching: { try ClientPartition.make(base, clients: N, config: pc, seed: pc.seed ?? config.seed) }) {
            case .success(let p): partition = p
            case .failure(let error):
                throw Failure(description: ".federation.\((error as? ClientPartition.Failure)?.key ?? "partition"): \(error)")
            }
            baseStream = base
        }
        // Client `id`'s model seed and stream.
        let source: @Sendable (Int) throws -> (modelSeed: UInt64, stream: ExperienceStream) = { [partition, baseStream] id in
            if let partition, let baseStream {
                var rng = RandomSource(seed: popSeed, stream: "federation.partition.client.\(id)")
                return (rng.next(), partition.stream(of: id, from: baseStream))
            }
            // The same person as a population run's user `id`.
            let member = PopulationExecutor.member(id, of: scenario!, spread: population.spread, seed: popSeed)
            return (member.modelSeed, try member.options.makeStream(seed: member.modelSeed))
        }

        var firstStream: ExperienceStream? = nil
        var spec: MLPSpec? = nil
        var prototype: Trainer? = nil
        do {
            // The server's model: the run seed's initialisation (or the warm start), prepared by
            // the strategy (adapters and LoRA blocks added): the same start for every phone. It
            // needs the stream's shape: client 0's (any client would do), or the partitioned stream.
            let stream = try baseStream ?? source(0).stream
            let s = try config.model.spec(inputs: stream.dimension, head: stream.head, experiences: stream.experiences.count)
            var p = Trainer(spec: s, optimizer: config.optimizer.spec, options: config.training.options,
                            plugins: config.strategy.map { $0.options.makePlugin() }, seed: config.seed)
            try RunExecutor.warmStart(&p.model, config, spec: s)
            try p.prepareRounds(dimension: stream.dimension, head: stream.head, featureNames: stream.featureNames,
                                experienceCount: R)
            spec = s
            prototype = p
            firstStream = stream
        }
        guard let spec, let prototype, let firstStream else { throw Failure(description: "no prototype model") }
        let T = firstStream.experiences.count
        let trainSizes = firstStream.experiences.map(\.train.count)
        // The shared schedule (clients of the prototype's sizes); each client keeps its own.
        let schedule = ArrivalSchedule(trainSizes: trainSizes, rounds: R)
        let initialParameters = prototype.model.parameters
        let classes = spec.head.classCount
        let shared = sharedRanges(of: prototype.model, share: fed.share)
        let sharedCount = shared.reduce(0) { $0 + $1.count }
        let traffic = TrainingTraffic(model: prototype.model, optimizer: config.optimizer.spec)
        let proximal = fed.proximalMu > 0

        // The clients are built when first needed (`FederationStorage`): the evaluated ones now
        // (their baselines), every one now when every phone trains each round, the others when
        // they are first sampled. Each is built from its id alone, so the order does not matter.
        let storage = plan ?? FederationStorage(fed, clients: N)
        let errors = ErrorBox()
        let table = Table()
        /// Builds this rank's clients `ids` (not yet built) in parallel, with their data.
        func materialise(_ ids: [Int]) throws {
            guard !ids.isEmpty else { return }
            let built = PopulationExecutor.Slots<FederatedClient?>(ids.count, initial: nil)
            let n = min(workers, ids.count)
            DispatchQueue.concurrentPerform(iterations: n) { w in
                var k = w
                while k < ids.count {
                    let id = ids[k]
                    do {
                        let (modelSeed, stream) = try source(id)
                        built.base[k] = try makeClient(id, stream: stream, modelSeed: modelSeed, config: config, fed: fed,
                                                        spec: spec, device: device, rounds: R, initial: initialParameters,
                                                        experiences: T, adversary: adversaries.contains(id), proximal: proximal)
                    } catch {
                        errors.record(id, "client \(id): \(error)")
                    }
                    k += n
                }
            }
            if let (_, message) = errors.first { throw Failure(description: message) }
            for k in 0..<ids.count { table.append(built.base[k]!) }
        }
        try materialise(storage.allClients ? Array(stride(from: rank, to: N, by: size)) : evaluated.filter { $0 % size == rank })

        // Baselines of the evaluated clients: the initial model and an independently initialised one.
        var baselineRNG = RandomSource(seed: config.seed, stream: "baseline.random")
        let randomModel = MLP(spec: prototype.model.spec, rng: &baselineRNG)
        let initialModel = prototype.model
        forEach(table, where: { isEvaluated.contains(table.clients[$0].id) }, workers: workers) { c, _ in
            let ws = initialModel.makeWorkspace(capacity: config.training.options.evaluationBatchSize)
            c.initial = c.tests.map { initialModel.accuracy(on: $0.test, route: 0, workspace: ws) }
            c.random = c.tests.map { randomModel.accuracy(on: $0.test, route: 0, workspace: ws) }
        }

        var global = initialModel
        var serverState = ServerOptimizerState()
        var accountant = RDPAccountant()
        let q = fed.samplingRate(clients: N)
        var outcome = FederationOutcome(config: fed, clients: N, samplingRate: q, sharedParameters: sharedCount,
                                        totalParameters: global.parameterCount)
        if let partition, let baseStream {
            outcome.partitionTrainCounts = partition.trainCounts
            outcome.partitionTestCounts = partition.testCounts
            outcome.partitionLabelCounts = partition.labelCounts(baseStream)
            outcome.partitionLabels = partition.labels.map(Int.init)
            outcome.partitionAttempts = partition.attempts
        }
        let encoding = fed.updateEncoding
        // SCAFFOLD's server control c (the same on every rank).
        let scaffold = fed.aggregation == .scaffold
        var serverControl = [Float](repeating: 0, count: scaffold ? sharedCount : 0)
        let rule = fed.rule(optimizer: config.optimizer.spec)
        // FedRep's phases: the head (what is not shared) trains first, then the body (what is).
        let bodyMask: [Bool] = {
            var mask = [Bool](repeating: false, count: initialParameters.count)
            for range in shared { for i in range { mask[i] = true } }
            return mask
        }()
        let headMask = bodyMask.map { !$0 }
        let headPass = TrainingPass(epochs: fed.fedrepHeadEpochs, shuffle: config.training.options.shuffle)
        let perFedAvg = fed.perFedAvgRound(optimizer: config.optimizer.spec)
        let pfedme = fed.pfedmeRound(optimizer: config.optimizer.spec)
        let server = fed.server
        // FedBuff (asynchronous): the server's buffer, the updates in flight (ordered by arrival
        // time, then client id) and the download rounds of the buffered updates.
        var fedbuffServer = fed.fedbuff?.buffer
        var inFlight: [(time: Double, round: Int, arrival: BufferedAggregation.Arrival)] = []
        var bufferedRounds: [Int] = []
        var fedbuffTrace = FedBuffTrace()
        // Row j of a client's personal matrix is taken after the round in which its experience j's
        // last sample arrived (`ArrivalSchedule`, per client).

        outcome.setupSeconds = (clock.now - setupStart).seconds
        let roundStart = clock.now
        for r in 0..<R {
            // 1. Sampling (the same on every rank).
            var sampler = RandomSource(seed: config.seed, stream: "federation.sample.\(r)")
            var invited: [Int]
            switch fed.sampling {
            case _ where fed.share == .none:
                // Local-only: no server, nobody is invited; every phone trains on its own when its
                // device allows (the personal rounds below).
                invited = []
            case .poisson:
                let p = fed.clientFraction ?? 1
                invited = (0..<N).filter { _ in sampler.bernoulli(p) }
            case .uniform:
                let k = fed.invitedPerRound(clients: N)
                // Partial Fisher–Yates: the first k of a seeded permutation, sorted.
                var ids = Array(0..<N)
                for i in 0..<k {
                    let j = i + sampler.uniformInt(below: N - i)
                    ids.swapAt(i, j)
                }
                invited = ids.prefix(k).sorted()
            }
            // FedBuff: a client whose last update is still in flight does not start another.
            let busy = Set(inFlight.map(\.arrival.client))
            let invitedSet = Set(invited.filter { !busy.contains($0) })
            if fed.fedbuff != nil { fedbuffTrace.busy.append(invited.count - invitedSet.count) }
            let downloadVersion = fedbuffServer?.version ?? 0
            try materialise(invited.filter { invitedSet.contains($0) && $0 % size == rank && !table.contains($0) })

            // 2. Local work of this rank's clients: invited ones take part when their device
            //    allows; with personal models, every other available client trains on its own.
            let globalParameters = global.parameters
            let control = serverControl   // SCAFFOLD's c of this round
            let entries = PopulationExecutor.Slots<Entry?>(table.clients.count, initial: nil)
            forEach(table, where: { k in
                invitedSet.contains(table.clients[k].id)
                    || (fed.personal == .local && table.clients[k].available[r]
                        && table.clients[k].personalCursor < table.clients[k].schedule.arrival(r + 1))
            }, workers: workers) { c, scratch in
                let end = c.schedule.arrival(r + 1)
                let p = c.schedule.period(ofRound: r)
                var e = Entry()
                e.id = c.id
                e.adversary = c.adversary
                // The client's data for this round (regenerated unless held), released after it
                // unless the client keeps it (`FederationStorage`).
                let keep = storage.retainsData || isEvaluated.contains(c.id)
                defer { if !keep && c.holdsData { c.dropData() } }
                do {
                    if !c.holdsData { try c.restoreData(from: source(c.id).stream) }
                    if invitedSet.contains(c.id) {
                        c.invitations += 1
                        e.available = c.available[r]
                        guard e.available, c.federatedCursor < end else {
                            if e.available, fed.personal == .local, c.personalCursor < end {
                                (e.joules, e.processed) = try personalRound(&c, round: r, period: p, end: end, pass: pass,
                                                                            proximal: proximal, traffic: traffic,
                                                                            profile: device.profile, consolidate: fed.consolidate,
                                                                            scratch: &scratch)
                            }
                            return e
                        }
                        // Client failure, drawn per round and client: a dropout loses its whole round
                        // (the phone's state at its start is kept), at a uniform point of the round.
                        var dropAt: Double? = nil
                        if fed.dropoutProbability > 0 {
                            var failure = RandomSource(seed: config.seed, stream: "federation.dropout.\(r).\(c.id)")
                            let u = failure.uniform(), at = failure.uniform()
                            if u < fed.dropoutProbability { dropAt = at }
                        }
                        let atStart: FederatedClient? = dropAt == nil ? nil : c
                        let controlAtStart = c.control
                        if fed.share != .none {
                            for range in shared {
                                c.trainer.model.parameters.replaceSubrange(range, with: globalParameters[range])
                            }
                        }
                        let data = c.data(c.federatedCursor, end,
                                          flip: c.adversary && fed.attack == .labelFlip ? classes : nil)
                        try c.setServerTeacher(globalParameters)
                        if scaffold {
                            // Every local step uses g + c − cᵢ (the term is the learner's last plugin).
                            let ci = c.control
                            setControlCorrection(&c, control.indices.map { control[$0] - (ci.isEmpty ? 0 : ci[$0]) })
                        }
                        if fed.aggregation == .qfedavg {
                            // q-FedAvg's Fₖ(wᵗ): the loss of the received global model on the round's data.
                            let ws = c.trainer.model.makeWorkspace(capacity: config.training.options.evaluationBatchSize)
                            e.loss = PerFedAvgRound.meanGradient(c.trainer.model, data, rows: 0..<data.count, workspace: ws).1
                        }
                        let record: ExperienceRecord
                        switch fed.personal {
                        case .fedrep:
                            record = try c.trainFedRep(on: data, head: headMask, body: bodyMask, headPass: headPass, bodyPass: pass,
                                                       period: p, round: r, scratch: &scratch)
                        case .perFedAvg:
                            record = try c.trainPerFedAvg(on: data, method: perFedAvg, batchSize: config.training.options.batchSize,
                                                          pass: pass, period: p, round: r)
                        case .pfedme:
                            record = try c.trainPFedMe(on: data, method: pfedme, batchSize: config.training.options.batchSize,
                                                       pass: pass, period: p, round: r)
                        default:
                            record = try c.trainRound(on: data, period: p, round: r, pass: pass, scratch: &scratch,
                                                      dataEnd: fed.consolidate == .experience ? end : nil)
                        }
                        if scaffold {
                            setControlCorrection(&c, [])
                            // K counts the steps applied: a mixed-precision step skipped for overflow moved nothing.
                            let applied = record.steps - record.skippedSteps
                            if applied > 0 {
                                let updated = Scaffold.clientControl(old: c.control, server: control, start: globalParameters,
                                                                     end: c.trainer.model.parameters, steps: applied,
                                                                     learningRate: config.optimizer.spec.learningRate)
                                e.control = updated.indices.map { updated[$0] - (c.control.isEmpty ? 0 : c.control[$0]) }
                                c.control = updated
                            }
                        }
                        c.federatedCursor = end
                        if fed.personal == .local { c.personalCursor = max(c.personalCursor, end) }
                        var delta = [Float]()
                        delta.reserveCapacity(sharedCount)
                        for range in shared {
                            for i in range { delta.append(c.trainer.model.parameters[i] - globalParameters[i]) }
                        }
                        if c.adversary {
                            switch fed.attack {
                            case .labelFlip: break
                            case .scale: delta = delta.map { $0 * Float(fed.attackScale) }
                            case .signFlip: delta = delta.map { -$0 * Float(fed.attackScale) }
                            }
                        }
                        e.completed = true
                        e.samples = data.count
                        if fed.aggregation == .fednova {
                            e.steps = fed.novaNormalizer(steps: record.steps - record.skippedSteps, optimizer: config.optimizer.spec)
                        }
                        if fed.share != .none {
                            let (decoded, bytes) = encoding.encode(delta)
                            e.delta = decoded
                            e.bytesUp = bytes
                            e.bytesDown = 4 * sharedCount
                            // SCAFFOLD: Δcᵢ up and c down, float32 each.
                            if scaffold { e.bytesUp += 4 * sharedCount; e.bytesDown += 4 * sharedCount }
                        }
                        e.joules = trainingJoules(record, traffic: traffic, profile: device.profile)
                        e.processed = record.samplesProcessed
                        if fed.personal == .ditto || fed.personal == .apfl {
                            // Ditto: the personal model trains on the same (clean) data, pulled to the round's global model;
                            // APFL: on the same batches, mixed with the client's w before each of its FedAvg steps.
                            var trajectory: [[Float]] = []
                            if fed.personal == .apfl, let k = c.trainer.plugins.firstIndex(where: { $0 is StepTrajectory }),
                               var recorder = c.trainer.plugins[k] as? StepTrajectory {
                                trajectory = recorder.take()
                                c.trainer.plugins[k] = recorder
                            }
                            let personal = try c.trainPersonal(on: c.data(c.federatedCursor - data.count, end, flip: nil), global: globalParameters,
                                                               trajectory: trajectory, period: p, round: r, pass: pass, scratch: &scratch)
                            e.joules += trainingJoules(personal, traffic: traffic, profile: device.profile)
                            e.processed += personal.samplesProcessed
                        }
                        c.participations += 1
                        if let at = dropAt, let start = atStart {
                            // Dropped mid-round: the energy up to the drop and the download are spent;
                            // nothing is uploaded, nothing of the round persists on the phone.
                            var d = Entry()
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
                        if let fb = fed.fedbuff, fb.delay == .device {
                            // FedBuff: the update arrives after the round's time on the device (the
                            // straggler model's draw, per round and client).
                            var load = RandomSource(seed: config.seed, stream: "federation.straggler.\(r).\(c.id)")
                            let slowdown = _exp(fb.slowdownSpread * load.normal())
                            let flops = EnergyEstimate(session: traffic, rows: record.samplesProcessed, steps: record.steps,
                                                       trainableParameters: nil, extraFLOPs: record.extraFLOPs,
                                                       profile: device.profile).flops
                            e.delay = Double(flops) / device.profile.flopsPerSecond * slowdown
                        }
                        if let deadline = fed.roundDeadline {
                            // The round's time on the device: its training FLOPs at the profile's rate,
                            // slowed by the phone's load (log-normal, drawn per round and client).
                            var load = RandomSource(seed: config.seed, stream: "federation.straggler.\(r).\(c.id)")
                            let slowdown = _exp(fed.stragglerSpread * load.normal())
                            let flops = EnergyEstimate(session: traffic, rows: record.samplesProcessed, steps: record.steps,
                                                       trainableParameters: nil, extraFLOPs: record.extraFLOPs,
                                                       profile: device.profile).flops
                            if Double(flops) / device.profile.flopsPerSecond * slowdown > deadline {
                                // Too late: the phone keeps its training, the server never uses the update.
                                e.completed = false
                                e.straggler = true
                                e.delta = []
                                e.control = []
                                e.bytesUp = 0
                                c.control = controlAtStart
                                c.participations -= 1
                                c.straggles += 1
                            }
                        }
                    } else {
                        (e.joules, e.processed) = try personalRound(&c, round: r, period: p, end: end, pass: pass,
                                                                    proximal: proximal, traffic: traffic,
                                                                    profile: device.profile, consolidate: fed.consolidate,
                                                                    scratch: &scratch)
                    }
                } catch let error as TrainingError {
                    errors.record(c.id, "client \(c.id), round \(r): \(error.description)")
                } catch {
                    errors.record(c.id, "client \(c.id), round \(r): \(error)")
                }
                return e
            } collect: { k, e in entries.base[k] = e }
            if let (_, message) = errors.first { throw Failure(description: message) }

            // 3. Every rank's entries, in client order.
            var w = ByteWriter()
            let local = (0..<entries.count).compactMap { entries.base[$0] }
            w.int(local.count)
            for e in local { e.encode(into: &w) }
            var all: [Entry] = []
            for bytes in try transport.allGather(w.data) {
                var reader = ByteReader(bytes)
                let n = try reader.int()
                for _ in 0..<n { all.append(try Entry.decode(&reader)) }
            }
            all.sort { $0.id < $1.id }

            // 4. Secure aggregation's extra bytes (Bonawitz et al. 2017, without dropouts): each
            //    participant advertises two 32-byte public keys and receives everyone's, sends an
            //    encrypted pair of shares (≈ 80 B) to each other participant and receives theirs,
            //    and uploads its masked update densely in a 32-bit ring (4 B per coordinate).
            //    With client failure (Bonawitz et al. §4, round 4): every client that started the round
            //    (completed, dropped or straggling) took part in the key exchange; those whose masked
            //    update did not arrive are dropouts, and each survivor uploads one 32-byte share of each
            //    dropout's mask key so the server can remove their pairwise masks — the recovery cost.
            let completed = all.filter(\.completed)
            if fed.secureAggregation, fed.share != .none {
                let failed = all.filter { $0.dropped || $0.straggler }.count
                let m = completed.count + failed
                for i in all.indices where all[i].completed || all[i].dropped || all[i].straggler {
                    // A survivor's masked upload: its update, and SCAFFOLD's Δcᵢ beside it (also summed by the server).
                    let masked = 4 * sharedCount * (scaffold ? 2 : 1)
                    all[i].bytesUp = 64 + (m - 1) * 80 + (all[i].completed ? masked + failed * 32 : 0)
                    all[i].bytesDown += (m - 1) * (64 + 80)
                }
            }
            for e in all where e.id % size == rank {
                guard let k = table.slot[e.id] else { throw Failure(description: "client \(e.id) has no slot on rank \(rank)") }
                table.clients[k].bytesUp += e.bytesUp
                table.clients[k].bytesDown += e.bytesDown
                table.clients[k].joules += e.joules + Double(e.bytesUp + e.bytesDown) * fed.radioJoulesPerByte
            }

            // 5. The server step.
            var aggregatedThisRound = false
            /// Applies a server update to the shared part of the global model (the server optimizer).
            func applyToGlobal(_ aggregate: [Float]) throws {
                var sharedParameters = [Float]()
                sharedParameters.reserveCapacity(sharedCount)
                for range in shared { sharedParameters.append(contentsOf: global.parameters[range]) }
                server.apply(aggregate, to: &sharedParameters, state: &serverState)
                var offset = 0
                for range in shared {
                    global.parameters.replaceSubrange(range, with: sharedParameters[offset..<(offset + range.count)])
                    offset += range.count
                }
                aggregatedThisRound = true
                if !global.parameters.allSatisfy({ $0.isFinite }) {
                    throw TrainingError.diverged(experience: schedule.period(ofRound: r), epoch: r, loss: .nan)
                }
            }
            if let fb = fed.fedbuff, var buffer = fedbuffServer {
                // FedBuff: this round's uploads join the updates in flight; those arriving before the
                // next round's downloads enter the buffer in (time, client id) order, and every K-th
                // arrival is a server step.
                for e in all where e.completed {
                    inFlight.append((Double(r) * fb.roundSeconds + e.delay, r,
                                     .init(client: e.id, version: downloadVersion, update: ClientUpdate(delta: e.delta, samples: e.samples))))
                }
                inFlight.sort { ($0.time, $0.arrival.client) < ($1.time, $1.arrival.client) }
                let end = Double(r + 1) * fb.roundSeconds
                var taken = 0
                while taken < inFlight.count, inFlight[taken].time < end {
                    let next = inFlight[taken]
                    taken += 1
                    bufferedRounds.append(next.round)
                    guard let step = buffer.receive(next.arrival) else { continue }
                    fedbuffTrace.stepRound.append(r)
                    fedbuffTrace.stepTime.append(next.time)
                    fedbuffTrace.stepClients.append(step.clients)
                    fedbuffTrace.stepDownloadRounds.append(bufferedRounds)
                    fedbuffTrace.stepStaleness.append(step.staleness)
                    fedbuffTrace.stepWeights.append(step.weights)
                    bufferedRounds = []
                    try applyToGlobal(step.delta)
                }
                inFlight.removeFirst(taken)
                fedbuffServer = buffer
            } else if fed.share != .none {
                let updates = all.filter(\.completed).map { ClientUpdate(delta: $0.delta, samples: $0.samples, steps: $0.steps, loss: $0.loss) }
                var aggregate: [Float]? = nil
                if let clip = fed.clipNorm {
                    // DP-FedAvg: the mechanism releases noise even when no client took part.
                    var noise = RandomSource(seed: config.seed, stream: "federation.noise.\(r)")
                    let dp = GaussianAggregation(clipNorm: clip, noiseMultiplier: fed.noiseMultiplier)
                    if updates.isEmpty {
                        let sd = fed.noiseMultiplier * clip
                        aggregate = (0..<sharedCount).map { _ in Float((sd > 0 ? sd * noise.normal() : 0) / (q * Double(N))) }
                    } else {
                        aggregate = try dp.aggregate(updates, expectedClients: q * Double(N), random: &noise)
                    }
                } else if !updates.isEmpty {
                    aggregate = try robustAggregate(rule, updates)
                }
                if let aggregate {
                    // pFedMe: w ← (1 − β)w + β·(w + aggregate).
                    try applyToGlobal(fed.personal == .pfedme ? PFedMeRound.serverUpdate(aggregate, beta: Float(fed.pfedmeBeta)) : aggregate)
                }
                if scaffold {
                    Scaffold.updateServerControl(&serverControl, deltas: all.filter(\.completed).map(\.control), clients: N)
                }
                if fed.noiseMultiplier > 0 { accountant.compose(samplingRate: q, noiseMultiplier: fed.noiseMultiplier) }
            }
            outcome.invited.append(invited.count)
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
            outcome.aggregated.append(aggregatedThisRound)
            outcome.dropped.append(all.filter(\.dropped).count)
            outcome.stragglers.append(all.filter(\.straggler).count)
            outcome.samplesTrained.append(all.reduce(0) { $0 + $1.processed })

            // 6. Evaluation: every `evaluate_every` rounds and the last, on the current test data;
            //    personal matrix rows after the rounds that end an experience.
            let evaluateNow = (r + 1) % fed.evaluateEvery == 0 || r == R - 1
            let g = global
            forEach(table, where: { k in
                isEvaluated.contains(table.clients[k].id) && (evaluateNow || table.clients[k].schedule.rowRound.contains(r))
            }, workers: workers) { c, _ in
                let p = c.schedule.period(ofRound: r)
                let rows = c.schedule.rowRound.filter { $0 == r }
                let ws = g.makeWorkspace(capacity: config.training.options.evaluationBatchSize)
                // Per-FedAvg's phone adapts the global model by one step on the data it has received.
                // pFedMe's phone predicts with its personal model θ̂(w_g), solved on the same data.
                let adapted = fed.personal == .perFedAvg
                    ? perFedAvg.adapt(g, on: c.data(0, c.schedule.arrival(r + 1), flip: nil), workspace: ws)
                    : fed.personal == .pfedme
                    ? pfedme.personalise(g, on: c.data(0, c.schedule.arrival(r + 1), flip: nil), workspace: ws) : nil
                // APFL's phone predicts with α·v + (1 − α)·w_g.
                var apflModel: MLP? = nil
                if fed.personal == .apfl, let learner = c.personalLearner, let term = learner.plugins.last as? APFLMixing {
                    var m = learner.model
                    m.parameters = APFLMixing.mix(learner.model.parameters, g.parameters, alpha: term.alpha)
                    apflModel = m
                }
                func personal(_ e: Experience) -> Double {
                    if fed.personal == .global { return g.accuracy(on: e.test, route: 0, workspace: ws) }
                    if let adapted { return adapted.accuracy(on: e.test, route: 0, workspace: ws) }
                    if fed.personal == .ditto || fed.personal == .apfl, var learner = c.personalLearner {
                        defer { c.personalLearner = learner }
                        return Trainer.evaluate(model: apflModel ?? learner.model, plugins: &learner.plugins, experiences: [e], workspace: ws)[0]
                    }
                    let model = c.trainer.model
                    return Trainer.evaluate(model: model, plugins: &c.trainer.plugins, experiences: [e], workspace: ws)[0]
                }
                if evaluateNow {
                    c.personalSeries.append(personal(c.tests[p]))
                    c.globalSeries.append(fed.share == .all ? g.accuracy(on: c.tests[p].test, route: 0, workspace: ws) : .nan)
                }
                for _ in rows { c.matrix.append(c.tests.map(personal)) }
                if r == R - 1 && fed.share == .all {
                    c.globalFinal = c.tests.map { g.accuracy(on: $0.test, route: 0, workspace: ws) }
                }
            }
            if evaluateNow { outcome.evaluatedRounds.append(r) }
        }

        outcome.roundSeconds = (clock.now - roundStart).seconds
        if let buffer = fedbuffServer {
            fedbuffTrace.inFlightAtEnd = inFlight.count
            fedbuffTrace.bufferedAtEnd = buffer.buffer.count
            outcome.fedbuff = fedbuffTrace
        }

        // Gather every client's numbers (each rank holds its own), in client order.
        var w = ByteWriter()
        w.int(table.clients.count)
        for c in table.clients { encodeFinal(c, into: &w) }
        var finals: [ClientFinal] = []
        for bytes in try transport.allGather(w.data) {
            var reader = ByteReader(bytes)
            let n = try reader.int()
            for _ in 0..<n { finals.append(try ClientFinal.decode(&reader)) }
        }
        finals.sort { $0.id < $1.id }
        let gathered = Set(finals.map(\.id))
        guard gathered.count == finals.count, gathered.allSatisfy({ (0..<N).contains($0) }),
              evaluated.allSatisfy({ gathered.contains($0) }) else {
            throw Failure(description: "gathered \(finals.count) clients, not every evaluated one once")
        }

        // Per client, for all N: the clients never built were never invited, so their counts are
        // 0; their adversary flag and device pattern are drawn from their id as a built one's are.
        var invitations = [Int](repeating: 0, count: N), participations = invitations, bytesUp = invitations
        var bytesDown = invitations, dropouts = invitations, straggles = invitations
        var joules = [Double](repeating: 0, count: N)
        var isAdversary = (0..<N).map { adversaries.contains($0) }
        var patterns = fed.deviceMix == nil ? [String](repeating: device.state.pattern.rawValue, count: N)
            : (0..<N).map { deviceState($0, config: config, fed: fed, device: device).state.pattern.rawValue }
        for f in finals {
            invitations[f.id] = f.invitations
            participations[f.id] = f.participations
            bytesUp[f.id] = f.bytesUp
            bytesDown[f.id] = f.bytesDown
            joules[f.id] = f.joules
            dropouts[f.id] = f.dropouts
            straggles[f.id] = f.straggles
            isAdversary[f.id] = f.adversary
            patterns[f.id] = f.pattern
        }
        outcome.invitations = invitations
        outcome.participations = participations
        outcome.isAdversary = isAdversary
        outcome.devicePattern = patterns
        outcome.clientBytesUp = bytesUp
        outcome.clientBytesDown = bytesDown
        outcome.clientJoules = joules
        outcome.clientDropouts = dropouts
        outcome.clientStraggles = straggles
        outcome.evaluatedClients = evaluated
        if scaffold {
            outcome.serverControl = serverControl
            // Mean of every client's cᵢ (0 for clients never trained), in client order.
            var acc = [Double](repeating: 0, count: sharedCount)
            for f in finals where !f.control.isEmpty { for j in acc.indices { acc[j] += Double(f.control[j]) } }
            outcome.clientControlMean = acc.map { $0 / Double(N) }
        }
        outcome.clientTrainSeconds = finals.reduce(0.0) { $0 + $1.trainSeconds }
        let evalFinals = finals.filter { isEvaluated.contains($0.id) }
        if fed.share == .all { outcome.globalFinalAccuracy = evalFinals.map(\.globalFinal) }
        for k in outcome.evaluatedRounds.indices {
            let personal = evalFinals.map { $0.personalSeries[k] }.filter { !$0.isNaN }.sorted()
            let global = evalFinals.map { $0.globalSeries[k] }.filter { !$0.isNaN }.sorted()
            outcome.personalAccuracy.append(personal.isEmpty ? .nan : personal.reduce(0, +) / Double(personal.count))
            outcome.globalAccuracy.append(global.isEmpty ? .nan : global.reduce(0, +) / Double(global.count))
            outcome.personalQuantiles.append(population.quantiles.map { PopulationExecutor.quantile(personal, $0) })
            outcome.globalQuantiles.append(population.quantiles.map { PopulationExecutor.quantile(global, $0) })
        }

        // The evaluated clients are the population's users: their personal matrices give the
        // run's metrics exactly as a population run's users do.
        let names = MetricSet(matrix: AccuracyMatrix([[0]]), randomBaseline: [0], initialBaseline: [0]).named
        var users: [PopulationExecutor.UserResult] = []
        for f in evalFinals {
            var u = PopulationExecutor.UserResult()
            u.dataSeed = f.dataSeed
            u.modelSeed = f.modelSeed
            u.status = f.matrix.count == T ? .completed : .failed
            u.message = u.status == .completed ? "" : "client \(f.id): \(f.matrix.count) of \(T) matrix rows"
            u.matrix = f.matrix
            u.initial = f.initial
            u.random = f.random
            u.processed = f.processed
            u.trainSeconds = f.trainSeconds
            if u.status == .completed {
                u.metrics = MetricSet(matrix: AccuracyMatrix(f.matrix), randomBaseline: f.random,
                                      initialBaseline: f.initial).named.map(\.value)
            } else {
                u.metrics = names.map { _ in .nan }
            }
            if f.id == evalFinals.first?.id {
                // The run-level stream description and curves: the first evaluated client's.
                var progress = TrainingProgress()
                progress.experiencesDone = T
                progress.accuracy = f.matrix
                progress.initialAccuracy = f.initial
                progress.randomAccuracy = f.random
                let nan = EvaluationRecord.nanRecord(classes: classes)
                progress.evaluations = Array(repeating: Array(repeating: nan, count: T), count: T)
                progress.initialEvaluation = Array(repeating: nan, count: T)
                progress.randomEvaluation = Array(repeating: nan, count: T)
                progress.trainSetSizes = trainSizes
                progress.samplesProcessed = f.processed
                progress.steps = f.steps
                progress.lossCurve = (0..<T).map { f.lossCount[$0] > 0 ? [f.lossSum[$0] / Double(f.lossCount[$0])] : [.nan] }
                progress.penaltyCurve = (0..<T).map { f.lossCount[$0] > 0 ? [f.penaltySum[$0] / Double(f.lossCount[$0])] : [0] }
                progress.trainableParameters = Array(repeating: global.trainableCount, count: T)
                progress.extraFLOPs = f.extraFLOPs
                // The run's final parameters are the server's model (what a warm start takes).
                let o = TrainingOutcome(progress: progress, testSizes: firstStream.experiences.map(\.test.count),
                                        finalModel: global,
                                        pluginReports: prototype.plugins.map { ($0.name, $0.report()) },
                                        pluginResources: prototype.plugins.map(\.resources))
                u.outcome = o
                u.costs = CostModel(model: o.finalModel, optimizer: Optimizer(spec: config.optimizer.spec,
                                                                              parameterCount: o.finalModel.parameterCount))
                u.stream = firstStream
            }
            users.append(u)
        }
        PopulationExecutor.aggregate(users, population: population, seed: popSeed, userIds: evaluated, into: &result)
        result.federation = outcome
        // Training time of the run: every client's local and personal rounds (not only the evaluated).
        result.outcome?.trainSeconds = outcome.clientTrainSeconds
        result.streamMetadata["population_note"] = "accuracy_matrix, baselines and metrics are over the mean personal "
            + "matrices of the evaluated clients (federation/evaluated_client); per-client values in population/, per round in federation/"
        if let o = result.outcome {
            result.device = RunExecutor.deviceReport(config, stream: firstStream, model: o.finalModel, outcome: o)
        }
    }

    /// A round of personal training (no upload) on the data that arrived since the last one.
    /// FedProx's proximal term belongs to federated rounds only, so it is set aside here.
    static func personalRound(_ c: inout FederatedClient, round r: Int, period p: Int, end: Int, pass: TrainingPass,
                              proximal: Bool, traffic: TrainingTraffic, profile: DeviceProfile,
                              consolidate: FederationConfig.Consolidation, scratch: inout LoopScratch) throws -> (joules: Double, rows: Int) {
        let data = c.data(c.personalCursor, end, flip: nil)
        var removed: (any StrategyPlugin)? = nil
        if proximal { removed = c.trainer.plugins.removeLast() }
        defer { if let removed { c.trainer.plugins.append(removed) } }
        let record = try c.trainRound(on: data, period: p, round: r, pass: pass, scratch: &scratch,
                                      dataEnd: consolidate == .experience ? end : nil)
        c.personalCursor = end
        return (trainingJoules(record, traffic: traffic, profile: profile), record.samplesProcessed)
    }

    /// Sets SCAFFOLD's correction c − cᵢ on the client's learner (its last plugin).
    static func setControlCorrection(_ c: inout FederatedClient, _ correction: [Float]) {
        guard var term = c.trainer.plugins.last as? ControlVariateTerm else { return }
        term.correction = correction
        c.trainer.plugins[c.trainer.plugins.count - 1] = term
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
            throw Failure(description: error.description)
        }
    }

    /// Energy of one local round on the device: training FLOPs and memory traffic.
    static func trainingJoules(_ record: ExperienceRecord, traffic: TrainingTraffic, profile: DeviceProfile) -> Double {
        EnergyEstimate(session: traffic, rows: record.samplesProcessed, steps: record.steps, trainableParameters: nil,
                       extraFLOPs: record.extraFLOPs, profile: profile).joules
    }

    /// The parameter ranges that travel between phone and server.
    static func sharedRanges(of model: MLP, share: FederationConfig.Share) -> [Range<Int>] {
        switch share {
        case .all: return [0..<model.parameterCount]
        case .none: return []
        case .core:
            // Every layer but the output layer (dense layers; adapters inside the core too).
            guard let output = model.layers.last(where: { $0.kind == .dense }) else { return [] }
            let head = output.offset..<(output.offset + output.parameterCount)
            var ranges: [Range<Int>] = []
            if head.lowerBound > 0 { ranges.append(0..<head.lowerBound) }
            var tail = head.upperBound..<model.parameterCount
            // LoRA blocks of the output layer stay personal with it.
            if let lr = output.lowRank {
                let block = lr.offset..<(lr.offset + lr.copies * lr.rank * (output.inputs + output.outputs))
                if block.lowerBound == tail.lowerBound { tail = block.upperBound..<tail.upperBound }
                else if block.overlaps(tail) {
                    ranges.append(tail.lowerBound..<block.lowerBound)
                    tail = block.upperBound..<tail.upperBound
                }
            }
            if !tail.isEmpty { ranges.append(tail) }
            return ranges
        case .adapters:
            var ranges: [Range<Int>] = []
            for layer in model.layers {
                if case .adapter = layer.kind { ranges.append(layer.offset..<(layer.offset + layer.parameterCount)) }
                if let lr = layer.lowRank {
                    ranges.append(lr.offset..<(lr.offset + lr.copies * lr.rank * (layer.inputs + layer.outputs)))
                }
            }
            return ranges.sorted { $0.lowerBound < $1.lowerBound }
        }
    }

    /// Builds client `id` from its stream (the population's user `id`, or its partition share):
    /// its arrival schedule (its own experience sizes), device availability, learner (the
    /// strategy prepared, parameters = the server's initial model).
    static func makeClient(_ id: Int, stream: ExperienceStream, modelSeed: UInt64, config: RunConfig, fed: FederationConfig,
                           spec: MLPSpec, device: DeviceConfig, rounds R: Int, initial: [Float], experiences T: Int,
                           adversary: Bool, proximal: Bool) throws -> FederatedClient {
        let trainSizes = stream.experiences.map(\.train.count)
        guard trainSizes.count == T else {
            throw Failure(description: "its stream has \(trainSizes.count) experiences, client 0's \(T); every client's "
                + "accuracy matrix must have the same experiences")
        }
        guard trainSizes.reduce(0, +) > 0 else { throw Failure(description: "it has no training sample") }
        let (train, tests) = FederatedClient.arrivalData(of: stream)
        let (state, drawn) = deviceState(id, config: config, fed: fed, device: device)
        var deviceRNG = drawn
        let available: [Bool]
        switch fed.availability {
        case .always: available = [Bool](repeating: true, count: R)
        case .device:
            let days = state.makeDays(count: R, runSeed: (state.seed ?? config.seed) &+ deviceRNG.next())
            available = days.map { fed.when.opens($0) }
        }
        var plugins = config.strategy.map { $0.options.makePlugin() }
        // APFL's personal steps mix with the FedAvg learner's w before each of its steps.
        if fed.personal == .apfl { plugins.append(StepTrajectory()) }
        // FLwF-2T's second teacher: LwF's term, its old model set to the server's each round.
        let serverTeacher: Int? = fed.serverDistillation > 0 ? plugins.count : nil
        if fed.serverDistillation > 0 {
            plugins.append(LearningWithoutForgetting(options: .init(lambda: fed.serverDistillation,
                                                                    temperature: fed.serverDistillationTemperature)))
        }
        if proximal { plugins.append(ProximalTerm(mu: fed.proximalMu)) }
        if fed.aggregation == .scaffold { plugins.append(ControlVariateTerm()) }
        var trainer = Trainer(spec: spec, optimizer: config.optimizer.spec, options: config.training.options,
                              plugins: plugins, seed: modelSeed)
        try trainer.prepareRounds(dimension: stream.dimension, head: stream.head, featureNames: stream.featureNames,
                                  experienceCount: R)
        guard trainer.model.parameterCount == initial.count else {
            throw Failure(description: "the prepared model has \(trainer.model.parameterCount) parameters, the server's \(initial.count)")
        }
        trainer.model.parameters = initial
        var personalLearner: Trainer? = nil
        if fed.personal == .ditto || fed.personal == .apfl {
            // The personal model: the same start, strategy and seed, plus Ditto's pull or APFL's mix (last).
            let term: any StrategyPlugin = fed.personal == .ditto
                ? DittoTerm(lambda: fed.dittoLambda, learningRate: config.optimizer.spec.learningRate)
                : APFLMixing(alpha: fed.apflAlpha, alphaLearningRate: fed.apflAlphaRate(optimizer: config.optimizer.spec))
            var learner = Trainer(spec: spec, optimizer: config.optimizer.spec, options: config.training.options,
                                  plugins: config.strategy.map { $0.options.makePlugin() } + [term],
                                  seed: modelSeed)
            try learner.prepareRounds(dimension: stream.dimension, head: stream.head, featureNames: stream.featureNames,
                                      experienceCount: R)
            learner.model.parameters = initial
            personalLearner = learner
        }
        var client = FederatedClient(id: id, trainer: trainer, modelSeed: modelSeed,
                               schedule: ArrivalSchedule(trainSizes: trainSizes, rounds: R),
                               dataSeed: UInt64(stream.metadata["seed"] ?? "") ?? 0, train: train, tests: tests,
                               adversary: adversary, available: available, pattern: state.pattern.rawValue)
        client.personalLearner = personalLearner
        client.serverTeacher = serverTeacher
        return client
    }

    /// Client `id`'s device state: the configured one, its pattern a seeded draw from
    /// `device_mix` when set; and the client's device stream after that draw (its days' seed comes next).
    static func deviceState(_ id: Int, config: RunConfig, fed: FederationConfig,
                            device: DeviceConfig) -> (state: DeviceStateOptions, rng: RandomSource) {
        var state = device.state
        var deviceRNG = RandomSource(seed: config.seed, stream: "federation.device.\(id)")
        if let mix = fed.deviceMix {
            let u = deviceRNG.uniform()
            var acc = 0.0
            let names = mix.keys.sorted()
            for name in names {
                acc += mix[name]!
                if u < acc || name == names.last {
                    state.pattern = DeviceStateOptions.Pattern(rawValue: name)!
                    break
                }
            }
        }
        return (state, deviceRNG)
    }

    /// Runs `body` on the clients whose table index satisfies `filter`, in parallel (each client by one worker;
    /// one `LoopScratch` per worker), collecting what it returns by table index.
    static func forEach(_ table: Table, where filter: (Int) -> Bool, workers: Int,
                        _ body: @escaping @Sendable (inout FederatedClient, inout LoopScratch) -> Void) {
        forEach(table, where: filter, workers: workers, { (c: inout FederatedClient, s: inout LoopScratch) -> Int in
            body(&c, &s)
            return 0
        }, collect: { _, _ in })
    }

    static func forEach<T>(_ table: Table, where filter: (Int) -> Bool, workers: Int,
                           _ body: @escaping @Sendable (inout FederatedClient, inout LoopScratch) -> T,
                           collect: @escaping @Sendable (Int, T) -> Void) {
        let indices = table.clients.indices.filter(filter)
        guard !indices.isEmpty else { return }
        let n = min(workers, indices.count)
        table.clients.withUnsafeMutableBufferPointer { buffer in
            nonisolated(unsafe) let base = buffer.baseAddress!
            DispatchQueue.concurrentPerform(iterations: n) { w in
                var scratch = LoopScratch()
                var k = w
                while k < indices.count {
                    let i = indices[k]
                    collect(i, body(&base[i], &scratch))
                    k += n
                }
            }
        }
    }

    /// A client's numbers at the end of the run, as gathered from its rank.
    struct ClientFinal {
        var id = 0, invitations = 0, participations = 0, bytesUp = 0, bytesDown = 0, dropouts = 0, straggles = 0
        var adversary = false
        var pattern = ""
        var joules = 0.0, trainSeconds = 0.0
        var dataSeed: UInt64 = 0, modelSeed: UInt64 = 0
        var matrix: [[Double]] = []
        var initial: [Double] = [], random: [Double] = []
        var processed: [Int] = [], steps: [Int] = [], lossCount: [Int] = [], extraFLOPs: [Int] = []
        var lossSum: [Double] = [], penaltySum: [Double] = []
        var personalSeries: [Double] = [], globalSeries: [Double] = [], globalFinal: [Double] = []
        var control: [Float] = []

        static func decode(_ r: inout ByteReader) throws -> ClientFinal {
            var f = ClientFinal()
            f.id = try r.int()
            f.invitations = try r.int()
            f.participations = try r.int()
            f.bytesUp = try r.int()
            f.bytesDown = try r.int()
            f.adversary = try r.int() != 0
            f.pattern = String(decoding: try r.bytes(try r.int()), as: UTF8.self)
            let d = try r.doubles()
            f.joules = d[0]
            f.trainSeconds = d[1]
            f.dataSeed = UInt64(bitPattern: Int64(try r.int()))
            f.modelSeed = UInt64(bitPattern: Int64(try r.int()))
            let rows = try r.int()
            for _ in 0..<rows { f.matrix.append(try r.doubles()) }
            f.initial = try r.doubles()
            f.random = try r.doubles()
            func ints() throws -> [Int] { try r.doubles().map { Int($0) } }
            f.processed = try ints()
            f.steps = try ints()
            f.lossCount = try ints()
            f.extraFLOPs = try ints()
            f.lossSum = try r.doubles()
            f.penaltySum = try r.doubles()
            f.personalSeries = try r.doubles()
            f.globalSeries = try r.doubles()
            f.globalFinal = try r.doubles()
            f.control = try r.floats()
            f.dropouts = try r.int()
            f.straggles = try r.int()
            return f
        }
    }

    static func encodeFinal(_ c: FederatedClient, into w: inout ByteWriter) {
        w.int(c.id)
        w.int(c.invitations)
        w.int(c.participations)
        w.int(c.bytesUp)
        w.int(c.bytesDown)
        w.int(c.adversary ? 1 : 0)
        let name = Array(c.pattern.utf8)
        w.int(name.count)
        w.bytes(name)
        w.doubles([c.joules, c.trainSeconds])
        w.int(Int(Int64(bitPattern: c.dataSeed)))
        w.int(Int(Int64(bitPattern: c.modelSeed)))
        w.int(c.matrix.count)
        for row in c.matrix { w.doubles(row) }
        w.doubles(c.initial)
        w.doubles(c.random)
        // Counts are far below 2^53, exact as doubles.
        w.doubles(c.processed.map(Double.init))
        w.doubles(c.steps.map(Double.init))
        w.doubles(c.lossCount.map(Double.init))
        w.doubles(c.extraFLOPs.map(Double.init))
        w.doubles(c.lossSum)
        w.doubles(c.penaltySum)
        w.doubles(c.personalSeries)
        w.doubles(c.globalSeries)
        w.doubles(c.globalFinal)
        w.floats(c.control)
        w.int(c.dropouts)
        w.int(c.straggles)
    }
}
