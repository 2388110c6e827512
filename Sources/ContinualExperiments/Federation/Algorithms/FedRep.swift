import ContinualCore

/// FedRep (Collins et al. 2021; `personal: "fedrep"`): only the body (every layer but the
/// output layer: `share: "core"`) is shared; in its round the client first trains its own head
/// for `fedrep_head_epochs` epochs with the body frozen, then the body for `local_epochs` epochs
/// with the head frozen (`FederatedClient.trainFedRep`), and sends the body.
struct FedRep: FederatedAlgorithm {
    let head: [Bool]
    let body: [Bool]
    let headPass: TrainingPass

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.personal == .fedrep else { return nil }
        var mask = [Bool](repeating: false, count: setup.parameterCount)
        for range in setup.shared { for i in range { mask[i] = true } }
        body = mask
        head = mask.map { !$0 }
        headPass = TrainingPass(epochs: setup.fed.fedrepHeadEpochs, shuffle: setup.config.training.options.shuffle)
    }

    func localRound(_ c: inout FederatedClient, _ round: ClientRound, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        try c.trainFedRep(on: round.data, head: head, body: body, headPass: headPass, bodyPass: round.pass,
                          period: round.period, round: round.round, scratch: &scratch)
    }
}
