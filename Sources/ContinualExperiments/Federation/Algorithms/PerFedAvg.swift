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
        let steps = method.steps(samples: round.data.count, batchSize: batchSize, epochs: round.pass.epochs,
                                 maxSteps: round.pass.maxSteps)
        return try c.trainOwnLoop(on: round.data, period: round.period, round: round.round) { model, shuffle in
            let r = method.train(&model, on: round.data, batchSize: batchSize, steps: steps, shuffle: &shuffle)
            return (r.rows, r.steps, r.meanLoss)
        }
    }

    func phoneModel(_ client: FederatedClient, global: MLP, round: Int, workspace: Workspace) -> PhoneModel? {
        .model(method.adapt(global, on: client.data(0, client.schedule.arrival(round + 1), flip: nil), workspace: workspace))
    }
}
