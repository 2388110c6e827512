import ContinualCore
import ContinualFederated

/// Ditto (Li et al. 2021, Algorithm 1; `personal: "ditto"`): beside the global learner, the
/// phone keeps a personal model v (the same start, strategy and seed) that, in every round the
/// client takes part in, trains on the same new (clean) data with the pull (λ/2)‖v − wᵗ‖² to the
/// round's global model (`ditto_lambda`; `DittoTerm`, the personal learner's last plugin); the
/// phone predicts with v. Nothing of v travels.
struct Ditto: FederatedAlgorithm {
    let lambda: Double
    let learningRate: Float

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.personal == .ditto else { return nil }
        lambda = setup.fed.dittoLambda
        learningRate = setup.optimizer.learningRate
    }

    func prepare(_ client: inout FederatedClient, _ build: LearnerBuilder) throws {
        client.personalLearner = try build.learner(adding: [DittoTerm(lambda: lambda, learningRate: learningRate)])
    }

    func afterLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ trained: TrainedRound,
                         _ upload: inout RoundEntry, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        try c.trainPersonal(on: c.data(round.lo, round.end, flip: nil), global: round.global, trajectory: [],
                            period: round.period, round: round.round, pass: round.pass, scratch: &scratch)
    }

    func phoneModel(_ client: FederatedClient, global: MLP, round: Int, workspace: Workspace) -> PhoneModel? {
        .personalLearner(nil)
    }
}
