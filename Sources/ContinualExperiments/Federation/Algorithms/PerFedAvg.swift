import ContinualCore
import ContinualFederated

/// Per-FedAvg (Fallah et al. 2020, Algorithm 1; `personal: "per_fedavg"`): the clients train a
/// meta-model whose one-step adaptation fits them (`PerFedAvgRound`: first-order or Hessian-free
/// meta-gradient, inner step `per_fedavg_alpha`, outer step β = the run's learning rate); the
/// phone predicts with the global model after one step of `per_fedavg_alpha` on the data it has
/// received.
struct PerFedAvg: FederatedAlgorithm {
    let method: PerFedAvgRound
    let batchSize: Int

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.personal == .perFedAvg else { return nil }
        method = setup.fed.perFedAvgRound(optimizer: setup.optimizer)
        batchSize = setup.config.training.options.batchSize
    }

    func localRound(_ c: inout FederatedClient, _ round: ClientRound, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        try c.trainOwnLoop(method, round: round, batchSize: batchSize)
    }

    func phoneModel(_ client: FederatedClient, global: MLP, round: Int, workspace: Workspace) -> PhoneModel? {
        .model(method.adapt(global, on: client.data(client.schedule.firstHeld(round: round), client.schedule.arrival(round + 1), flip: nil), workspace: workspace))
    }
}
