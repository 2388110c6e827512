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
    /// Key path of the largest memory term (e.g. `.model.hidden[0]`).
    public var flops: Double = 0
    /// Key path of the largest memory term (e.g. `.model.hidden[0]`).
    public var memoryKey = ""
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
            let dim = type == "dataset" ? 64.0 : 64.0
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

extension RunEstimate {
    /// The estimate of `run` with a scenario of `size` (`ScenarioSize.estimate` before the data
    /// exist, `ScenarioSize.of` once the stream is built).
    static func of(_ config: RunConfig, size: ScenarioSize, cores: Int) -> RunEstimate {
        var memory: [(Double, String)] = []
        var work: [(Double, String)] = []
        let T = max(size.experiences, 1)
        let D = max(size.dimension, 1)
        // Data: features and labels, with a copy while generating or splitting.
        let dataBytes = 2 * size.samples * (D * 4 + 8) + size.fileBytes
        memory.append((dataBytes, size.key))
        // Model: weights, gradients, two optimizer moments, and anchors/importances of plugins.
        var widths = config.model.hidden.map(Double.init)
        let outputs = size.classes <= 2 ? 1 : size.classes
        var params = 0.0, previous = D
        for w in widths { params += (previous + 1) * w; previous = w }
        let heads = config.model.multiHead ? T : 1
        params += heads * (previous + 1) * outputs
        let perParameter = 4.0 * (4 + 3 * Double(config.strategy.count))
        let widest = config.model.hidden.indices.max { config.model.hidden[$0] < config.model.hidden[$1] }
        memory.append((params * perParameter, widest.map { ".model.hidden[\($0)]" } ?? ".model.hidden"))
        // Activations: the training and evaluation workspaces.
        widths.append(outputs)
        let sumWidths = widths.reduce(D, +)
        // Blame the factor furthest above its default: the batch size or the widest layer.
        let widestKey = widest.map { ".model.hidden[\($0)]" } ?? ".model.hidden"
        let wide = (widths.max() ?? 1) / 64
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
        // Plugin memories (replay buffers, episodic memories, per-experience gradients), as each
        // method's options describe them (`PluginOptions.plannedResources`), defaults included.
        var replayRows = 0.0, pluginBytes = 0.0
        let shape = PlannedRunShape(experiences: T, dimension: D, outputs: outputs, parameters: params,
                                    batchSize: Double(config.training.batchSize))
        for (i, entry) in config.strategy.enumerated() {
            let planned = entry.options.plannedResources(shape)
            for amount in planned.memory { memory.append((amount.value, ".strategy[\(i)]" + amount.key)) }
            pluginBytes += planned.memory.reduce(0) { $0 + $1.value }
            replayRows += planned.extraRowsPerBatch
        }
        // Work: training rows (with replayed rows per batch), evaluations after every experience.
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
        estimate.flopsKey = params > 1e6 ? (widest.map { ".model.hidden[\($0)]" } ?? estimate.workKey) : estimate.workKey
        // One user's run (its data, model, workspaces, results): what each of a federation's
        // workers holds while it builds or trains a client.
        let single = estimate.memoryBytes
        if let population = config.population, config.federation == nil {
            // Every user owns a model and a stream; `jobs` users are in memory at once; every
            // user's matrices and metrics stay until the run ends.
            let users = Double(population.users)
            let parallel = min(users, Double(population.jobs > 0 ? population.jobs : cores))
            let perUserKept = T * T * 8 * (population.storeMatrices ? 2 : 1) + 512
            let total = estimate.memoryBytes * parallel + users * perUserKept
            // The key at fault: the users' kept results only when they dominate; otherwise the
            // per-user term that is largest (e.g. a huge .scenario.train_per_experience).
            if users * perUserKept > estimate.memoryBytes * parallel { estimate.memoryKey = ".population.users" }
            estimate.memoryBytes = total
            estimate.work *= users
            estimate.flops *= users
            if users > 1 { estimate.flopsKey = params > 1e6 ? estimate.flopsKey : ".population.users" }
            if users > 1 { estimate.workKey = ".population.users" }
        }
        if let population = config.population, let federation = config.federation {
            // A federation builds its clients when first needed and keeps what `FederationStorage`
            // says: for every client, its entries in the per-client results; for every client
            // built (the evaluated ones and those expected to be sampled at least once), its
            // learner and tallies; for the evaluated ones, and the trained ones when their data are
            // reused, their data; during a round, the invited clients' data and updates.
            let N = Double(population.users)
            let R = Double(federation.rounds)
            let storage = FederationStorage(federation, clients: population.users)
            let evaluated = Double(federation.evaluateClients > 0 ? min(federation.evaluateClients, population.users) : population.users)
            let built = storage.allClients ? N : min(N, evaluated + storage.expectedParticipants * (1 - evaluated / max(N, 1)))
            let participants = max(built - evaluated, 0)
            // A partition gives each client 1/N of the scenario's data (held once more, whole, by the server side).
            let share = federation.partition != nil ? 1 / max(N, 1) : 1.0
            // A client's data: features and Int32 labels at their exact size, plus its experiences' headers.
            let clientData = size.samples * share * (D * 4 + 4) + T * 320
            // Ditto and APFL keep a personal model beside the local one.
            let learners = federation.personal == .ditto || federation.personal == .apfl ? 2.0 : 1.0
            let capacity = memory.first { $0.1.hasSuffix(".capacity") || $0.1.hasSuffix(".capacity_bytes") }?.0 ?? 0
            // A built client's learner (parameters, optimizer, plugin state), device days, arrival
            // schedule, per-experience tallies and its slot (`clientStateBytes`).
            let state = learners * params * perParameter + capacity + R + T * 112 + Self.clientStateBytes
            // Per client of the run: invitations, participations, bytes up and down, joules,
            // dropouts, stragglers, adversary flag, device pattern, and their copies while written.
            let everyClient = N * Self.perClientResultBytes
            let kept = evaluated * (clientData + T * T * 8 * (population.storeMatrices ? 3 : 2) + 1024)
            let perRound = storage.expectedParticipations / max(R, 1)   // invited per round
            let roundData = (storage.retainsData ? 0 : min(perRound, participants) * clientData) + perRound * params * 16
            let trained = participants * (state + (storage.retainsData ? clientData : 0)) + evaluated * state + roundData
            let workers = Double(federation.jobs > 0 ? federation.jobs : cores)
            estimate.memoryBytes = single * min(workers, max(built, 1)) + everyClient + kept + trained
            let terms: [(Double, String)] = [
                (everyClient, ".population.users"),
                (kept, federation.evaluateClients > 0 ? ".federation.evaluate_clients" : ".population.users"),
                (trained, storage.allClients ? ".population.users"
                    : federation.clientsPerRound != nil ? ".federation.clients_per_round" : ".federation.client_fraction"),
            ]
            estimate.memoryKey = terms.max { $0.0 < $1.0 }!.1
            let evaluations = ((R / Double(federation.evaluateEvery) + T) * size.test / T * evaluated + T * size.test * evaluated) * share
            // Training: every built client's data once (a client trains each sample once per local
            // epoch, over its participations); personal training doubles the rows (APFL's personal
            // model trains on the same batches); FedRep adds its head epochs to the body's.
            let epochs = Double(federation.localEpochs + (federation.personal == .fedrep ? federation.fedrepHeadEpochs : 0))
            let rows = built * share * size.train * epochs * (federation.personal == .local || federation.personal == .apfl ? 2 : 1)
            // Data generation: once per built client, again for every later round it trains in
            // unless its data are kept.
            let generations = storage.retainsData ? built : built + max(storage.expectedParticipations - participants, 0)
            estimate.work = rows + evaluations + generations * share * size.generated + N + built * R
            estimate.workKey = estimate.memoryKey
            estimate.flops = 6 * params * rows + 2 * params * evaluations
            estimate.flopsKey = estimate.memoryKey
        }
        estimate.memoryBytes += processOverheadBytes
        if !estimate.memoryBytes.isFinite { estimate.memoryBytes = .infinity }
        if !estimate.work.isFinite { estimate.work = .infinity }
        if !estimate.flops.isFinite { estimate.flops = .infinity }
        if !estimate.diskBytes.isFinite { estimate.diskBytes = .infinity }
        return estimate
    }
}
