import ContinualCore
import ContinualFederated

/// pFedMe (Dinh et al. 2020, Algorithm 1; `personal: "pfedme"`): each local step solves the
/// personal problem argmin_θ f(θ) + (λ/2)‖θ − w‖² by `pfedme_inner_steps` steps of
/// `pfedme_personal_lr` and moves the local model w towards θ (`PFedMeRound`); the server mixes
/// w ← (1 − β)w + β·mean(wᵢ), i.e. applies β·aggregate (`pfedme_beta`); the phone predicts with
/// θ̂(w_g), the personal problem solved at the current global model on the data it has received.
struct PFedMe: FederatedAlgorithm {
    let method: PFedMeRound
    let beta: Float
    let batchSize: Int

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.personal == .pfedme else { return nil }
        method = setup.fed.pfedmeRound(optimizer: setup.optimizer)
        beta = Float(setup.fed.pfedmeBeta)
        batchSize = setup.config.training.options.batchSize
    }

    func localRound(_ c: inout FederatedClient, _ round: ClientRound, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        try c.trainOwnLoop(method, round: round, batchSize: batchSize)
    }

    func transform(_ aggregate: [Float]) -> [Float] {
        PFedMeRound.serverUpdate(aggregate, beta: beta)
    }

    func phoneModel(_ client: FederatedClient, global: MLP, round: Int, workspace: Workspace) -> PhoneModel? {
        .model(method.personalise(global, on: client.data(client.schedule.firstHeld(round: round), client.schedule.arrival(round + 1), flip: nil), workspace: workspace))
    }
}
