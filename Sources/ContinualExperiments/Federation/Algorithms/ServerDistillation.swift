import ContinualCore
import ContinualStrategies

/// FLwF-2T's second teacher (Usmanova et al. 2021; `server_distillation` = β): in every
/// federated round the client also distils the received server model's softened outputs on its
/// batches at temperature `server_distillation_temperature` — LwF's term
/// (`LearningWithoutForgetting`) whose old model is set to the server's at the round's start.
struct ServerDistillation: FederatedAlgorithm {
    let options: LearningWithoutForgetting.Options

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.serverDistillation > 0 else { return nil }
        options = .init(lambda: setup.fed.serverDistillation, temperature: setup.fed.serverDistillationTemperature)
    }

    func learnerPlugins() -> [any StrategyPlugin] { [LearningWithoutForgetting(options: options)] }

    func prepare(_ client: inout FederatedClient, _ build: LearnerBuilder) throws {
        // The teacher is the last LwF term: the strategy's own (if any) comes before it.
        client.serverTeacher = client.trainer.plugins.lastIndex { $0 is LearningWithoutForgetting }
    }

    func beforeLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ upload: inout RoundEntry) throws {
        try c.setServerTeacher(round.global)
    }
}
