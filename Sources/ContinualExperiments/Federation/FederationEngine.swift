import Foundation
import ContinualCore
import ContinualFederated
import ContinualMetrics

/// The round engine of a federated run (`FederationRunner`): per round it samples clients, runs
/// the local work of this rank's clients in parallel (`ClientRoundWork`), gathers every rank's
/// entries in client order (`FederationTransport`), charges traffic and energy, takes the server
/// step and evaluates; the algorithms (`FederatedAlgorithm`) supply what differs between methods.
///
/// Determinism: every random choice is drawn from a stream named by the run seed and the round or
/// client (sampling, noise, adversaries, devices, shuffles), clients train independently of one
/// another within a round, and the server sums their updates in client-id order. Results are
/// therefore bit-identical for any number of threads and of MPI ranks.
struct FederationEngine {
    let setup: FederationSetup
    let transport: any FederationTransport
    let table = ClientTable()
    let errors = ErrorBox()
    let factory: ClientFactory
    var algorithms: [any FederatedAlgorithm]
    var server: ServerModel
    var accountant = RDPAccountant()
    var outcome: FederationOutcome
    /// DP's and the accountant's sampling rate q.
    let q: Double
    let rule: AggregationRule
    /// The traced round's aggregate and the update applied (`federation.trace`; empty otherwise).
    var traceAggregate: (rule: [Float], applied: [Float]) = ([], [])

    /// The engine at round 0: the evaluated clients built (every client when every phone trains
    /// each round), with their baselines; the global model at `prototype`'s.
    init(_ setup: FederationSetup, prototype: Trainer, transport: any FederationTransport) throws {
        let fed = setup.fed, config = setup.config, N = setup.N
        let trace = try Self.emptyTrace(setup, parameters: prototype.model.parameterCount)
        self.setup = setup
        self.transport = transport
        algorithms = FederatedAlgorithms.make(AlgorithmSetup(
            config: config, fed: fed, shared: setup.shared, sharedCount: setup.sharedCount,
            parameterCount: setup.initialParameters.count, traffic: setup.traffic, profile: setup.device.profile))
        factory = ClientFactory(setup: setup, algorithms: algorithms)
        // The clients are built when first needed: the evaluated ones now (their baselines), every
        // one now when every phone trains each round, the others when they are first sampled.
        try factory.materialise(setup.storage.allClients ? Array(stride(from: setup.rank, to: N, by: setup.size))
                                    : setup.evaluated.filter { $0 % setup.size == setup.rank },
                                into: table, errors: errors)
        Self.baselines(table, setup: setup, initialModel: prototype.model)
        server = ServerModel(global: prototype.model, shared: setup.shared, sharedCount: setup.sharedCount,
                             optimizer: fed.server, schedule: setup.schedule)
        q = fed.samplingRate(clients: N)
        rule = fed.rule(optimizer: config.optimizer.spec)
        outcome = FederationOutcome(config: fed, clients: N, samplingRate: q, sharedParameters: setup.sharedCount,
                                    totalParameters: prototype.model.parameterCount)
        outcome.trace = trace
        if let partition = setup.partition, let baseStream = setup.baseStream {
            outcome.partitionTrainCounts = partition.trainCounts
            outcome.partitionTestCounts = partition.testCounts
            outcome.partitionLabelCounts = partition.labelCounts(baseStream)
            outcome.partitionLabels = partition.labels.map(Int.init)
            outcome.partitionAttempts = partition.attempts
        }
    }

    /// Baselines of the evaluated clients: the initial model and an independently initialised one.
    static func baselines(_ table: ClientTable, setup: FederationSetup, initialModel: MLP) {
        var baselineRNG = RandomSource(seed: setup.config.seed, stream: "baseline.random")
        let randomModel = MLP(spec: initialModel.spec, rng: &baselineRNG)
        let batch = setup.config.training.options.evaluationBatchSize, isEvaluated = setup.isEvaluated
        table.forEach(where: { isEvaluated.contains(table.clients[$0].id) }, workers: setup.workers) { c, _ in
            let ws = initialModel.makeWorkspace(capacity: batch)
            c.initial = c.tests.map { initialModel.accuracy(on: $0.test, route: 0, workspace: ws) }
            c.random = c.tests.map { randomModel.accuracy(on: $0.test, route: 0, workspace: ws) }
        }
    }

    /// Round `r`: sampling, the clients' work, the gather, traffic, the server step, evaluation.
    mutating func round(_ r: Int) throws {
        let invited = sample(r)
        var admitted = invited
        for i in algorithms.indices { admitted = algorithms[i].admit(admitted) }
        let invitedSet = Set(admitted), table = self.table
        try factory.materialise(invited.filter { invitedSet.contains($0) && $0 % setup.size == setup.rank && !table.contains($0) },
                                into: table, errors: errors)
        let work = ClientRoundWork(setup: setup, algorithms: algorithms, round: r, invited: invitedSet,
                                   global: server.global.parameters, errors: errors)
        let entries = PopulationExecutor.Slots<RoundEntry?>(table.clients.count, initial: nil)
        table.forEach(where: { work.trains(table.clients[$0]) }, workers: setup.workers) { c, scratch in
            work.run(&c, scratch: &scratch)
        } collect: { k, e in entries.base[k] = e }
        if let (_, message) = errors.first { throw FederationRunner.Failure(description: message) }
        var all = try gather((0..<entries.count).compactMap { entries.base[$0] })
        chargeSecureAggregation(&all)
        try charge(all)
        server.aggregated = false
        let traced = beginTrace(r)
        try serverStep(r, all)
        if let traced { finishTrace(traced, all) }
        record(invited: invited.count, all)
        evaluate(r)
    }

    /// The clients invited to round `r` (the same on every rank).
    func sample(_ r: Int) -> [Int] {
        let fed = setup.fed, N = setup.N
        var sampler = RandomSource(seed: setup.config.seed, stream: "federation.sample.\(r)")
        switch fed.sampling {
        case _ where fed.share == .none:
            // Local-only: no server, nobody is invited; every phone trains on its own when its
            // device allows (`LocalTraining`).
            return []
        case .poisson:
            let p = fed.clientFraction ?? 1
            return (0..<N).filter { _ in sampler.bernoulli(p) }
        case .uniform:
            let k = fed.invitedPerRound(clients: N)
            // Partial Fisher–Yates: the first k of a seeded permutation, sorted.
            var ids = Array(0..<N)
            for i in 0..<k {
                let j = i + sampler.uniformInt(below: N - i)
                ids.swapAt(i, j)
            }
            return ids.prefix(k).sorted()
        }
    }

    /// Every rank's entries, in client order. One rank holds them all already: its entries are
    /// not encoded and read back (two copies of every client's update each round, ≈ 18 % of a
    /// 784-100-10 FedProx run's time); the round trip is exact, as the runs on 2 ranks compared
    /// bit for bit with 1 (FederationTraceRankTests, FederatedConformanceTests) check.
    func gather(_ local: [RoundEntry]) throws -> [RoundEntry] {
        let entries = transport.size == 1
            ? local : try allGather(local, encode: { $0.encode(into: &$1) }, decode: RoundEntry.decode)
        return entries.sorted { $0.id < $1.id }
    }

    /// Every rank's `local` values as `decode` reads them, rank by rank (the transport's
    /// all-gather of their encoding).
    func allGather<Local, T>(_ local: [Local], encode: (Local, inout ByteWriter) -> Void,
                             decode: (inout ByteReader) throws -> T) throws -> [T] {
        var w = ByteWriter()
        w.int(local.count)
        for value in local { encode(value, &w) }
        var all: [T] = []
        for bytes in try transport.allGather(w.data) {
            var reader = ByteReader(bytes)
            let n = try reader.int()
            for _ in 0..<n { all.append(try decode(&reader)) }
        }
        return all
    }
}
