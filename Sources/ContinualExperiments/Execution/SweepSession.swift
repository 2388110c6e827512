import Foundation

/// One invocation of a sweep: the runs still to do (after sharding and resume), run in parallel,
/// each result written by the single `SweepWriter` as it arrives.
public struct SweepSession: Sendable {
    /// What the progress display sees after each finished run.
    public struct Progress: Sendable {
        public var done: Int
        public var total: Int
        /// Runs that failed or diverged so far.
        public var failed: Int
        public var elapsedSeconds: Double
        public var last: RunResult
        /// Remaining time (seconds), weighted by the expected cost of the runs left
        /// (`EstimatedTimeLeft`); NaN before the first run finished.
        public var etaSeconds: Double
    }

    public struct Outcome: Sendable {
        /// Runs in this shard of the sweep.
        public var selected: Int
        /// Runs skipped because the file already had them (`--resume`).
        public var skipped: Int
        public var written: Int
        public var failed: [RunResult]
        /// True when a stop was requested before every run was done.
        public var interrupted: Bool
    }

    public var experiment: ExperimentFile
    public var shard: SweepShard?
    /// Runs of this shard, in sweep order.
    public var selected: [ResolvedRun]

    public init(experiment: ExperimentFile, shard: SweepShard? = nil) {
        self.experiment = experiment
        self.shard = shard
        self.selected = shard?.select(experiment.runs) ?? experiment.runs
    }

    public var layout: SummaryLayout { SummaryLayout(experiment: experiment) }

    /// Opens (or creates) the results file for this session.
    public func makeWriter(path: String, resume: Bool) throws -> SweepWriter {
        try SweepWriter(path: path, experiment: experiment, layout: layout, resume: resume,
                        shard: shard?.description ?? "")
    }

    /// Runs what `writer` does not have yet with at most `jobs` in flight, then rewrites the
    /// summary in sweep order. `shouldStop` is polled before each launch (Ctrl-C).
    public func run(writer: SweepWriter, jobs: Int, shouldStop: @escaping @Sendable () -> Bool = { false },
                    execute: @escaping @Sendable (ResolvedRun) -> RunResult = RunExecutor.execute,
                    progress: (Progress) -> Void = { _ in }) async throws -> Outcome {
        let todo = selected.filter { !writer.completedIds.contains($0.runId) }
        var outcome = Outcome(selected: selected.count, skipped: selected.count - todo.count, written: 0, failed: [],
                              interrupted: false)
        let clock = ContinuousClock()
        let start = clock.now
        // When every run starts at once (no more runs than jobs) relative costs cannot change the
        // ETA's order of work; skip the estimate, which generates each scenario's stream once more.
        let estimate = todo.count > jobs ? RunCostEstimate(todo) : nil
        var timeLeft = EstimatedTimeLeft(costs: estimate?.costs ?? Array(repeating: 1, count: todo.count),
                                         families: estimate?.families ?? Array(repeating: "", count: todo.count),
                                         jobs: min(jobs, max(1, todo.count)))   // no more at once than there are runs
        // The ETA's serial part is solved from the time since the first launch: the estimate
        // above (one stream generated per scenario) is paid once, not per run.
        let launch = clock.now
        let position = Dictionary(todo.enumerated().map { ($1.runId, $0) }, uniquingKeysWith: { a, _ in a })
        // SweepRunner launches `todo` in order: `jobs` at once, then one after each result is
        // consumed. When each run in flight started, for the ETA's in-flight time.
        var started = LaunchTimes(count: todo.count, jobs: jobs, at: launch)
        try await SweepRunner.run(todo, jobs: jobs, shouldStop: shouldStop, execute: execute) { result in
            defer { if !shouldStop() { started.nextLaunched(at: clock.now) } }   // as SweepRunner launches
            let index = position[result.run.runId]
            if let index { started.finished(index) }
            guard try writer.write(result) else { return }
            outcome.written += 1
            if result.status != .completed { outcome.failed.append(result) }
            if let i = index {
                timeLeft.finished(i, wallSeconds: result.wallSeconds,
                                  computeSeconds: result.outcome.map { $0.trainSeconds + $0.evalSeconds })
            }
            let now = clock.now
            progress(Progress(done: outcome.written, total: todo.count, failed: outcome.failed.count,
                              elapsedSeconds: (now - start).seconds, last: result,
                              etaSeconds: timeLeft.secondsLeft(elapsedSeconds: (now - launch).seconds,
                                                               inFlight: started.running(at: now))))
        }
        outcome.interrupted = outcome.written < todo.count
        try writer.finish()
        return outcome
    }
}

/// When each run of a sweep in flight started (by index in launch order), as `SweepRunner`
/// launches them: the first `jobs` together, then one after each result.
struct LaunchTimes {
    private var times: [Int: ContinuousClock.Instant] = [:]
    private var next: Int
    private let count: Int

    init(count: Int, jobs: Int, at start: ContinuousClock.Instant) {
        self.count = count
        next = min(count, max(1, jobs))
        for i in 0..<next { times[i] = start }
    }

    mutating func finished(_ index: Int) { times[index] = nil }

    mutating func nextLaunched(at time: ContinuousClock.Instant) {
        guard next < count else { return }
        times[next] = time
        next += 1
    }

    /// Seconds each run in flight has run by `now`.
    func running(at now: ContinuousClock.Instant) -> [Int: Double] { times.mapValues { (now - $0).seconds } }
}
