import ContinualCore

extension RunEstimate {
    /// A federation's estimate (memory, work, FLOPs and their key) from one client's run
    /// (`single` bytes; `capacity`, the plugins' buffer bytes).
    ///
    /// A federation builds its clients when first needed and keeps what `FederationStorage`
    /// says: for every client, its entries in the per-client results; for every client
    /// built (the evaluated ones and those expected to be sampled at least once), its
    /// learner and tallies; for the evaluated ones, and the trained ones when their data are
    /// reused, their data; during a round, the invited clients' data and updates.
    mutating func federate(_ federation: FederationConfig, population: PopulationConfig, single: Double, capacity: Double,
                           model: ModelSize, size: ScenarioSize, cores: Int) {
        let T = model.experiences, D = model.dimension, params = model.parameters, perParameter = model.perParameter
        let N = Double(population.users)
        let R = Double(federation.rounds)
        let storage = FederationStorage(federation, clients: population.users)
        let evaluated = Double(federation.evaluateClients > 0 ? min(federation.evaluateClients, population.users) : population.users)
        let built = storage.allClients ? N : min(N, evaluated + storage.expectedParticipants * (1 - evaluated / max(N, 1)))
        let participants = max(built - evaluated, 0)
        // A partition gives each client 1/N of the scenario's data (held once more, whole, by the server side).
        let share = federation.partition != nil ? 1 / max(N, 1) : 1.0
        // A client's data: features and Int32 labels at their exact size, plus its experiences' headers.
        let clientData = size.samples * share * (D * 4 + 4) + T * 320
        // Ditto and APFL keep a personal model beside the local one.
        let learners = federation.personal == .ditto || federation.personal == .apfl ? 2.0 : 1.0
        // A built client's learner (parameters, optimizer, plugin state), device days, arrival
        // schedule, per-experience tallies and its slot (`clientStateBytes`).
        let state = learners * params * perParameter + capacity + R + T * 112 + Self.clientStateBytes
        // Per client of the run: invitations, participations, bytes up and down, joules,
        // dropouts, stragglers, adversary flag, device pattern, and their copies while written.
        let everyClient = N * Self.perClientResultBytes
        let kept = evaluated * (clientData + T * T * 8 * (population.storeMatrices ? 3 : 2) + 1024)
        let perRound = storage.expectedParticipations / max(R, 1)   // invited per round
        let roundData = (storage.retainsData ? 0 : min(perRound, participants) * clientData) + perRound * params * 16
        let trained = participants * (state + (storage.retainsData ? clientData : 0)) + evaluated * state + roundData
        let workers = Double(federation.jobs > 0 ? federation.jobs : cores)
        // `federation.trace`: its arrays (FederationTrace.values) and each traced client's round data.
        let traced = Double(min(federation.trace?.rounds ?? 0, federation.rounds))
        let trace = traced == 0 ? 0 : 4 * Double(FederationTrace.values(rounds: Int(traced), clients: Int(perRound.rounded(.up)),
                                                                         parameters: Int(params), shared: Int(params)))
            + traced * perRound * clientData
        memoryBytes = single * min(workers, max(built, 1)) + everyClient + kept + trained + trace
        let terms: [(Double, String)] = [
            (trace, ".federation.trace.rounds"),
            (everyClient, ".population.users"),
            (kept, federation.evaluateClients > 0 ? ".federation.evaluate_clients" : ".population.users"),
            (trained, storage.allClients ? ".population.users"
                : federation.clientsPerRound != nil ? ".federation.clients_per_round" : ".federation.client_fraction"),
        ]
        memoryKey = terms.max { $0.0 < $1.0 }!.1
        let evaluations = ((R / Double(federation.evaluateEvery) + T) * size.test / T * evaluated + T * size.test * evaluated) * share
        // Training: every built client's data once per local epoch in a stream (over its
        // participations); held data once per participation, and an experience's once per
        // participation in its block; personal training doubles the rows (APFL's personal model
        // trains on the same batches); FedRep adds its head epochs to the body's.
        let epochs = Double(federation.localEpochs + (federation.personal == .fedrep ? federation.fedrepHeadEpochs : 0))
        let participations = storage.expectedParticipations / max(N, 1)
        let passes = federation.localData == .stream ? 1 : federation.localData == .all ? participations : participations / Double(max(T, 1))
        let rows = built * share * size.train * epochs * passes * (federation.personal == .local || federation.personal == .apfl ? 2 : 1)
        // Data generation: once per built client, again for every later round it trains in
        // unless its data are kept.
        let generations = storage.retainsData ? built : built + max(storage.expectedParticipations - participants, 0)
        work = rows + evaluations + generations * share * size.generated + N + built * R
        workKey = memoryKey
        flops = 6 * params * rows + 2 * params * evaluations
        flopsKey = memoryKey
    }
}
