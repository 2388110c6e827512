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
/// - The round is the loop's per-experience code (`Trainer.trainRound`): the same hooks as every
///   run, no evaluation (a round's result is its parameters). `FederationRunner` drives the same
///   call for every client of a federated experiment.
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
        try trainer.prepareRounds(dimension: data.dimension, head: head, featureNames: (0..<data.dimension).map { "x\($0)" },
                                  experienceCount: 1)
        precondition(global.count == trainer.model.parameters.count,
                     "global model has \(global.count) parameters, the spec \(trainer.model.parameters.count)")
        trainer.model.parameters = global
        let experience = Experience(index: 0, name: "local round", train: data, test: Samples(dimension: data.dimension))
        var shuffle = RandomSource(seed: seed, stream: "shuffle")
        var scratch = LoopScratch()
        _ = try trainer.trainRound(context: ExperienceContext(index: 0, experiences: [experience], route: 0),
                                   pass: LocalRoundSource(steps: steps, epochs: epochs).pass(experience: 0, options: options),
                                   shuffle: &shuffle, scratch: &scratch)
        let local = trainer.model.parameters
        return ClientUpdate(delta: zip(local, global).map { $0 - $1 }, samples: data.count)
    }
}
