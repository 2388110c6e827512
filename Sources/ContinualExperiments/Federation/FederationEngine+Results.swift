import ContinualCore
import ContinualMetrics

extension FederationEngine {
    /// The run's result after the last round: every client's numbers gathered from its rank, the
    /// per-client and per-round outcome, the algorithms' reports, and the evaluated clients'
    /// personal matrices as the population's users.
    mutating func finish(prototype: Trainer, into result: inout RunResult) throws {
        let finals = try gatherFinals()
        fillClients(finals)
        for algorithm in algorithms { algorithm.report(into: &outcome, finals: finals, clients: setup.N) }
        outcome.clientTrainSeconds = finals.reduce(0.0) { $0 + $1.trainSeconds }
        let evalFinals = finals.filter { setup.isEvaluated.contains($0.id) }
        if setup.fed.share == .all { outcome.globalFinalAccuracy = evalFinals.map(\.globalFinal) }
        let quantiles = setup.population.quantiles
        for k in outcome.evaluatedRounds.indices {
            let personal = evalFinals.map { $0.personalSeries[k] }.filter { !$0.isNaN }.sorted()
            let global = evalFinals.map { $0.globalSeries[k] }.filter { !$0.isNaN }.sorted()
            outcome.personalAccuracy.append(personal.isEmpty ? .nan : personal.reduce(0, +) / Double(personal.count))
            outcome.globalAccuracy.append(global.isEmpty ? .nan : global.reduce(0, +) / Double(global.count))
            outcome.personalQuantiles.append(quantiles.map { PopulationExecutor.quantile(personal, $0) })
            outcome.globalQuantiles.append(quantiles.map { PopulationExecutor.quantile(global, $0) })
        }
        // The evaluated clients are the population's users: their personal matrices give the
        // run's metrics exactly as a population run's users do.
        let users = evalFinals.map { user($0, first: $0.id == evalFinals.first?.id, prototype: prototype) }
        PopulationExecutor.aggregate(users, population: setup.population, seed: setup.popSeed, userIds: setup.evaluated,
                                     into: &result)
        result.federation = outcome
        // Training time of the run: every client's local and personal rounds (not only the evaluated).
        result.outcome?.trainSeconds = outcome.clientTrainSeconds
        result.streamMetadata["population_note"] = "accuracy_matrix, baselines and metrics are over the mean personal "
            + "matrices of the evaluated clients (federation/evaluated_client); per-client values in population/, per round in federation/"
        if let o = result.outcome {
            result.device = RunExecutor.deviceReport(setup.config, stream: setup.firstStream, model: o.finalModel, outcome: o)
        }
    }

    /// Every client's numbers (each rank holds its own), in client order.
    func gatherFinals() throws -> [ClientFinal] {
        let finals = try allGather(table.clients, encode: { ClientFinal.encode($0, into: &$1) }, decode: ClientFinal.decode)
            .sorted { $0.id < $1.id }
        let gathered = Set(finals.map(\.id))
        guard gathered.count == finals.count, gathered.allSatisfy({ (0..<setup.N).contains($0) }),
              setup.evaluated.allSatisfy({ gathered.contains($0) }) else {
            throw FederationRunner.Failure(description: "gathered \(finals.count) clients, not every evaluated one once")
        }
        return finals
    }

    /// Per client, for all N: the clients never built were never invited, so their counts are
    /// 0; their adversary flag and device pattern are drawn from their id as a built one's are.
    mutating func fillClients(_ finals: [ClientFinal]) {
        let N = setup.N, fed = setup.fed
        var invitations = [Int](repeating: 0, count: N), participations = invitations, bytesUp = invitations
        var bytesDown = invitations, dropouts = invitations, straggles = invitations
        var joules = [Double](repeating: 0, count: N)
        var isAdversary = (0..<N).map { setup.adversaries.contains($0) }
        var patterns = fed.deviceMix == nil ? [String](repeating: setup.device.state.pattern.rawValue, count: N)
            : (0..<N).map { ClientFactory.deviceState($0, config: setup.config, fed: fed, device: setup.device).state.pattern.rawValue }
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
        outcome.evaluatedClients = setup.evaluated
    }

    /// An evaluated client as a population user; the first also carries the run-level stream
    /// description and curves, and the server's model as the run's final parameters.
    func user(_ f: ClientFinal, first: Bool, prototype: Trainer) -> PopulationExecutor.UserResult {
        let T = setup.T
        var u = PopulationExecutor.UserResult()
        u.dataSeed = f.dataSeed
        u.modelSeed = f.modelSeed
        u.status = f.matrix.count == T ? .completed : .failed
        u.message = u.status == .completed ? "" : "client \(f.id): \(f.matrix.count) of \(T) matrix rows"
        u.matrix = f.matrix
        u.initial = f.initial
        u.random = f.random
        u.work = f.work
        u.trainSeconds = f.trainSeconds
        if u.status == .completed {
            u.metrics = MetricSet(matrix: AccuracyMatrix(f.matrix), randomBaseline: f.random,
                                  initialBaseline: f.initial).named.map(\.value)
        } else {
            let names = MetricSet(matrix: AccuracyMatrix([[0]]), randomBaseline: [0], initialBaseline: [0]).named
            u.metrics = names.map { _ in .nan }
        }
        guard first else { return u }
        let o = TrainingOutcome(progress: progress(f), testSizes: setup.firstStream.experiences.map(\.test.count),
                                finalModel: server.global,
                                pluginReports: prototype.plugins.map { ($0.name, $0.report()) },
                                pluginResources: prototype.plugins.map(\.resources))
        u.outcome = o
        u.costs = CostModel(model: o.finalModel, optimizer: Optimizer(spec: setup.config.optimizer.spec,
                                                                      parameterCount: o.finalModel.parameterCount))
        u.stream = setup.firstStream
        return u
    }

    /// The run-level curves: the first evaluated client's.
    func progress(_ f: ClientFinal) -> TrainingProgress {
        let T = setup.T
        var progress = TrainingProgress()
        progress.experiencesDone = T
        progress.accuracy = f.matrix
        progress.initialAccuracy = f.initial
        progress.randomAccuracy = f.random
        let nan = EvaluationRecord.nanRecord(classes: setup.classes)
        progress.evaluations = Array(repeating: Array(repeating: nan, count: T), count: T)
        progress.initialEvaluation = Array(repeating: nan, count: T)
        progress.randomEvaluation = Array(repeating: nan, count: T)
        progress.trainSetSizes = setup.trainSizes
        progress.lossCurve = (0..<T).map { f.lossCount[$0] > 0 ? [f.lossSum[$0] / Double(f.lossCount[$0])] : [.nan] }
        progress.penaltyCurve = (0..<T).map { f.lossCount[$0] > 0 ? [f.penaltySum[$0] / Double(f.lossCount[$0])] : [0] }
        progress.trainableParameters = Array(repeating: server.global.trainableCount, count: T)
        f.work.apply(to: &progress)
        return progress
    }
}
