import ContinualCore

/// One client's local round, run by the toolkit's one training loop (`Trainer` with a
/// `LocalRoundSource`): the client starts from the global parameters, takes at most `steps`
/// optimizer steps (in at most `epochs` passes) over the data that arrived since its last round,
/// with any strategy plugins running locally, and hands back Δ = local − global.
///
/// - The optimizer starts fresh every round (its moments are not sent to the server), as in
///   FedAvg and FedProx.
/// - `proximalMu` > 0 adds FedProx's proximal term (`ProximalTerm`) after the given plugins;
///   at 0 no term is added, so FedProx(0) and FedAvg are the same computation.
/// - The loop evaluates on a test set after the experience; a local round has none (its result is
///   the parameters), so the experience's test set is empty and the round's accuracy is NaN.
/// - Deterministic: shuffling draws from `seed` (derive it from the run seed, round and client id).
public struct LocalRound: Sendable {
    public var spec: MLPSpec
    public var optimizer: OptimizerSpec
    public var options: TrainingOptions
    /// Most optimizer steps in the round (≥ 1).
    public var steps: Int
    /// Most passes over the client's data (≥ 1).
    public var epochs: Int
    /// FedProx's μ (0 = FedAvg).
    public var proximalMu: Double

    public init(spec: MLPSpec, optimizer: OptimizerSpec, options: TrainingOptions, steps: Int, epochs: Int = 1,
                proximalMu: Double = 0) {
        precondition(steps >= 1 && epochs >= 1, "a local round needs steps ≥ 1 and epochs ≥ 1")
        self.spec = spec
        self.optimizer = optimizer
        self.options = options
        self.steps = steps
        self.epochs = epochs
        self.proximalMu = proximalMu
    }

    /// Trains from `global` on `data` (labels in `head`'s range) and returns the client's update,
    /// weighted by its number of training samples.
    public func run(global: [Float], data: Samples, head: OutputHead, seed: UInt64,
                    plugins: [any StrategyPlugin] = []) throws -> ClientUpdate {
        var trainer = Trainer(spec: spec, optimizer: optimizer, options: options,
                              plugins: plugins + (proximalMu > 0 ? [ProximalTerm(mu: proximalMu)] : []), seed: seed)
        precondition(global.count == trainer.model.parameters.count,
                     "global model has \(global.count) parameters, the spec \(trainer.model.parameters.count)")
        trainer.model.parameters = global
        let features = (0..<data.dimension).map { "x\($0)" }
        let experience = Experience(index: 0, name: "local round", train: data, test: Samples(dimension: data.dimension))
        let stream = ExperienceStream(name: "client", featureNames: features, head: head, experiences: [experience])
        let outcome = try trainer.run(stream, source: LocalRoundSource(steps: steps, epochs: epochs),
                                      resumingFrom: nil, stopAfter: nil)
        let local = outcome.finalModel.parameters
        return ClientUpdate(delta: zip(local, global).map { $0 - $1 }, samples: data.count)
    }
}
