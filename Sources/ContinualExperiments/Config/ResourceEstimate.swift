import Foundation
import ContinualCore

/// Upper limits a run must fit: peak memory (default: the machine's physical memory) and work
/// (training sample-steps plus simulated days and evaluations; default 10^12, days of one core).
public struct ResourceLimits: Sendable, Equatable {
    public var memoryBytes: Double
    public var work: Double
    /// Floating-point operations (training ≈ 6 per parameter per row, evaluation 2).
    public var flops: Double
    /// Where the memory limit comes from, for messages ("physical memory", "--max-memory").
    public var memorySource: String
    /// Disk a results file may take at its peak (`DiskEstimate.peakBytes`); nil: the free space
    /// of the file system it goes to (`DiskEstimate.limit`).
    public var diskBytes: Double?

    public init(memoryBytes: Double? = nil, work: Double? = nil, flops: Double? = nil, diskBytes: Double? = nil) {
        self.memoryBytes = memoryBytes ?? ResourceLimits.physicalMemory
        self.work = work ?? ResourceLimits.defaultWork
        self.flops = flops ?? ResourceLimits.defaultFLOPs
        self.memorySource = memoryBytes == nil ? "this machine's memory" : "--max-memory"
        self.diskBytes = diskBytes
    }

    public static let defaultWork = 1e12
    /// About a week of one core at the speed the toolkit trains small models.
    public static let defaultFLOPs = 1e16
    public static var physicalMemory: Double { Double(ProcessInfo.processInfo.physicalMemory) }
    public static let machine = ResourceLimits()

    /// The limits every run is checked against when it starts (`RunExecutor`): the machine's,
    /// unless the CLI set the user's (`--max-memory`, `--max-work`, `--max-flops`) so that
    /// `run` honours what `validate` was told.
    public static var forRuns: ResourceLimits {
        get { runLimits.lock.withLock { runLimits.value } }
        set { runLimits.lock.withLock { runLimits.value = newValue } }
    }

    /// Parses `8G`, `512M`, `300k` or a number of bytes (powers of 1024).
    public static func parseBytes(_ text: String) -> Double? {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        let k = 1024.0
        let units: [(String, Double)] = [("tb", k * k * k * k), ("gb", k * k * k), ("mb", k * k), ("kb", k),
                                         ("t", k * k * k * k), ("g", k * k * k), ("m", k * k), ("k", k), ("b", 1)]
        for (suffix, factor) in units where t.hasSuffix(suffix) {
            guard let v = Double(t.dropLast(suffix.count)), v.isFinite, v > 0 else { return nil }
            return v * factor
        }
        guard let v = Double(t), v.isFinite, v > 0 else { return nil }
        return v
    }
}

/// Process-wide storage of `ResourceLimits.forRuns`.
private final class RunLimitsBox: @unchecked Sendable {
    let lock = NSLock()
    var value = ResourceLimits.machine
}
private let runLimits = RunLimitsBox()

/// A run's estimated peak memory and work, computed in floating point from the config (no
/// allocation, no integer overflow), with the key paths of the sizes that dominate each.
public struct RunEstimate: Sendable, Equatable {
    public var memoryBytes: Double = 0
    /// Training sample-steps (epochs × training rows incl. replayed rows) + evaluated rows +
    /// simulated days, over every user of a population.
    public var work: Double = 0
    /// Floating-point operations: 6 × parameters per training row (forward and backward) and
    /// 2 × parameters per evaluated row.
    public var flops: Double = 0
    /// Key path of the largest memory term (e.g. `.model.hidden[0]`).
    public var memoryKey = ""
    /// Key paths of the largest work term and of what makes the FLOPs large (a wide layer, or the work's key).
    public var workKey = ""
    public var flopsKey = ""
    /// Bytes the run adds to its results file (`DiskEstimate.runBytes`).
    public var diskBytes: Double = 0

    /// What running any run adds to the process beyond the sizes the estimate counts: 10 MiB,
    /// measured on Linux x86_64 (glibc, libhdf5 1.10.8, release build) as the peak resident memory
    /// of `continual run Experiments/quickstart.json --jobs 1` minus that of `continual validate`
    /// on the same file, less the counted sizes (10.9 − 1.4 MB; warm_start: 10.9 − 0.3 MB). From
    /// /proc/PID/smaps at the peak: worker threads' stacks and malloc arenas and libhdf5's caches
    /// (≈ 6 MB anonymous memory), libhdf5's and Foundation's code pages that writing touches
    /// (≈ 4 MB). It does not scale with the config, so it never names the key at fault; it is
    /// added once per run (a population's or federation's users share it).
    public static let processOverheadBytes: Double = 10 * 1024 * 1024

    /// What writing one results file of `runs` runs adds to a process beyond its largest run:
    /// libhdf5 blocks kept from the journal's writes, the free lists libhdf5 never returns after
    /// copying run groups into the file (`H5Ocopy`), and what the allocator keeps resident after
    /// both are freed. Measured, not derived (docs/validation.md, "Estimate against measured
    /// memory"): the peak resident memory of `continual run --jobs 1` over the shipped files rises
    /// about 0.3 MiB per run above the largest run's estimate and stops rising near 45 runs, where
    /// the sweep writer's fold, which reopens the file every 4 journal entries, bounds it; so
    /// 0.3 MiB per run up to 48 runs (14.4 MiB). It is a property of the process, not of a run, so
    /// `validate` prints it beside the per-run peak and `--max-memory` (a per-run limit) does not
    /// include it.
    public static func resultsWriterBytes(runs: Int) -> Double {
        Double(min(max(runs, 0), 48)) * 0.3 * 1024 * 1024
    }

    /// What a built federated client holds beyond its learner's parameters, optimizer moments,
    /// plugin state and per-experience tallies: its slot in the client table, array headers and
    /// allocator rounding. With `perClientResultBytes`, fitted to the peaks measured for
    /// `Experiments/bench/federated_1m.json` and `federated_10k.json` cut to 2 rounds
    /// (docs/federated.md "Scale").
    static let clientStateBytes: Double = 512

    /// Per client of a federation, built or not: its entries in the per-client results (seven
    /// 8-byte counts, an adversary flag, a device-pattern string: 73 bytes) and the run's
    /// transient per-client arrays (the sampler's and the adversary draw's permutations, the
    /// writer's converted copies).
    static let perClientResultBytes: Double = 96

    /// "1.2 GB"
    public static func bytes(_ b: Double) -> String {
        let units = ["B", "kB", "MB", "GB", "TB", "PB", "EB"]
        var v = b, i = 0
        while v >= 1024 && i < units.count - 1 { v /= 1024; i += 1 }
        return i == 0 ? "\(Int(v)) B" : String(format: v >= 100 ? "%.0f %@" : "%.1f %@", v, units[i])
    }

    /// "3.2e9" style count.
    public static func count(_ n: Double) -> String {
        n < 1e6 ? String(Int(n.rounded())) : String(format: "%.2g", n)
    }

    public var summary: String {
        "memory ≈ \(Self.bytes(memoryBytes)), work ≈ \(Self.count(work)) sample-steps (\(Self.count(flops)) FLOPs)"
    }

    /// The refusal for `limits`, or nil when the run fits.
    public func problem(_ limits: ResourceLimits, file: String) -> ConfigError? {
        if !(memoryBytes <= limits.memoryBytes) {
            return ConfigError(file: file, location: memoryKey.isEmpty ? "(top level)" : memoryKey,
                               message: "the run needs an estimated \(Self.bytes(memoryBytes)) of memory, more than \(limits.memorySource) "
                                + "(\(Self.bytes(limits.memoryBytes))); make this size smaller")
        }
        if !(work <= limits.work) {
            return ConfigError(file: file, location: workKey.isEmpty ? "(top level)" : workKey,
                               message: "the run needs an estimated \(Self.count(work)) sample-steps of work, more than the limit "
                                + "\(Self.count(limits.work)) (--max-work); make this size smaller")
        }
        if !(flops <= limits.flops) {
            return ConfigError(file: file, location: flopsKey.isEmpty ? "(top level)" : flopsKey,
                               message: "the run needs an estimated \(Self.count(flops)) floating-point operations, more than the limit "
                                + "\(Self.count(limits.flops)) (--max-flops); make this size smaller")
        }
        return nil
    }
}

/// The data a scenario holds: sizes as Doubles, with the key path that sets them.
struct ScenarioSize {
    var train: Double
    var test: Double
    var experiences: Double
    var dimension: Double
    var classes: Double
    /// Simulated days or rows generated (≥ train + test).
    var generated: Double
    /// Key path of the size that scales the data (e.g. `.scenario.train_per_experience`).
    var key: String
    /// Raw bytes the scenario reads from a file (0 for generated ones).
    var fileBytes: Double = 0

    var samples: Double { train + test }

    /// From the scenario's JSON alone (files by their size on disk): an upper-side estimate.
    static func estimate(_ scenario: [String: JSONValue], resolvedPath: String?) -> ScenarioSize {
        func num(_ k: String) -> Double? { scenario[k]?.numberValue }
        let type = scenario["type"].flatMap { if case .string(let s) = $0 { return s } else { return nil } } ?? ""
        switch type {
        case "dataset", "split_digits", "permuted_digits", "habit_events":
            let bytes = resolvedPath.flatMap { (try? FileManager.default.attributesOfItem(atPath: $0))?[.size] as? NSNumber }
                .map { $0.doubleValue } ?? 0
            // A float per value, as text (CSV) or compressed (HDF5): a few bytes each; 8 is generous.
            let rows = max(bytes / 8, 1)
            let copies = type == "permuted_digits" ? max(num("experiences") ?? 5, 1) : 1
            // The file's width is not read before a run (a damaged file is read in a child, by
            // the run): 64, the 8×8 digits', sizes the rows here; wider data (MNIST's 784) makes
            // the feature memory an under-estimate, the file-size term above does not change.
            let dim = 64.0
            return ScenarioSize(train: rows * copies, test: rows * copies / 4, experiences: type == "permuted_digits" ? copies : 10,
                                dimension: dim, classes: num("classes") ?? 10, generated: rows * copies,
                                key: type == "permuted_digits" ? ".scenario.experiences" : ".scenario.path", fileBytes: bytes)
        default:
            let train = num("train_per_experience") ?? 2000, test = num("test_per_experience") ?? 500
            var phases = 5.0
            if case .array(let p)? = scenario["phases"] { phases = Double(p.count) }
            var repeats = 1.0
            if case .object(let d)? = scenario["drift"], let r = d["repeats"]?.numberValue { repeats = r }
            let concepts = phases * repeats
            let days = (train + test) * concepts
            var experiences = concepts
            switch scenario["cut"] {
            case .string("week")?: experiences = days / 7
            case .string("month")?: experiences = days / 30
            case .int(let n)? where n > 0: experiences = days / Double(n)
            default: break
            }
            let sessions = num("sessions_per_day") ?? 1
            let warmup = num("warmup_days") ?? 30
            let key = train >= test ? ".scenario.train_per_experience" : ".scenario.test_per_experience"
            return ScenarioSize(train: train * concepts, test: test * concepts, experiences: max(experiences.rounded(.up), 1),
                                dimension: 64, classes: 32, generated: days * max(sessions, 1) + warmup,
                                key: scenario["warmup_days"].map { _ in warmup > days ? ".scenario.warmup_days" : key } ?? key)
        }
    }

    /// Exact sizes of a built stream.
    static func of(_ stream: ExperienceStream, key: String, generated: Double) -> ScenarioSize {
        var train = 0.0, test = 0.0
        for e in stream.experiences { train += Double(e.train.count); test += Double(e.test.count) }
        return ScenarioSize(train: train, test: test, experiences: Double(stream.experiences.count),
                            dimension: Double(stream.dimension), classes: Double(stream.head.classCount),
                            generated: max(generated, train + test), key: key)
    }
}

/// The sizes of a run's model that its memory, work and FLOPs scale with.
struct ModelSize {
    /// Experiences and input features of the scenario (each at least 1), and output units (one
    /// for a binary head, 2 classes or fewer; else one per class).
    var experiences: Double, dimension: Double, outputs: Double
    /// Weights and biases (every head included), and the bytes each takes: weights, gradients,
    /// two optimizer moments, and the plugins' anchors and importances.
    var parameters: Double, perParameter: Double
    /// The index of the widest hidden layer (nil without hidden layers).
    var widest: Int?
    /// The input, hidden and output widths summed (the workspaces' width), and the widest layer
    /// (outputs included) over 64: how far above its default the width is.
    var sumWidths: Double, wide: Double

    init(_ config: RunConfig, size: ScenarioSize) {
        let T = max(size.experiences, 1)
        let D = max(size.dimension, 1)
        var widths = config.model.hidden.map(Double.init)
        let outputs = size.classes <= 2 ? 1 : size.classes
        var params = 0.0, previous = D
        for w in widths { params += (previous + 1) * w; previous = w }
        let heads = config.model.multiHead ? T : 1
        params += heads * (previous + 1) * outputs
        experiences = T
        dimension = D
        self.outputs = outputs
        parameters = params
        perParameter = 4.0 * (4 + 3 * Double(config.strategy.count))
        widest = config.model.hidden.indices.max { config.model.hidden[$0] < config.model.hidden[$1] }
        widths.append(outputs)
        sumWidths = widths.reduce(D, +)
        wide = (widths.max() ?? 1) / 64
    }

    /// The key path of the widest hidden layer (`.model.hidden` without hidden layers).
    var widestKey: String { widest.map { ".model.hidden[\($0)]" } ?? ".model.hidden" }
}

extension RunEstimate {
    /// The estimate of `run` with a scenario of `size` (`ScenarioSize.estimate` before the data
    /// exist, `ScenarioSize.of` once the stream is built).
    static func of(_ config: RunConfig, size: ScenarioSize, cores: Int) -> RunEstimate {
        let model = ModelSize(config, size: size)
        let T = model.experiences, params = model.parameters
        var memory = memoryTerms(config, size: size, model: model)
        // Plugin memories (replay buffers, episodic memories, per-experience gradients), as each
        // method's options describe them (`PluginOptions.plannedResources`), defaults included.
        var replayRows = 0.0, pluginBytes = 0.0
        let shape = PlannedRunShape(experiences: T, dimension: model.dimension, outputs: model.outputs, parameters: params,
                                    batchSize: Double(config.training.batchSize))
        for (i, entry) in config.strategy.enumerated() {
            let planned = entry.options.plannedResources(shape)
            for amount in planned.memory { memory.append((amount.value, ".strategy[\(i)]" + amount.key)) }
            pluginBytes += planned.memory.reduce(0) { $0 + $1.value }
            replayRows += planned.extraRowsPerBatch
        }
        // Work: training rows (with replayed rows per batch), evaluations after every experience.
        var work: [(Double, String)] = []
        let batches = (size.train / Double(config.training.batchSize)).rounded(.up)
        let epochs = config.training.mode == .prequential ? 1
            : config.training.epochsEquivalent(trainPerExperience: size.train / T, flopsPerRow: 6 * params)
        let trainRows = epochs * (size.train + batches * replayRows)
        let budgetKey = config.training.stepsPerExperience != nil ? ".training.steps_per_experience"
            : config.training.flopsPerExperience != nil ? ".training.flops_per_experience" : ".training.epochs"
        work.append((trainRows, epochs > 1 ? budgetKey : size.key))
        work.append(((T + 2) * size.test, size.key))
        work.append((size.generated, size.key))
        if let schedule = config.schedule {
            // Scheduled runs simulate each day of the stream at samples_per_day.
            work.append((size.train / Double(max(schedule.samplesPerDay, 1)) * 24, ".schedule.samples_per_day"))
        }
        var estimate = RunEstimate()
        estimate.diskBytes = DiskEstimate.runBytes(config, size: size, parameters: params, epochs: epochs, pluginBytes: pluginBytes)
        estimate.memoryBytes = memory.reduce(0) { $0 + $1.0 }
        estimate.memoryKey = memory.max { $0.0 < $1.0 }?.1 ?? ""
        estimate.work = work.reduce(0) { $0 + $1.0 }
        estimate.workKey = work.max { $0.0 < $1.0 }?.1 ?? ""
        // FLOPs: forward and backward per training row, forward per evaluated row.
        estimate.flops = 6 * params * trainRows + 2 * params * (T + 2) * size.test
        estimate.flopsKey = params > 1e6 ? (model.widest.map { ".model.hidden[\($0)]" } ?? estimate.workKey) : estimate.workKey
        // One user's run (its data, model, workspaces, results): what each of a federation's
        // workers holds while it builds or trains a client.
        let single = estimate.memoryBytes
        if let population = config.population, config.federation == nil {
            estimate.scale(to: population, model: model, cores: cores)
        }
        if let population = config.population, let federation = config.federation {
            let capacity = memory.first { $0.1.hasSuffix(".capacity") || $0.1.hasSuffix(".capacity_bytes") }?.0 ?? 0
            estimate.federate(federation, population: population, single: single, capacity: capacity,
                              model: model, size: size, cores: cores)
        }
        estimate.memoryBytes += processOverheadBytes
        if !estimate.memoryBytes.isFinite { estimate.memoryBytes = .infinity }
        if !estimate.work.isFinite { estimate.work = .infinity }
        if !estimate.flops.isFinite { estimate.flops = .infinity }
        if !estimate.diskBytes.isFinite { estimate.diskBytes = .infinity }
        return estimate
    }

    /// The memory one run's data, model, workspaces and results take, each with the key that scales it.
    private static func memoryTerms(_ config: RunConfig, size: ScenarioSize, model: ModelSize) -> [(Double, String)] {
        var memory: [(Double, String)] = []
        let T = model.experiences, D = model.dimension
        // Data: features and labels, with a copy while generating or splitting.
        let dataBytes = 2 * size.samples * (D * 4 + 8) + size.fileBytes
        memory.append((dataBytes, size.key))
        // Model: weights, gradients, two optimizer moments, and anchors/importances of plugins.
        memory.append((model.parameters * model.perParameter, model.widestKey))
        // Activations: the training and evaluation workspaces.
        let sumWidths = model.sumWidths
        // Blame the factor furthest above its default: the batch size or the widest layer.
        let widestKey = model.widestKey
        let wide = model.wide
        memory.append((Double(config.training.batchSize) * 2 * sumWidths * 4 * 4,
                       Double(config.training.batchSize) / 32 >= wide ? ".training.batch_size" : widestKey))
        memory.append((Double(config.training.evalBatchSize) * sumWidths * 4 * 3,
                       Double(config.training.evalBatchSize) / 512 >= wide ? ".training.eval_batch_size" : widestKey))
        // Results: a few T × T matrices per measure, plus predictions.
        memory.append((T * T * 8 * 16 + (config.metrics.storePredictions ? size.test * 16 : 0), size.key))
        if config.training.mode == .prequential {
            // The probe's ring of the last `window` outcomes (1 byte each) and the recorded curve
            // (position, window and cumulative accuracy, experience: 4 × 8 bytes per point).
            memory.append((Double(config.training.window), ".training.window"))
            memory.append((size.train / Double(max(config.training.recordEvery, 1)) * 32, ".training.record_every"))
        }
        return memory
    }

    /// A population's estimate from one user's: every user owns a model and a stream; `jobs`
    /// users are in memory at once; every user's matrices and metrics stay until the run ends.
    private mutating func scale(to population: PopulationConfig, model: ModelSize, cores: Int) {
        let T = model.experiences, params = model.parameters
        let users = Double(population.users)
        let parallel = min(users, Double(population.jobs > 0 ? population.jobs : cores))
        let perUserKept = T * T * 8 * (population.storeMatrices ? 2 : 1) + 512
        let total = memoryBytes * parallel + users * perUserKept
        // The key at fault: the users' kept results only when they dominate; otherwise the
        // per-user term that is largest (e.g. a huge .scenario.train_per_experience).
        if users * perUserKept > memoryBytes * parallel { memoryKey = ".population.users" }
        memoryBytes = total
        work *= users
        flops *= users
        if users > 1 { flopsKey = params > 1e6 ? flopsKey : ".population.users" }
        if users > 1 { workKey = ".population.users" }
    }
}
