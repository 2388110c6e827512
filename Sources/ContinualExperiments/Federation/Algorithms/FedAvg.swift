import ContinualCore

/// FedAvg as evaluated in McMahan et al. 2017 (`personal: "global"`): clients run the strategy's
/// loop on their new data and send Δ = w_local − w; the server averages them by samples (or by
/// the configured rule) and applies the server optimizer (SGD at rate 1 is w + mean Δ,
/// Algorithm 1); the phone predicts with the current global model.
struct FedAvg: FederatedAlgorithm {
    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.personal == .global else { return nil }
    }

    func phoneModel(_ client: FederatedClient, global: MLP, round: Int, workspace: Workspace) -> PhoneModel? {
        .model(global)
    }
}
