import Foundation
import ContinualCore
import ContinualMetrics
import ContinualScenarios

/// What a federated run fixes before its first round, the same on every rank: the clients'
/// data source, the seeded choices (adversaries, evaluated clients), the server's initial model
/// and which of its parameters travel (`FederationConfig` for the semantics).
struct FederationSetup: Sendable {
    let config: RunConfig
    let fed: FederationConfig
    let population: PopulationConfig
    /// Clients, rounds, this process's rank of `size`, and worker threads.
    let N: Int, R: Int, rank: Int, size: Int, workers: Int
    let popSeed: UInt64
    let device: DeviceConfig
    /// The local round's pass: `local_epochs` epochs, at most `local_steps` steps.
    let pass: TrainingPass
    let adversaries: Set<Int>
    let evaluated: [Int]
    let isEvaluated: Set<Int>
    /// A split of the scenario's stream among the clients (nil: the population's users).
    let partition: ClientPartition?
    let baseStream: ExperienceStream?
    /// Client `id`'s model seed and stream.
    let source: @Sendable (Int) throws -> (modelSeed: UInt64, stream: ExperienceStream)
    let spec: MLPSpec
    /// Client 0's stream (or the partitioned one): the shapes, and the run-level description.
    let firstStream: ExperienceStream
    let initialParameters: [Float]
    let shared: [Range<Int>]
    let sharedCount: Int
    let traffic: TrainingTraffic
    let storage: FederationStorage

    var T: Int { firstStream.experiences.count }
    var trainSizes: [Int] { firstStream.experiences.map(\.train.count) }
    var classes: Int { spec.head.classCount }
    /// The shared schedule (clients of the prototype's sizes); each client keeps its own.
    var schedule: ArrivalSchedule { ArrivalSchedule(trainSizes: trainSizes, rounds: R, data: fed.localData) }

    /// The setup of `run` on `transport`'s rank, and the prototype learner (the server's model:
    /// the run seed's initialisation or the warm start, prepared by the strategy).
    static func make(_ run: ResolvedRun, transport: any FederationTransport,
                     plan: FederationStorage?) throws -> (FederationSetup, Trainer) {
        let config = run.config
        guard let fed = config.federation, let population = config.population else {
            throw FederationRunner.Failure(description: "a federated run needs \"federation\" and \"population\" blocks")
        }
        let generator = config.scenario.options as? any PopulationScenario
        guard generator != nil || fed.partition != nil else {
            throw FederationRunner.Failure(description: "scenario \"\(config.scenario.typeName)\" does not support populations, so it cannot give "
                + "federated clients; split its data among them with \"federation\": {\"partition\": {...}}")
        }
        let N = population.users, R = fed.rounds
        let popSeed = population.seed ?? config.seed
        // A data file's population: its users (one client per person), picked from the file.
        let scenario = try generator.map { try $0.forPopulation(users: N, seed: popSeed) }
        let (adversaries, evaluated) = seededChoices(config, fed: fed, clients: N)
        let (partition, baseStream) = try split(config, fed: fed, clients: N)
        let source: @Sendable (Int) throws -> (modelSeed: UInt64, stream: ExperienceStream) = { id in
            if let partition, let baseStream {
                var rng = RandomSource(seed: popSeed, stream: "federation.partition.client.\(id)")
                return (rng.next(), partition.stream(of: id, from: baseStream))
            }
            // The same person as a population run's user `id` (their validation carve too).
            let member = PopulationExecutor.member(id, of: scenario!, spread: population.spread, seed: popSeed)
            return (member.modelSeed, try PopulationExecutor.stream(ofUser: id, options: member.options,
                                                                    modelSeed: member.modelSeed, config: config))
        }
        let stream = try baseStream ?? source(0).stream
        let (spec, prototype) = try makePrototype(config, rounds: R, stream: stream)
        let shared = sharedRanges(of: prototype.model, share: fed.share)
        let setup = FederationSetup(
            config: config, fed: fed, population: population, N: N, R: R, rank: transport.rank, size: transport.size,
            workers: max(1, fed.jobs > 0 ? fed.jobs : ProcessInfo.processInfo.activeProcessorCount),
            popSeed: popSeed, device: config.device ?? DeviceConfig(),
            pass: TrainingPass(epochs: fed.localEpochs, shuffle: config.training.options.shuffle,
                               maxSteps: fed.localSteps > 0 ? fed.localSteps : nil),
            adversaries: adversaries, evaluated: evaluated, isEvaluated: Set(evaluated),
            partition: partition, baseStream: baseStream, source: source, spec: spec, firstStream: stream,
            initialParameters: prototype.model.parameters, shared: shared, sharedCount: shared.reduce(0) { $0 + $1.count },
            traffic: TrainingTraffic(model: prototype.model, optimizer: config.optimizer.spec),
            storage: plan ?? FederationStorage(fed, clients: N))
        return (setup, prototype)
    }

    /// Seeded choices fixed for the whole run: the adversaries and the evaluated clients.
    static func seededChoices(_ config: RunConfig, fed: FederationConfig, clients N: Int) -> (Set<Int>, [Int]) {
        let rootRNG = RandomSource(seed: config.seed, stream: "federation")
        var ids = Array(0..<N)
        var rng = rootRNG.derived("adversaries")
        rng.shuffle(&ids)
        let adversaries = Set(ids.prefix(Int((fed.adversaryFraction * Double(N)).rounded())))
        guard fed.evaluateClients > 0, fed.evaluateClients < N else { return (adversaries, Array(0..<N)) }
        var evaluated = Array(0..<N)
        var evaluateRNG = rootRNG.derived("evaluate")
        evaluateRNG.shuffle(&evaluated)
        return (adversaries, evaluated.prefix(fed.evaluateClients).sorted())
    }

    /// The clients as a seeded split of the scenario's stream (`partition`), or nil.
    static func split(_ config: RunConfig, fed: FederationConfig,
                      clients N: Int) throws -> (ClientPartition?, ExperienceStream?) {
        guard let pc = fed.partition else { return (nil, nil) }
        let base = try partitionedStream(config)
        switch Result(catching: { try ClientPartition.make(base, clients: N, config: pc, seed: pc.seed ?? config.seed) }) {
        case .success(let p): return (p, base)
        case .failure(let error):
            throw FederationRunner.Failure(description: ".federation.\((error as? ClientPartition.Failure)?.key ?? "partition"): \(error)")
        }
    }

    /// The stream a partition splits among the clients: the scenario's, or with
    /// `"validation_split"` the scenario's with each experience's test set replaced by samples
    /// carved from its training set. The partition then deals those validation samples out as it
    /// deals test samples (each client's share following its training labels), so a selection run
    /// scores every client on data held out of the training pool and never reads a test sample.
    static func partitionedStream(_ config: RunConfig) throws -> ExperienceStream {
        let base = try config.scenario.options.makeStream(seed: config.seed)
        return try config.validationSplit.map { try $0.apply(to: base) } ?? base
    }

    /// The server's model: the run seed's initialisation (or the warm start), prepared by the
    /// strategy (adapters and LoRA blocks added): the same start for every phone. It needs the
    /// stream's shape: client 0's (any client would do), or the partitioned stream.
    static func makePrototype(_ config: RunConfig, rounds R: Int, stream: ExperienceStream) throws -> (MLPSpec, Trainer) {
        let s = try config.model.spec(inputs: stream.dimension, head: stream.head, experiences: stream.experiences.count)
        var p = Trainer(spec: s, optimizer: config.optimizer.spec, options: config.training.options,
                        plugins: config.strategy.map { $0.options.makePlugin() }, seed: config.seed)
        try RunExecutor.warmStart(&p.model, config, spec: s)
        try p.prepareRounds(dimension: stream.dimension, head: stream.head, featureNames: stream.featureNames,
                            experienceCount: R)
        return (s, p)
    }
}
