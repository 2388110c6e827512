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

extension FederatedClient {
    /// FedRep's round (Collins et al. 2021): `headPass` with only `head` trainable (the body
    /// frozen), then `bodyPass` with only `body` trainable (the head frozen), each a pass of the
    /// loop (its optimizer restarts; the head phase shuffles from its own stream). A phase of 0
    /// epochs is skipped. Returns the two phases' work summed.
    mutating func trainFedRep(on data: Samples, head: [Bool], body: [Bool], headPass: TrainingPass, bodyPass: TrainingPass,
                              period: Int, round: Int, scratch: inout LoopScratch) throws -> ExperienceRecord {
        let saved = trainer.model.trainable
        defer { trainer.model.trainable = saved }
        var total = ExperienceRecord()
        for (part, pass, stream) in [(head, headPass, ".head"), (body, bodyPass, "")] where pass.epochs > 0 {
            let mask = saved.map { s in s.indices.map { s[$0] && part[$0] } } ?? part
            trainer.model.trainable = mask
            let record = try trainRound(on: data, period: period, round: round, pass: pass, scratch: &scratch, stream: stream)
            guard trainer.model.trainable == mask else {
                throw TrainingError.invalid("a strategy plugin changed which parameters train; FedRep trains the head with the body frozen, then the body with the head frozen")
            }
            total.trainSetSize = record.trainSetSize
            total.trainableParameters = max(total.trainableParameters, record.trainableParameters)
            total.epochLosses += record.epochLosses
            total.epochPenalties += record.epochPenalties
            total.samplesProcessed += record.samplesProcessed
            total.steps += record.steps
            total.extraFLOPs += record.extraFLOPs
        }
        return total
    }
}
