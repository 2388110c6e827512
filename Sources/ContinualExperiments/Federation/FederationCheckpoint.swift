import ContinualCore
import ContinualFederated

/// A federated run between two rounds: everything the round engine carries from one round to the
/// next, so that a run resumed from it ends in a results file bit-identical to one that never
/// stopped (`continual run --checkpoint-every`, `--stop-after` a round, `--resume-from`).
///
/// What is saved: the server (global model, server-optimizer moments and round count), the
/// privacy accountant's RDP, the per-round outcome so far, each algorithm's server state
/// (`FederatedAlgorithm.encodeState`: SCAFFOLD's c, FedDyn's h, FedBuff's buffer, updates in
/// flight and trace), and every client built so far (`FederatedClient.encodeState`: its learner's
/// model, optimizer and plugin states, Ditto's or APFL's personal learner, its control variate,
/// cursors, tallies and evaluation rows). What is not saved, because it is a function of the
/// config and the seed: the clients' data (regenerated from their seeds), device days, sampling
/// and noise (streams named by the round), partitions and baselines. Clients never built are
/// not in it, so a checkpoint of a 10⁶-client run holds only the clients that took part.
///
/// The checkpoint holds every rank's clients (gathered), so a run checkpointed on some number of
/// MPI ranks resumes on any other number.
public struct FederationCheckpoint: Sendable, Equatable {
    /// Magic bytes and format version of `encoded()`. Version 2 (2026-11-28): each client's
    /// tallies also hold its gradient evaluations beyond the steps (`extraSteps`).
    public static let magic: [UInt8] = Array("CKFEDER1".utf8)
    public static let version = 2

    public var seed: UInt64
    /// The run's rounds and clients, and the rounds done (the next round to run).
    public var rounds: Int
    public var clients: Int
    public var roundsDone: Int
    var global: [Float]
    var server: ServerOptimizerState
    var rdp: [Double]
    /// Each algorithm's type name and state bytes, in registry order.
    var algorithms: [NamedBytes]
    /// The per-round outcome so far (`FederationOutcome.encodeRounds`).
    var roundSeries: [UInt8]
    /// The built clients, by id, each with its state bytes.
    var clientStates: [NamedBytes]

    /// A named blob (an algorithm's state, or a client's by its id).
    struct NamedBytes: Sendable, Equatable {
        var name: String
        var bytes: [UInt8]
    }

    /// The checkpoint as bytes: magic, version, then the fields in declaration order.
    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.bytes(Self.magic)
        w.int(Self.version)
        w.u64(seed)
        w.ints([rounds, clients, roundsDone])
        w.floats(global)
        w.floats(server.first)
        w.floats(server.second)
        w.int(server.rounds)
        w.doubles(rdp)
        for list in [algorithms, [NamedBytes(name: "rounds", bytes: roundSeries)], clientStates] {
            w.int(list.count)
            for item in list {
                w.string(item.name)
                w.blob(item.bytes)
            }
        }
        return w.data
    }

    /// Decodes `encoded()`; every read is bounds-checked, so damaged bytes throw, never crash.
    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        guard try r.bytes(Self.magic.count) == Self.magic else {
            throw CheckpointError.mismatch("not a federated checkpoint (bad magic bytes)")
        }
        let version = try r.int()
        guard version == Self.version else { throw CheckpointError.wrongVersion(found: version, expected: Self.version) }
        seed = try r.u64()
        let counts = try r.ints()
        guard counts.count == 3, counts[0] >= 1, counts[1] >= 1, (0...counts[0]).contains(counts[2]) else {
            throw CheckpointError.mismatch("bad round and client counts \(counts)")
        }
        (rounds, clients, roundsDone) = (counts[0], counts[1], counts[2])
        global = try r.floats()
        server = ServerOptimizerState()
        server.first = try r.floats()
        server.second = try r.floats()
        server.rounds = try r.int()
        rdp = try r.doubles()
        var lists: [[NamedBytes]] = []
        for _ in 0..<3 {
            lists.append(try (0..<r.count(elementSize: 16)).map { _ in
                let name = try r.string()
                return NamedBytes(name: name, bytes: try r.blob())
            })
        }
        guard lists[1].count == 1 else { throw CheckpointError.mismatch("the per-round outcome is missing") }
        (algorithms, roundSeries, clientStates) = (lists[0], lists[1][0].bytes, lists[2])
        guard r.atEnd else { throw CheckpointError.mismatch("\(r.remaining) unexpected bytes after the checkpoint") }
    }

    init(seed: UInt64, rounds: Int, clients: Int, roundsDone: Int, global: [Float], server: ServerOptimizerState,
         rdp: [Double], algorithms: [NamedBytes], roundSeries: [UInt8], clientStates: [NamedBytes]) {
        self.seed = seed
        self.rounds = rounds
        self.clients = clients
        self.roundsDone = roundsDone
        self.global = global
        self.server = server
        self.rdp = rdp
        self.algorithms = algorithms
        self.roundSeries = roundSeries
        self.clientStates = clientStates
    }
}

extension FederationEngine {
    /// The engine after `roundsDone` rounds as a checkpoint; collective (every rank calls it and
    /// gets the same checkpoint: the clients of every rank, in client order).
    func checkpoint(roundsDone: Int) throws -> FederationCheckpoint {
        let R = setup.R
        let clients = try allGather(table.clients, encode: { c, w in
            var state = ByteWriter()
            c.encodeState(rounds: R, into: &state)
            w.int(c.id)
            w.blob(state.data)
        }, decode: { r in (id: try r.int(), bytes: try r.blob()) }).sorted { $0.id < $1.id }
        var series = ByteWriter()
        outcome.encodeRounds(into: &series)
        return FederationCheckpoint(
            seed: setup.config.seed, rounds: R, clients: setup.N, roundsDone: roundsDone, global: server.global.parameters,
            server: server.state, rdp: accountant.rdp,
            algorithms: zip(algorithmNames, algorithms).map { name, a in
                var w = ByteWriter()
                a.encodeState(into: &w)
                return .init(name: name, bytes: w.data)
            },
            roundSeries: series.data, clientStates: clients.map { .init(name: String($0.id), bytes: $0.bytes) })
    }

    /// The algorithms' names as a checkpoint records them (their Swift type names, in order).
    var algorithmNames: [String] { algorithms.map { String(describing: type(of: $0)) } }

    /// Puts `cp` in place of the engine's round-0 state: checks that it belongs to this run,
    /// builds this rank's clients it names (those not built yet) and restores their states, the
    /// server, the accountant, the algorithms and the per-round outcome.
    mutating func restore(_ cp: FederationCheckpoint) throws {
        guard cp.seed == setup.config.seed, cp.rounds == setup.R, cp.clients == setup.N else {
            throw CheckpointError.mismatch("seed \(cp.seed), \(cp.rounds) rounds and \(cp.clients) clients; this run has seed "
                + "\(setup.config.seed), \(setup.R) rounds and \(setup.N) clients")
        }
        guard cp.roundsDone < setup.R else { throw CheckpointError.mismatch("all \(cp.rounds) rounds are done: nothing to resume") }
        let names = algorithmNames
        guard cp.algorithms.map(\.name) == names else {
            throw CheckpointError.mismatch("algorithms \(cp.algorithms.map(\.name)), this run has \(names)")
        }
        guard cp.global.count == server.global.parameterCount else {
            throw CheckpointError.mismatch("\(cp.global.count) global parameters, this model has \(server.global.parameterCount)")
        }
        for i in algorithms.indices {
            var r = ByteReader(cp.algorithms[i].bytes)
            try algorithms[i].restoreState(from: &r)
            guard r.atEnd else { throw CheckpointError.mismatch("\(names[i]): \(r.remaining) unexpected bytes in its state") }
        }
        server.global.parameters = cp.global
        server.state = cp.server
        guard let restored = RDPAccountant(orders: accountant.orders, rdp: cp.rdp) else {
            throw CheckpointError.mismatch("the privacy accountant's \(cp.rdp.count) orders do not fit")
        }
        accountant = restored
        var series = ByteReader(cp.roundSeries)
        try outcome.restoreRounds(from: &series, rounds: cp.roundsDone)
        try restoreClients(cp.clientStates)
    }

    /// Builds this rank's clients of `states` not built yet, then restores each one's state.
    private func restoreClients(_ states: [FederationCheckpoint.NamedBytes]) throws {
        let ids = try states.map { s -> Int in
            guard let id = Int(s.name), (0..<setup.N).contains(id) else { throw CheckpointError.mismatch("bad client id \"\(s.name)\"") }
            return id
        }
        guard Set(ids).count == ids.count else { throw CheckpointError.mismatch("a client is saved twice") }
        let mine = ids.filter { $0 % setup.size == setup.rank }
        try factory.materialise(mine.filter { !table.contains($0) }, into: table, errors: errors)
        guard table.clients.count == mine.count else {
            throw CheckpointError.mismatch("the checkpoint holds \(mine.count) of this rank's clients, the run built \(table.clients.count) at its start")
        }
        for (id, s) in zip(ids, states) where id % setup.size == setup.rank {
            var r = ByteReader(s.bytes)
            try table.clients[table.slot[id]!].restoreState(from: &r)
            guard r.atEnd else { throw CheckpointError.mismatch("client \(id): \(r.remaining) unexpected bytes in its state") }
        }
    }
}
