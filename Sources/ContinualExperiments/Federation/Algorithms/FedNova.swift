import ContinualCore

/// FedNova (Wang et al. 2020; `aggregation: "fednova"`): each client sends, beside its update,
/// the normaliser aᵢ of its local round (`FederationConfig.novaNormalizer`: τ for plain SGD, the
/// momentum and proximal/weight-decay forms otherwise; applied steps only), and the server
/// averages the updates divided by aᵢ, weighted by samples, rescaled by the weighted mean of aᵢ
/// (`AggregationRule.normalized`). The normaliser is one number: it is not counted in the bytes.
struct FedNova: FederatedAlgorithm {
    let fed: FederationConfig
    let optimizer: OptimizerSpec

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.aggregation == .fednova else { return nil }
        fed = setup.fed
        optimizer = setup.optimizer
    }

    func afterLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ trained: TrainedRound,
                         _ upload: inout RoundEntry, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        upload.steps = fed.novaNormalizer(steps: trained.record.steps - trained.record.skippedSteps, optimizer: optimizer)
        return nil
    }
}
