import ContinualCore
import ContinualFederated
import ContinualStrategies

extension FederationEngine {
    /// The trace of the run (`federation.trace`), empty; refused when it would hold more than
    /// `FederationTraceConfig.maxValues` values.
    static func emptyTrace(_ setup: FederationSetup, parameters: Int) throws -> FederationTrace? {
        guard let config = setup.fed.trace else { return nil }
        let fed = setup.fed, N = setup.N
        let clients = fed.sampling == .poisson ? Int(((fed.clientFraction ?? 1) * Double(N)).rounded(.up)) : fed.invitedPerRound(clients: N)
        let values = FederationTrace.values(rounds: min(config.rounds, fed.rounds), clients: clients,
                                            parameters: parameters, shared: setup.sharedCount)
        guard values <= FederationTraceConfig.maxValues else {
            throw FederationRunner.Failure(description: "federation.trace: \(config.rounds) rounds of \(clients) clients with a model of "
                + "\(parameters) parameters would hold about \(values) values (at most \(FederationTraceConfig.maxValues)): trace fewer rounds or a smaller run")
        }
        return FederationTrace(sharedIndex: setup.shared.flatMap { Array($0) })
    }

    /// Round `r`'s trace before its server step, when `r` is traced.
    mutating func beginTrace(_ r: Int) -> TracedRound? {
        guard setup.fed.trace?.traces(r) ?? false else { return nil }
        traceAggregate = ([], [])
        var t = TracedRound()
        t.round = r
        t.globalBefore = server.global.parameters
        t.stateBefore = algorithms.flatMap(\.traceState)
        return t
    }

    /// Completes `t` after the server step and adds it to the outcome.
    mutating func finishTrace(_ t: TracedRound, _ all: [RoundEntry]) {
        var t = t
        t.globalAfter = server.global.parameters
        (t.aggregate, t.serverUpdate) = traceAggregate
        t.serverFirst = server.state.first
        t.serverSecond = server.state.second
        t.stateAfter = algorithms.flatMap(\.traceState)
        t.entries = all
        outcome.trace?.rounds.append(t)
        traceAggregate = ([], [])
    }
}

extension ClientTrace {
    /// What client `c` holds before its round's hooks, and the round's data.
    init(before c: FederatedClient, data: Samples) {
        dimension = data.dimension
        inputs = data.features
        labels = data.labels.map(Int.init)
        stateBefore = c.control
        personalBefore = c.personalLearner?.model.parameters ?? []
        alphaBefore = (c.personalLearner?.plugins.last as? APFLMixing)?.alpha ?? .nan
        moonPrevious = (c.trainer.plugins.last(where: { $0 is MoonTerm }) as? MoonTerm)?.previous ?? []
        let lwf = c.trainer.plugins.indices.first { $0 != c.serverTeacher && c.trainer.plugins[$0] is LearningWithoutForgetting }
        teacher = lwf.flatMap { (c.trainer.plugins[$0] as? LearningWithoutForgetting)?.previous?.parameters } ?? []
    }

    /// What it holds after them: its steps, state, local and personal models.
    mutating func finish(after c: FederatedClient, _ record: ExperienceRecord) {
        steps = record.steps
        appliedSteps = record.steps - record.skippedSteps
        stateAfter = c.control
        local = c.trainer.model.parameters
        personalAfter = c.personalLearner?.model.parameters ?? []
        alphaAfter = (c.personalLearner?.plugins.last as? APFLMixing)?.alpha ?? .nan
    }
}

extension FederatedClient {
    /// Starts logging the order of a traced round's steps on the learner and the personal learner.
    mutating func startBatchOrderLogs() {
        trainer.startBatchOrderLog()
        personalLearner?.startBatchOrderLog()
    }

    /// Ends the logs and puts their orders in `trace` (a second call finds none and does nothing).
    mutating func endBatchOrderLogs(into trace: inout ClientTrace?) {
        guard trainer.logsBatchOrder else { return }
        let order = trainer.endBatchOrderLog(), personal = personalLearner?.endBatchOrderLog() ?? []
        trace?.order = order
        trace?.personalOrder = personal
    }
}
