import ContinualCore
import ContinualFederated

/// q-FedAvg (Li et al. 2020, "Fair resource allocation in federated learning", Algorithm 2;
/// `aggregation: "qfedavg"`): each client measures Fₖ(wᵗ), its mean loss at the received
/// global model on the round's data, and sends it beside its update; the server weights the
/// updates by Fₖ^q (`AggregationRule.qFair`, with L = `qfed_lipschitz` or 1/η).
struct QFedAvg: FederatedAlgorithm {
    let evaluationBatchSize: Int

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.aggregation == .qfedavg else { return nil }
        evaluationBatchSize = setup.config.training.options.evaluationBatchSize
    }

    func beforeLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ upload: inout RoundEntry) throws {
        let ws = c.trainer.model.makeWorkspace(capacity: evaluationBatchSize)
        upload.loss = PerFedAvgRound.meanGradient(c.trainer.model, round.data, rows: 0..<round.data.count, workspace: ws).1
    }
}
