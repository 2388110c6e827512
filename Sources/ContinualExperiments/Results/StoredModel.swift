import ContinualCore
import ContinualHDF5
import ContinualStrategies
import Foundation

/// A run's trained model rebuilt from what a results file (or a checkpoint) stores: the run's
/// config decides the network (model block, scenario sizes, the strategy's adapters or LoRA
/// blocks), the stored flat vector fills it. Used by `continual export` and by warm starts from
/// checkpoints.
public struct StoredModel: Sendable {
    /// The run's config, its file paths resolved.
    public var config: RunConfig
    /// The model with the stored parameters, in the run's full (possibly extended) spec.
    public var model: MLP
    /// The run's experience stream, rebuilt from the config (same seed: the same test sets).
    public var stream: ExperienceStream
    /// The run's name (or id) as given.
    public var run: String
    /// Experiences the learner went through: the stream's, or a scheduled run's training
    /// sessions (each session is an experience of the training loop, and of the plugins).
    public var trainedExperiences: Int
    /// The results file and run group the model came from (nil for a checkpoint).
    public var resultsPath: String? = nil
    public var runId: String? = nil
    /// For one person's model of a population run: their name (or user id).
    public var user: String? = nil

    /// Why a stored model cannot be rebuilt (the message names the file and run).
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What is wrong (names the file and run).
        public var description: String
    }

    /// The final model of run `run` (id or unique name) of the results file `results`.
    public static func load(results: String, run: String) throws -> StoredModel {
        let source: WarmStart.Source
        do { source = try WarmStart.readFile(results: results, run: run) } catch let f as WarmStart.Failure {
            throw Failure(description: f.message)
        }
        let base = FilePaths.directory(of: source.experimentPath.isEmpty ? results : source.experimentPath)
        var stored = try rebuild(configJSON: source.configJSON, base: base, parameters: source.parameters,
                                 what: "run \"\(run)\" of \(results)", run: run)
        stored.resultsPath = results
        stored.runId = source.runId
        return stored
    }

    /// The model of a checkpoint file written by `continual run --checkpoint` (its config JSON
    /// decides the network; paths resolve against the checkpoint's directory when relative).
    public static func load(checkpoint path: String) throws -> StoredModel {
        let checkpoint: TrainerCheckpoint
        let json: String
        do {
            checkpoint = try CheckpointFile.read(path: path)
            json = try CheckpointFile.configJSON(path: path)
        } catch {
            throw Failure(description: "cannot read checkpoint \(path): \(error)")
        }
        guard !json.isEmpty else {
            throw Failure(description: "checkpoint \(path) records no config, so its network cannot be rebuilt")
        }
        var stored = try rebuild(configJSON: json, base: FilePaths.directory(of: path), parameters: checkpoint.parameters,
                                 what: "checkpoint \(path)", run: "")
        // The learner stopped after `experiencesDone` experiences (or sessions): its current copy
        // is the last one it trained.
        stored.trainedExperiences = max(checkpoint.experiencesDone, 1)
        return stored
    }

    /// Rebuilds the network of `configJSON` exactly as the runner builds it (model spec from the
    /// stream's sizes, then every plugin's `prepare`) and loads `parameters` into it.
    /// `member`: for a population run, the index of the user whose parameters these are (their
    /// stream and seed are rebuilt as the population executor made them); nil otherwise.
    static func rebuild(configJSON: String, base: String, parameters: [Float], what: String, run: String,
                        member: Int? = nil) throws -> StoredModel {
        let config: RunConfig
        do {
            config = try JSONDecoder().decode(RunConfig.self, from: Data(configJSON.utf8)).resolvingFiles(against: base)
        } catch {
            throw Failure(description: "\(what): its config_json does not decode with this toolkit version (\(error))")
        }
        if let population = config.population, member == nil {
            // Each user trains on its own data: run-level final_parameters are user 0's model.
            throw Failure(description: "\(what) is a population run of \(population.users) users, one model each: "
                + "choose whose with --user NAME (the names are in population/user_name, or the user ids in population/user)")
        }
        do {
            let (stream, seed) = try memberStream(config, member: member)
            let spec = try config.model.spec(inputs: stream.dimension, head: stream.head, experiences: stream.experiences.count)
            // A scheduled run trains sessions, not the stream's experiences (RunExecutor.executeScheduled).
            let T = config.schedule.map { schedule in
                // Adaptive schedules prepare the plugins for one session per day (AdaptiveScheduledRunner).
                { plan in schedule.isAdaptive ? max(1, plan.days.count) : plan.sessions.count }(
                    ScheduledRunner.plan(stream: stream, schedule: schedule, device: (config.device ?? DeviceConfig()).state,
                                         seed: seed))
            } ?? stream.experiences.count
            var rng = RandomSource(seed: seed, stream: "init")
            var model = MLP(spec: spec, rng: &rng)
            var plugins = config.strategy.map { $0.options.makePlugin() }
            for i in plugins.indices {
                let context = RunContext(seed: seed, pluginIndex: i, experienceCount: T, dimension: stream.dimension,
                                         head: stream.head, training: config.training.options, featureNames: stream.featureNames)
                try plugins[i].prepare(model: &model, context: context)
            }
            guard parameters.count == model.parameterCount else {
                let sizes = ([spec.inputs] + spec.hidden + [spec.head.logitCount]).map(String.init).joined(separator: "→")
                throw Failure(description: "\(what) stores \(parameters.count) parameters, but its config builds a \(sizes) "
                    + "network with \(model.parameterCount) (strategy \(config.strategyLabel)); was it written by another toolkit version?")
            }
            model.parameters = parameters
            return StoredModel(config: config, model: model, stream: stream, run: run, trainedExperiences: T)
        } catch let f as Failure {
            throw f
        } catch {
            throw Failure(description: "\(what): cannot rebuild its model: \(error)")
        }
    }

    /// The dense layers (0-based, hidden then output) that the run's strategy trains on the
    /// device after the core is frozen: the output layer for `last_layer`, every layer for
    /// `bitfit` (its biases); nil for other strategies.
    public var onDeviceTrainableLayers: [Int]? {
        let names = config.strategy.map(\.typeName)
        let dense = model.spec.denseLayerCount
        if names.contains("bitfit") { return Array(0..<dense) }
        if names.contains("last_layer") { return [dense - 1] }
        return nil
    }

    /// How an exported network reproduces the run's evaluated predictions: the first method
    /// whose predictions are not the network's decides (`PluginOptions.predictionExport`).
    public var predictionExport: PredictionExport {
        for s in config.strategy where s.options.predictionExport != .network { return s.options.predictionExport }
        return .network
    }

    /// The network to export for `route` and the gates the run evaluated it with (nil when the
    /// network alone predicts): for `.foldedGates`, the task's gates come from the results
    /// file's plugin report and are folded into the weights. Throws the refusal's reason.
    public func exportedNetwork(route: Int) throws -> (model: MLP, gates: UnitGates?, task: Int?) {
        switch predictionExport {
        case .network:
            return (model, nil, nil)
        case .refused(let reason):
            throw Failure(description: reason)
        case .replacedOutputLayer(let name):
            let (values, group) = try reportArray(name, of: .replacedOutputLayer(reportArray: name))
            let out = model.layers[model.layers.count - 1]
            guard out.copies == 1, values.count == out.parameterCount else {
                throw Failure(description: "\(group)/\(name) holds \(values.count) values for an output layer of \(out.parameterCount)")
            }
            var replaced = model
            let start = out.weightOffset(route: 0)
            for i in 0..<values.count { replaced.parameters[start + i] = Float(values[i]) }
            return (replaced, nil, nil)
        case .foldedGates(let name):
            let (values, group) = try reportArray(name, of: .foldedGates(reportArray: name))
            let hidden = Array(0..<(model.layers.count - 1))
            var gates = UnitGates(model: model, layers: hidden)
            let units = gates.count
            guard units > 0, values.count % units == 0, values.count / units >= 1 else {
                throw Failure(description: "\(group)/\(name) holds \(values.count) gates, not a multiple of the model's \(units) hidden units")
            }
            // The task the route stands for: the route itself on multi-head models, else the last trained.
            let task = model.routeCount > 1 ? route : trainedExperiences - 1
            guard task >= 0, task < values.count / units else {
                throw Failure(description: "task \(task) has no gates in \(group)/\(name) (\(values.count / units) tasks)")
            }
            gates.values = values[(task * units)..<((task + 1) * units)].map { Float($0) }
            return (model.foldingGates(gates), gates, task)
        }
    }

    /// The report array `name` of the first method whose export is `form`, read from the results
    /// file, and the plugin group it came from.
    func reportArray(_ name: String, of form: PredictionExport) throws -> ([Double], String) {
        guard let resultsPath, let runId, let index = config.strategy.firstIndex(where: { $0.options.predictionExport == form }) else {
            throw Failure(description: "the run's predictions use a classifier stored in its results file (plugin report \"\(name)\"); "
                + "export the run from its results file, not from a checkpoint")
        }
        let group = "\(index)_\(config.strategy[index].typeName)"
        do {
            let values = try HDF5Lock.withLock {
                let file = try HDF5File.open(path: resultsPath, mode: .readOnly)
                defer { try? file.close() }
                return try file.root.openGroup("runs").openGroup(runId).openGroup("plugins").openGroup(group).openDataset(name)
                    .read(as: Double.self)
            }
            return (values, group)
        } catch {
            throw Failure(description: "cannot read \(group)/\(name) of run \"\(run)\": \(error)")
        }
    }

    /// The route a prediction of experience `index` uses (as the runner's int8 evaluation does).
    public func route(forExperience index: Int) -> Int {
        model.routeCount > 1 ? index % model.routeCount : 0
    }

    /// The route of the last experience (or session) trained: the personal model's current copy.
    public var lastRoute: Int { route(forExperience: max(trainedExperiences - 1, 0)) }
}
