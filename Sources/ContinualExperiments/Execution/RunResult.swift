import ContinualCore
import ContinualMetrics

/// How a run ended.
public enum RunStatus: String, Sendable, Codable, CaseIterable {
    /// Trained and evaluated every experience.
    case completed
    /// The loss became NaN or infinite; the message says where.
    case diverged
    /// Any other error (bad scenario file, inconsistent options); the message says which.
    case failed
}

/// The outcome of one run, ready for the results writer (a `Sendable` value, so runs can
/// compute in parallel and hand their results to the single writer).
public struct RunResult: Sendable {
    public var run: ResolvedRun
    public var status: RunStatus
    public var message: String
    public var outcome: TrainingOutcome?
    public var metrics: MetricSet?
    public var costs: CostModel?
    public var experienceNames: [String]
    public var experienceMetadata: [[String: String]]
    public var featureNames: [String]
    public var streamMetadata: [String: String]
    /// Wall time of the whole run including data generation, seconds.
    public var wallSeconds: Double
    /// Threads one dense product of this run could use (`Kernels.threads`) and the most one used:
    /// products below the size where a second thread pays run on one thread by themselves
    /// (products started on the run's own thread; a population's or federation's workers not counted).
    public var kernelThreads = 1, kernelThreadsUsed = 1
    /// Prequential mode: the online accuracy curve.
    public var prequential: PrequentialCurve? = nil
    /// Population runs: every user's metrics and the aggregate.
    public var population: PopulationOutcome? = nil
    /// Federated runs: per round and per client records (`federation/` in the results).
    public var federation: FederationOutcome? = nil
    /// Few-shot runs: held-out users' accuracy after k personalisation steps (`few_shot/`).
    public var fewShot: FewShotOutcome? = nil
    /// Runs with a poisoned stream: what was poisoned and the attack success rate (`poisoning/`).
    public var poisoning: PoisoningOutcome? = nil
    /// Energy, bytes, latency, schedule and int8 figures (docs/on-device.md).
    public var device: DeviceReport? = nil
    /// Set when the run was asked to stop early (`stopAfter`): the state to resume from. The
    /// outcome then covers only the experiences trained so far.
    public var checkpoint: TrainerCheckpoint? = nil
    /// Set when a population run stopped early: one entry per user.
    public var populationCheckpoint: [RunCheckpoint.PopulationUserCheckpoint]? = nil
    /// A federated run stopped after a round (`--stop-after`): its state there.
    public var federationCheckpoint: FederationCheckpoint? = nil

    /// The run's checkpoint when it stopped early, whatever kind of run it is.
    public var runCheckpoint: RunCheckpoint? {
        if let c = checkpoint { return .trainer(c) }
        if let c = federationCheckpoint { return .federation(c) }
        return populationCheckpoint.map { .population($0) }
    }

    public var runId: String { run.runId }
    public var name: String { run.config.name }

    /// A run that has not produced anything yet: failed with an empty message until the executor
    /// fills it in (every executor starts from this).
    public static func notStarted(_ run: ResolvedRun) -> RunResult {
        RunResult(run: run, status: .failed, message: "", outcome: nil, metrics: nil, costs: nil,
                  experienceNames: [], experienceMetadata: [], featureNames: [], streamMetadata: [:],
                  wallSeconds: 0)
    }

    /// This result without its records (outcome, metrics, per-user, federation and device
    /// figures): its run, status, message and wall time. What `continual run` keeps of each
    /// written run when it reports from the file instead, so its memory does not grow with the
    /// number of runs in the file.
    public var statusOnly: RunResult {
        var r = RunResult.notStarted(run)
        r.status = status
        r.message = message
        r.wallSeconds = wallSeconds
        return r
    }
}
