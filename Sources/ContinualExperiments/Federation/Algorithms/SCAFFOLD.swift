import ContinualCore
import ContinualFederated

/// SCAFFOLD (Karimireddy et al. 2020, Algorithm 1, option II; `aggregation: "scaffold"`): every
/// local step follows g + c − cᵢ (`ControlVariateTerm`, the learner's last plugin); after K
/// applied steps the client's control becomes cᵢ⁺ = cᵢ − c + (x − y)/(Kη) and Δcᵢ = cᵢ⁺ − cᵢ
/// travels beside the update (float32, and c comes down: `extraFloats`); the server averages
/// the updates unweighted (`AggregationRule.uniformMean`) and moves c by (1/N)·ΣΔcᵢ (`Scaffold`).
/// A straggler's update never reaches the server, so it keeps its old cᵢ.
struct SCAFFOLD: FederatedAlgorithm {
    let sharedCount: Int
    let learningRate: Float
    /// The server's control c (the same on every rank).
    var serverControl: [Float]

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.aggregation == .scaffold else { return nil }
        sharedCount = setup.sharedCount
        learningRate = setup.optimizer.learningRate
        serverControl = [Float](repeating: 0, count: setup.sharedCount)
    }

    func learnerPlugins() -> [any StrategyPlugin] { [ControlVariateTerm()] }

    var extraFloats: (up: Int, down: Int) { (sharedCount, sharedCount) }

    var traceState: [Float] { serverControl }

    func beforeLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ upload: inout RoundEntry) throws {
        // Every local step uses g + c − cᵢ.
        let ci = c.control, control = serverControl
        Self.setCorrection(&c, control.indices.map { control[$0] - (ci.isEmpty ? 0 : ci[$0]) })
    }

    func afterLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ trained: TrainedRound,
                         _ upload: inout RoundEntry, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        Self.setCorrection(&c, [])
        // K counts the steps applied: a mixed-precision step skipped for overflow moved nothing.
        let applied = trained.record.steps - trained.record.skippedSteps
        guard trained.arrives, applied > 0 else { return nil }
        let updated = Scaffold.clientControl(old: c.control, server: serverControl, start: round.global,
                                             end: c.trainer.model.parameters, steps: applied, learningRate: learningRate)
        upload.control = updated.indices.map { updated[$0] - (c.control.isEmpty ? 0 : c.control[$0]) }
        c.control = updated
        return nil
    }

    mutating func updateServerState(_ completed: [RoundEntry], clients: Int) {
        Scaffold.updateServerControl(&serverControl, deltas: completed.map(\.control), clients: clients)
    }

    func report(into outcome: inout FederationOutcome, finals: [ClientFinal], clients: Int) {
        outcome.serverControl = serverControl
        // Mean of every client's cᵢ (0 for clients never trained), in client order.
        var acc = [Double](repeating: 0, count: sharedCount)
        for f in finals where !f.control.isEmpty { for j in acc.indices { acc[j] += Double(f.control[j]) } }
        outcome.clientControlMean = acc.map { $0 / Double(clients) }
    }

    func encodeState(into w: inout ByteWriter) { w.floats(serverControl) }

    mutating func restoreState(from r: inout ByteReader) throws {
        serverControl = try r.floats(count: sharedCount, what: "SCAFFOLD's server control")
    }

    /// Sets the correction c − cᵢ on the client's learner (its `ControlVariateTerm`).
    static func setCorrection(_ c: inout FederatedClient, _ correction: [Float]) {
        guard let k = c.trainer.plugins.lastIndex(where: { $0 is ControlVariateTerm }),
              var term = c.trainer.plugins[k] as? ControlVariateTerm else { return }
        term.correction = correction
        c.trainer.plugins[k] = term
    }
}
