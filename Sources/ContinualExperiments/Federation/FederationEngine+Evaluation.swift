import ContinualCore

extension FederationEngine {
    /// Evaluation after round `r`: every `evaluate_every` rounds and the last, the personal model
    /// (`FederatedAlgorithm.phoneModel`) and the global one on the current test data; personal
    /// matrix rows after the rounds that end an experience (`ArrivalSchedule`, per client).
    mutating func evaluate(_ r: Int) {
        let fed = setup.fed
        let evaluateNow = (r + 1) % fed.evaluateEvery == 0 || r == setup.R - 1
        let last = r == setup.R - 1
        let g = server.global, algorithms = self.algorithms, isEvaluated = setup.isEvaluated
        let batch = setup.config.training.options.evaluationBatchSize
        let table = self.table
        table.forEach(where: { k in
            isEvaluated.contains(table.clients[k].id) && (evaluateNow || table.clients[k].schedule.rowRound.contains(r))
        }, workers: setup.workers) { c, _ in
            let p = c.schedule.period(ofRound: r)
            let rows = c.schedule.rowRound.filter { $0 == r }
            let ws = g.makeWorkspace(capacity: batch)
            let client = c
            let phone = algorithms.lazy.compactMap { $0.phoneModel(client, global: g, round: r, workspace: ws) }.first
            func personal(_ e: Experience) -> Double {
                Self.accuracy(of: phone, &c, on: e, workspace: ws)
            }
            if evaluateNow {
                c.personalSeries.append(personal(c.tests[p]))
                c.globalSeries.append(fed.share == .all ? g.accuracy(on: c.tests[p].test, route: 0, workspace: ws) : .nan)
            }
            for _ in rows { c.matrix.append(c.tests.map(personal)) }
            if last && fed.share == .all {
                c.globalFinal = c.tests.map { g.accuracy(on: $0.test, route: 0, workspace: ws) }
            }
        }
        if evaluateNow { outcome.evaluatedRounds.append(r) }
    }

    /// The phone's accuracy on `e`'s test set: `phone`'s model, or the client's personal learner
    /// or learner with their plugins (nil, or no personal learner).
    static func accuracy(of phone: PhoneModel?, _ c: inout FederatedClient, on e: Experience, workspace ws: Workspace) -> Double {
        switch phone {
        case .model(let m)?:
            return m.accuracy(on: e.test, route: 0, workspace: ws)
        case .personalLearner(let m)?:
            if var learner = c.personalLearner {
                defer { c.personalLearner = learner }
                return Trainer.evaluate(model: m ?? learner.model, plugins: &learner.plugins, experiences: [e], workspace: ws)[0]
            }
        case nil: break
        }
        let model = c.trainer.model
        return Trainer.evaluate(model: model, plugins: &c.trainer.plugins, experiences: [e], workspace: ws)[0]
    }
}
