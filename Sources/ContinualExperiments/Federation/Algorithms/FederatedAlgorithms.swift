/// The registry of federated algorithms (`FederatedAlgorithm`): a new algorithm is one file
/// and one line here. A run uses every algorithm whose `init?` accepts its config, in this
/// order — the order their learner plugins join the strategy's and their hooks run (APFL's step
/// recorder, then FLwF-2T's teacher, then FedProx's, SCAFFOLD's or FedDyn's term, which stays last).
enum FederatedAlgorithms {
    static var registered: [any FederatedAlgorithm.Type] {
        [
            FedAvg.self,
            LocalTraining.self,
            FedRep.self,
            Ditto.self,
            APFL.self,
            PerFedAvg.self,
            PFedMe.self,
            ServerDistillation.self,
            MOON.self,
            FedProx.self,
            SCAFFOLD.self,
            FedNova.self,
            QFedAvg.self,
            FedBuff.self,
            FedDyn.self,
        ]
    }

    /// The run's algorithms, in registry order.
    static func make(_ setup: AlgorithmSetup) -> [any FederatedAlgorithm] {
        registered.compactMap { $0.init(setup) }
    }
}
