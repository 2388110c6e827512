import ContinualCore
import ContinualFederated

/// The phone's own copy trains on new data whenever its device allows (`personal: "local"`):
/// FedAvg + fine-tuning (`share: "all"`), FedPer (Arivazhagan et al. 2019, `share: "core"`: the
/// head never leaves the phone) and local-only continual learning (`share: "none"`, the
/// baseline: no server). The copy takes the global shared part when the client takes part in a
/// round; between rounds (not invited, or invited with no new data for the server) it trains on
/// the data that arrived since its last training, without FedProx's term (which belongs to
/// federated rounds). The phone predicts with its copy (the engine's default).
struct LocalTraining: FederatedAlgorithm {
    let pass: TrainingPass
    let consolidate: FederationConfig.Consolidation

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.personal == .local else { return nil }
        pass = setup.pass
        consolidate = setup.fed.consolidate
    }

    func trainsAlone(_ client: FederatedClient, round: Int) -> Bool {
        client.available[round] && client.schedule.start(client.personalCursor, round: round) < client.schedule.arrival(round + 1)
    }

    func aloneRound(_ c: inout FederatedClient, round: Int, period: Int, end: Int,
                    scratch: inout LoopScratch) throws -> ExperienceRecord? {
        let data = c.data(c.schedule.start(c.personalCursor, round: round), end, flip: nil)
        var removed: (Int, any StrategyPlugin)? = nil
        if let k = c.trainer.plugins.lastIndex(where: { $0 is ProximalTerm }) {
            removed = (k, c.trainer.plugins.remove(at: k))
        }
        defer { if let (k, term) = removed { c.trainer.plugins.insert(term, at: k) } }
        let record = try c.trainRound(on: data, period: period, round: round, pass: pass, scratch: &scratch,
                                      dataEnd: consolidate == .experience ? c.schedule.finished(afterRound: round) : nil)
        c.personalCursor = end
        return record
    }

    func afterLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ trained: TrainedRound,
                         _ upload: inout RoundEntry, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        c.personalCursor = max(c.personalCursor, round.end)
        return nil
    }
}
