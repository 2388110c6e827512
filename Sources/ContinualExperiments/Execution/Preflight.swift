import Foundation
import ContinualCore
import ContinualScenarios

/// Everything about a run that can be checked without training, in one place: `validate` runs
/// it on every run it lists, and `run`/`sweep` on every run before the first starts (so a config
/// problem exits 2 with its key path and writes nothing). `RunExecutor` repeats the resource
/// check, so configs built in code cannot crash it either.
///
/// 1. resources: estimated peak memory and work against `ResourceLimits` (floating point, from
///    the config alone, before any allocation);
/// 2. files: every file the scenario reads exists (at the path resolved against the experiment
///    file) and has the scenario layout; the data are loaded and checked as a run would;
/// 3. the stream fits the model and strategy: hidden-layer indices exist, heads and labels
///    agree, features named by plugins exist, buffers hold a sample, populations are supported
///    (the plugins' own `prepare`, on a fresh model, exactly as the Trainer calls it);
/// 4. resources again with the real sizes of the data.
public enum Preflight {
    /// Generated scenarios larger than this (samples + simulated days) are not built by
    /// `validate`: their sizes are checked from the config, their structure at the run's start.
    public static let buildLimit = 1_000_000.0

    /// Checks `run`; throws a `ConfigError` naming the key path. Returns the estimate.
    @discardableResult
    public static func check(_ run: ResolvedRun, file: String = "", limits: ResourceLimits = .machine,
                             cores: Int = ProcessInfo.processInfo.activeProcessorCount) throws -> RunEstimate {
        var streams: [String: ExperienceStream] = [:]
        return try check(run, file: file, limits: limits, cores: cores, streams: &streams)
    }

    /// `check` with a cache of built streams by scenario (runs that differ only in strategy or
    /// model share their data; the structure of a stream does not depend on the seed).
    static func check(_ run: ResolvedRun, file: String, limits: ResourceLimits, cores: Int,
                      streams: inout [String: ExperienceStream]) throws -> RunEstimate {
        let config = run.config
        let json = (try? JSONDecoder().decode(JSONValue.self, from: Data(run.canonicalJSON.utf8)))?.objectValue ?? [:]
        let scenarioJSON = json["scenario"]?.objectValue ?? [:]
        let filePath = dataPath(config)
        let context = run.config.name.isEmpty ? "" : " (run \"\(run.config.name)\")"
        func fail(_ location: String, _ message: String) -> ConfigError {
            ConfigError(file: file, location: location, message: message + context)
        }
        // 1. Sizes from the config alone.
        let rough = ScenarioSize.estimate(scenarioJSON, resolvedPath: filePath)
        var estimate = RunEstimate.of(config, size: rough, cores: cores)
        // The rough estimate assumes wide features and many classes; when the data are small
        // enough to build, the estimate with their real sizes decides (step 4).
        let buildable = filePath != nil ? rough.fileBytes <= limits.memoryBytes / 4 : rough.generated <= buildLimit
        if !buildable, var problem = estimate.problem(limits, file: file) { problem.message += context; throw problem }
        if let problem = config.consistencyProblem() {
            throw fail("." + problem.path.joined(separator: "."), problem.message)
        }
        // 2. Files.
        if let filePath {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: filePath, isDirectory: &isDirectory), !isDirectory.boolValue else {
                let written = scenarioJSON["path"].map { $0.shortDescription } ?? filePath
                throw fail(".scenario.path", "no such file: \(filePath)"
                    + (written != filePath ? " (\"\(written)\" is relative to the experiment file's directory)" : "")
                    + DatasetScenario.missingFileHint(filePath))
            }
        }
        if config.population != nil, !(config.scenario.options is any PopulationScenario), config.federation?.partition == nil {
            throw fail(".population", "scenario \"\(config.scenario.typeName)\" does not support populations (supported: "
                + Registry.scenarios.filter { $0 is any PopulationScenario.Type }.map { $0.typeName }.joined(separator: ", ") + ")")
        }
        guard buildable else { return estimate }
        // 3. The data and how the model and plugins fit them.
        let stream = try checkedStream(config, scenario: json["scenario"], filePath: filePath, streams: &streams, fail: fail)
        estimate = RunEstimate.of(config, size: ScenarioSize.of(stream, key: rough.key, generated: rough.generated),
                                  cores: cores)
        if var problem = estimate.problem(limits, file: file) { problem.message += context; throw problem }
        let T = stream.experiences.count
        guard T > 0 else { throw fail(".scenario", "the scenario has no experiences") }
        if let fed = config.federation, fed.localData == .experience, fed.rounds < T {
            throw fail(".federation.rounds", "\"local_data\": \"experience\" gives each of the \(T) experiences a block of rounds; \(fed.rounds) rounds leave some without one")
        }
        // The validation carve (tuning's selection runs): one user's stream stands for a population's.
        var carved = stream
        if let vs = config.validationSplit {
            do { carved = try vs.apply(to: stream) } catch { throw fail(".validation_split", "\(error)") }
        }
        if let pc = config.federation?.partition, let n = config.population?.users {
            // The federation's split of the data among its clients (docs/federated.md).
            if let f = ClientPartition.problem(carved, clients: n, config: pc, seed: pc.seed ?? config.seed) {
                throw fail(".federation." + f.key, f.message)
            }
        }
        // Scheduled runs train sessions planned from the device simulation at run time; their
        // plugins are checked against the scenario's experiences (the structure is the same).
        var model = try checkedModel(config, stream: stream, fail: fail)
        try preparePlugins(config, model: &model, stream: stream, fail: fail)
        if config.schedule == nil && model.routeCount > 1 && model.routeCount < T {
            throw fail(".model.multi_head", "the model has \(model.routeCount) heads but the stream has \(T) experiences")
        }
        return estimate
    }

    /// The run's stream, built as the run would build it (or taken from `streams`, keyed by its
    /// scenario): a data file's errors are reported at the key they name, else at the scenario,
    /// and a population of a file's users must find enough users, each with every experience.
    private static func checkedStream(_ config: RunConfig, scenario: JSONValue?, filePath: String?,
                                      streams: inout [String: ExperienceStream],
                                      fail: (String, String) -> ConfigError) throws -> ExperienceStream {
        let stream: ExperienceStream
        let streamKey = (scenario ?? .null).canonicalText() + (filePath ?? "")
            + (config.population != nil && config.scenario.options is DatasetScenario ? "#population" : "")
        do {
            if let cached = streams[streamKey] {
                stream = cached
            } else if let population = config.population, let file = config.scenario.options as? DatasetScenario,
                      file.userColumn != nil {
                // A population of a file's users: estimate from one member's rows (as the generators'
                // populations do), not from everyone's rows pooled.
                var rng = RandomSource(seed: 0)
                let member = try file.forPopulation(users: population.users, seed: population.seed ?? config.seed)
                stream = try member.user(0, spread: 0, rng: &rng).makeStream(seed: config.seed)
                streams[streamKey] = stream
            } else {
                stream = try config.scenario.options.makeStream(seed: config.seed)
                streams[streamKey] = stream
                if config.population == nil {
                    StreamHandoff.shared.offer(stream, key: StreamHandoff.key(scenario: scenario, dataPath: filePath, seed: config.seed))
                }
            }
        } catch {
            // A data file's key-column errors name their own key (".scenario.user_column: …").
            let message = "\(error)"
            if let key = DatasetScenario.keyPath(in: message) {
                throw fail(key, Self.shortened(message.replacingOccurrences(of: key + ": ", with: "")))
            }
            throw fail(filePath != nil ? ".scenario.path" : ".scenario", Self.shortened(message))
        }
        // A population of a data file's users: enough users, each with every experience.
        if let population = config.population, let file = config.scenario.options as? DatasetScenario,
           file.userColumn != nil {
            do { _ = try file.forPopulation(users: population.users, seed: population.seed ?? config.seed) } catch {
                let message = "\(error)"
                let key = DatasetScenario.keyPath(in: message) ?? ".population.users"
                throw fail(key, Self.shortened(message.replacingOccurrences(of: key + ": ", with: "")))
            }
        }
        return stream
    }

    /// Runs every plugin's own `prepare` on `model`, as the Trainer calls it: their errors at the
    /// key they name, under `.strategy[i]`.
    private static func preparePlugins(_ config: RunConfig, model: inout MLP, stream: ExperienceStream,
                                       fail: (String, String) -> ConfigError) throws {
        let T = stream.experiences.count
        var plugins = config.strategy.map { $0.options.makePlugin() }
        for i in plugins.indices {
            let ctx = RunContext(seed: config.seed, pluginIndex: i, experienceCount: T, dimension: stream.dimension,
                                 head: stream.head, training: config.training.options, featureNames: stream.featureNames)
            do {
                try plugins[i].prepare(model: &model, context: ctx)
            } catch TrainingError.invalidOption(let key, let message) {
                throw fail(".strategy[\(i)]" + key, message)
            } catch TrainingError.invalidSetting(let path, let message) {
                throw fail(path, message)
            } catch {
                throw fail(".strategy[\(i)]", "\(error)")
            }
        }
    }

    /// The model the plugins' checks run on: the run's model spec on `stream` (checked, with its
    /// warm start loaded as the run will), built with widths capped at `checkedWidth`.
    private static func checkedModel(_ config: RunConfig, stream: ExperienceStream,
                                     fail: (String, String) -> ConfigError) throws -> MLP {
        let T = stream.experiences.count
        func modelSpec(_ model: ModelConfig) throws -> MLPSpec {
            do { return try model.spec(inputs: stream.dimension, head: stream.head, experiences: T) } catch let TrainingError.invalid(m) {
                throw fail(".model", m.hasPrefix("model: ") ? String(m.dropFirst(7)) : m)
            }
        }
        var spec = try modelSpec(config.model)
        if let message = spec.validationError() { throw fail(".model", message) }
        // A warm start: the source file, run and shapes, exactly as the run will load them.
        if let w = config.model.initFrom {
            do { _ = try w.parameters(for: spec) } catch let f as WarmStart.Failure {
                throw fail(".model.init_from" + f.key, f.message)
            }
        }
        // The plugins' checks depend on the layer structure (counts, heads, features), not on
        // the widths: a large model is checked as a narrower one of the same shape, so that
        // validate does not spend minutes initialising its weights (issue 41: 256 layers of 1000
        // units, 2.6 × 10^8 weights, took 227 s). The widths are capped so that the checked model
        // has about `checkedWeights` weights (never below 64 units, never above 1024: plugins check
        // ranks and sample sizes against the widths).
        let cap = Self.checkedWidth(layers: config.model.hidden.count)
        if config.model.hidden.contains(where: { $0 > cap }) {
            var narrow = config.model
            narrow.hidden = narrow.hidden.map { min($0, cap) }
            spec = try modelSpec(narrow)
        }
        // Still large (thousands of thin layers): zero weights, a memset instead of a draw each.
        if spec.parameterCount > 4 * Self.checkedWeights {
            return MLP(spec: spec, parameters: [Float](repeating: 0, count: spec.parameterCount))
        }
        let model = Trainer.initialModel(spec: spec, seed: config.seed)
        // The run's own initial model (when no width was capped): handed on, so the run need not draw it again.
        ModelHandoff.shared.offer(model, seed: config.seed)
        return model
    }

    /// Weights of the model `check` builds for the plugins' checks: about 4 million, a fraction
    /// of a second to initialise.
    static let checkedWeights = 1 << 22

    /// The width the checked model's hidden layers are capped at for `layers` hidden layers:
    /// √(checkedWeights / layers), within 64…1024.
    static func checkedWidth(layers: Int) -> Int {
        min(1024, max(64, Int(Double(checkedWeights / max(layers, 1)).squareRoot())))
    }

    /// The file a scenario reads (resolved), or nil for generated scenarios.
    static func dataPath(_ config: RunConfig) -> String? {
        switch config.scenario.options {
        case let o as DatasetScenario: return o.path
        case let o as SplitDigitsScenario: return o.path
        case let o as PermutedDigitsScenario: return o.path
        case let o as HabitEventsScenario: return o.path
        default: return nil
        }
    }

    /// The config-only resource check (no file is read): what `RunExecutor` repeats so a config
    /// built in code cannot make it allocate past the machine's memory.
    ///
    /// The estimate is `validate`'s: the config-only one, and when that exceeds the limits and the
    /// data are small enough to build (the rule `check` uses), the one with the data's real
    /// sizes, so `validate` and `run` accept and refuse the same runs. The limits default to
    /// `ResourceLimits.forRuns` (the CLI's --max-memory, --max-work, --max-flops).
    public static func resourceProblem(_ run: ResolvedRun, limits: ResourceLimits = .forRuns) -> ConfigError? {
        let json = (try? JSONDecoder().decode(JSONValue.self, from: Data(run.canonicalJSON.utf8)))?.objectValue ?? [:]
        let filePath = dataPath(run.config)
        let rough = ScenarioSize.estimate(json["scenario"]?.objectValue ?? [:], resolvedPath: filePath)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        guard let problem = RunEstimate.of(run.config, size: rough, cores: cores).problem(limits, file: "") else {
            return nil
        }
        let buildable = filePath != nil ? rough.fileBytes <= limits.memoryBytes / 4 : rough.generated <= buildLimit
        guard buildable, let stream = try? run.config.scenario.options.makeStream(seed: run.config.seed) else { return problem }
        return RunEstimate.of(run.config, size: ScenarioSize.of(stream, key: rough.key, generated: rough.generated),
                              cores: cores).problem(limits, file: "")
    }

    /// The scenario alone (`continual scenario export`): its data must fit this machine's memory.
    public static func scenarioProblem(_ spec: ScenarioSpec, limits: ResourceLimits = .machine) -> ConfigError? {
        let json = (try? JSONDecoder().decode(JSONValue.self, from: Data(ScenarioCatalog.canonicalJSON(spec).utf8)))?.objectValue ?? [:]
        let size = ScenarioSize.estimate(json, resolvedPath: nil)
        let bytes = 2 * size.samples * (size.dimension * 4 + 8)
        guard !(bytes <= limits.memoryBytes) || !(size.generated <= limits.work) else { return nil }
        return ConfigError(location: size.key, message: "the scenario needs an estimated \(RunEstimate.bytes(bytes)) of memory "
            + "and \(RunEstimate.count(size.generated)) simulated samples; the limits are \(RunEstimate.bytes(limits.memoryBytes)) "
            + "and \(RunEstimate.count(limits.work))")
    }

    /// Long messages (a file's content echoed back) cut to a readable length.
    static func shortened(_ text: String, limit: Int = 400) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "…"
    }
}

extension Preflight {
    /// What `validate` prints about a set of runs.
    public struct Report: Sendable {
        /// One estimate per run, in order.
        public var estimates: [RunEstimate]
        public var peakMemory: Double { estimates.map(\.memoryBytes).max() ?? 0 }
        public var totalWork: Double { estimates.reduce(0) { $0 + $1.work } }
        /// Each distinct `dataset` scenario's features and users (what `validate` prints).
        public var datasets: [DatasetSummary] = []
        /// Mean bytes a run adds to the results file (a sampled sweep's runs stand for all).
        public var meanDiskBytes: Double { estimates.isEmpty ? 0 : estimates.reduce(0) { $0 + $1.diskBytes } / Double(estimates.count) }
    }

    /// `check` on every run; runs that differ only in name, seed and optimizer share the data and
    /// structural checks (one sweep over seeds and learning rates builds its stream once).
    public static func checkAll(_ runs: [ResolvedRun], file: String = "", limits: ResourceLimits = .machine,
                                cores: Int = ProcessInfo.processInfo.activeProcessorCount) throws -> Report {
        var done: [String: RunEstimate] = [:]
        var streams: [String: ExperienceStream] = [:]
        var estimates: [RunEstimate] = []
        var summaries: [DatasetSummary] = []
        var summarised = Set<String>()
        estimates.reserveCapacity(runs.count)
        for run in runs {
            var key = run.canonicalJSON
            var dataKey = ""
            if case .object(var o)? = try? JSONDecoder().decode(JSONValue.self, from: Data(run.canonicalJSON.utf8)) {
                dataKey = (o["scenario"] ?? .null).canonicalText() + (o["population"] ?? .null).canonicalText()
                o["name"] = nil; o["seed"] = nil; o["optimizer"] = nil
                key = JSONValue.object(o).canonicalText()
            }
            if let known = done[key] { estimates.append(known); continue }
            let e = try check(run, file: file, limits: limits, cores: cores, streams: &streams)
            done[key] = e
            estimates.append(e)
            // Once per scenario and population; a file too large for `check` to build is not read.
            let bytes = dataPath(run.config).flatMap { (try? FileManager.default.attributesOfItem(atPath: $0))?[.size] as? NSNumber }
            if let bytes, bytes.doubleValue <= limits.memoryBytes / 4, summarised.insert(dataKey).inserted,
               let summary = try? DatasetSummary.of(run.config), !summaries.contains(summary) {
                summaries.append(summary)
            }
        }
        return Report(estimates: estimates, datasets: summaries)
    }
}
