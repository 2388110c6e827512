import ContinualCore
import ContinualFederated

/// FedProx (Li et al. 2020, eq. 2): the local objective of a federated round adds
/// (μ/2)‖w − wᵗ‖², wᵗ the received model (`proximal_mu` = μ; see `ProximalTerm`). The term
/// is the learner's last plugin; it is set aside when a phone trains on its own between rounds
/// (`LocalTraining`).
struct FedProx: FederatedAlgorithm {
    let mu: Double

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.proximalMu > 0 else { return nil }
        mu = setup.fed.proximalMu
    }

    func learnerPlugins() -> [any StrategyPlugin] { [ProximalTerm(mu: mu)] }
}
