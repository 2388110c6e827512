import Foundation
import ContinualCore
import ContinualScenarios

/// Builds the federated clients (`FederatedClient`) of a run from their ids alone, so the order
/// and the rank that builds them do not matter (`FederationStorage`).
struct ClientFactory: Sendable {
    let setup: FederationSetup
    let algorithms: [any FederatedAlgorithm]

    /// Builds this rank's clients `ids` (not yet built) in parallel, with their data, into `table`.
    func materialise(_ ids: [Int], into table: ClientTable, errors: ErrorBox) throws {
        guard !ids.isEmpty else { return }
        let built = PopulationExecutor.Slots<FederatedClient?>(ids.count, initial: nil)
        let n = min(setup.workers, ids.count)
        DispatchQueue.concurrentPerform(iterations: n) { w in
            var k = w
            while k < ids.count {
                let id = ids[k]
                do {
                    let (modelSeed, stream) = try setup.source(id)
                    built.base[k] = try makeClient(id, stream: stream, modelSeed: modelSeed)
                } catch {
                    errors.record(id, "client \(id): \(error)")
                }
                k += n
            }
        }
        if let (_, message) = errors.first { throw FederationRunner.Failure(description: message) }
        for k in 0..<ids.count { table.append(built.base[k]!) }
    }

    /// Builds client `id` from its stream (the population's user `id`, or its partition share):
    /// its arrival schedule (its own experience sizes), device availability, learner (the
    /// strategy prepared, then the algorithms' plugins; parameters = the server's initial model)
    /// and what the algorithms keep beside it.
    func makeClient(_ id: Int, stream: ExperienceStream, modelSeed: UInt64) throws -> FederatedClient {
        let config = setup.config, T = setup.T, R = setup.R
        let trainSizes = stream.experiences.map(\.train.count)
        guard trainSizes.count == T else {
            throw FederationRunner.Failure(description: "its stream has \(trainSizes.count) experiences, client 0's \(T); every client's "
                + "accuracy matrix must have the same experiences")
        }
        guard trainSizes.reduce(0, +) > 0 else { throw FederationRunner.Failure(description: "it has no training sample") }
        let (train, tests) = FederatedClient.arrivalData(of: stream)
        let (available, pattern) = availability(id)
        let initial = setup.initialParameters, spec = setup.spec
        let build = LearnerBuilder { extra in
            var learner = Trainer(spec: spec, optimizer: config.optimizer.spec, options: config.training.options,
                                  plugins: config.strategy.map { $0.options.makePlugin() } + extra, seed: modelSeed)
            try learner.prepareRounds(dimension: stream.dimension, head: stream.head, featureNames: stream.featureNames,
                                      experienceCount: R)
            guard learner.model.parameterCount == initial.count else {
                throw FederationRunner.Failure(description: "the prepared model has \(learner.model.parameterCount) parameters, the server's \(initial.count)")
            }
            learner.model.parameters = initial
            return learner
        }
        let trainer = try build.learner(adding: algorithms.flatMap { $0.learnerPlugins() })
        var client = FederatedClient(id: id, trainer: trainer, modelSeed: modelSeed,
                                     schedule: ArrivalSchedule(trainSizes: trainSizes, rounds: R, data: setup.fed.localData),
                                     dataSeed: UInt64(stream.metadata["seed"] ?? "") ?? 0, train: train, tests: tests,
                                     adversary: setup.adversaries.contains(id), available: available, pattern: pattern)
        for algorithm in algorithms { try algorithm.prepare(&client, build) }
        return client
    }

    /// Client `id`'s device gate per round (always open, or its simulated days' gate) and device pattern.
    func availability(_ id: Int) -> (available: [Bool], pattern: String) {
        let fed = setup.fed
        let (state, drawn) = Self.deviceState(id, config: setup.config, fed: fed, device: setup.device)
        var deviceRNG = drawn
        switch fed.availability {
        case .always: return ([Bool](repeating: true, count: setup.R), state.pattern.rawValue)
        case .device:
            let days = state.makeDays(count: setup.R, runSeed: (state.seed ?? setup.config.seed) &+ deviceRNG.next())
            return (days.map { fed.when.opens($0) }, state.pattern.rawValue)
        }
    }

    /// Client `id`'s device state: the configured one, its pattern a seeded draw from
    /// `device_mix` when set; and the client's device stream after that draw (its days' seed comes next).
    static func deviceState(_ id: Int, config: RunConfig, fed: FederationConfig,
                            device: DeviceConfig) -> (state: DeviceStateOptions, rng: RandomSource) {
        var state = device.state
        var deviceRNG = RandomSource(seed: config.seed, stream: "federation.device.\(id)")
        if let mix = fed.deviceMix {
            let u = deviceRNG.uniform()
            var acc = 0.0
            let names = mix.keys.sorted()
            for name in names {
                acc += mix[name]!
                if u < acc || name == names.last {
                    state.pattern = DeviceStateOptions.Pattern(rawValue: name)!
                    break
                }
            }
        }
        return (state, deviceRNG)
    }
}
