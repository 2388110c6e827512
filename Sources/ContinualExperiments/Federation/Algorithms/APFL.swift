import ContinualCore
import ContinualFederated

/// APFL (Deng et al. 2020, Algorithm 1; `personal: "apfl"`): a personal model v trained, in the
/// client's rounds and on the same batches, on the mix v̄ = α·v + (1 − α)·w with the client's
/// FedAvg iterate w before each of its steps (`StepTrajectory` on the FedAvg learner records w;
/// `APFLMixing` on the personal learner mixes and learns α at `apfl_alpha_lr`); the phone
/// predicts with α·v + (1 − α)·w_g, w_g the current global model. Nothing of v travels.
struct APFL: FederatedAlgorithm {
    let alpha: Double
    let alphaRate: Double

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.personal == .apfl else { return nil }
        alpha = setup.fed.apflAlpha
        alphaRate = setup.fed.apflAlphaRate(optimizer: setup.optimizer)
    }

    func learnerPlugins() -> [any StrategyPlugin] { [StepTrajectory()] }

    func prepare(_ client: inout FederatedClient, _ build: LearnerBuilder) throws {
        client.personalLearner = try build.learner(adding: [APFLMixing(alpha: alpha, alphaLearningRate: alphaRate)])
    }

    func afterLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ trained: TrainedRound,
                         _ upload: inout RoundEntry, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        var trajectory: [[Float]] = []
        if let k = c.trainer.plugins.firstIndex(where: { $0 is StepTrajectory }),
           var recorder = c.trainer.plugins[k] as? StepTrajectory {
            trajectory = recorder.take()
            c.trainer.plugins[k] = recorder
        }
        return try c.trainPersonal(on: c.data(round.lo, round.end, flip: nil), global: round.global, trajectory: trajectory,
                                   period: round.period, round: round.round, pass: round.pass, scratch: &scratch)
    }

    func phoneModel(_ client: FederatedClient, global: MLP, round: Int, workspace: Workspace) -> PhoneModel? {
        guard let learner = client.personalLearner, let term = learner.plugins.last as? APFLMixing else {
            return .personalLearner(nil)
        }
        var m = learner.model
        m.parameters = APFLMixing.mix(learner.model.parameters, global.parameters, alpha: term.alpha)
        return .personalLearner(m)
    }
}
