import Foundation
import ContinualCore
import ContinualMetrics
import ContinualScenarios

/// Every user's numbers of a population run, and their aggregate.
public struct PopulationOutcome: Sendable {
    public var config: PopulationConfig
    /// The population seed actually used (the config's, or the run's).
    public var seed: UInt64
    public var dataSeeds: [UInt64]
    public var modelSeeds: [UInt64]
    public var status: [RunStatus]
    public var messages: [String]
    /// Metric names (MetricSet.named order) and values: `values[m][u]` for metric m of user u.
    public var metricNames: [String]
    public var metricMeanings: [String]
    public var values: [[Double]]
    /// Per user, R[T-1][j]: final accuracy on each experience (N × T).
    public var finalAccuracy: [[Double]]
    /// Per user, the whole T×T matrix (when `store_matrices`).
    public var matrices: [[[Double]]]
    /// Aggregates over the users that completed: mean, std and quantiles per metric.
    public var mean: [Double]
    public var std: [Double]
    public var quantiles: [[Double]]
    public var trainSeconds: [Double]
    /// The ids of the users these entries belong to, when not 0..<users (a federation's evaluated
    /// clients).
    public var userIds: [Int]? = nil
    /// The users' names in the data file, for a population read from a file's user column.
    public var userNames: [String]? = nil
    /// Every user's final parameters (`keep_models`; empty for a user that did not complete,
    /// and for federations, whose clients' models are not kept).
    public var finalParameters: [[Float]] = []

    public var users: Int { status.count }
}

/// Runs one model per simulated user, in parallel over cores; the results are identical for any
/// number of workers because every user's data and model seeds derive from the user index alone.
public enum PopulationExecutor {
    struct UserResult: Sendable {
        var dataSeed: UInt64 = 0
        var modelSeed: UInt64 = 0
        var status: RunStatus = .failed
        var message = ""
        var matrix: [[Double]] = []
        var metrics: [Double] = []
        var trainSeconds = 0.0
        var initial: [Double] = []
        var random: [Double] = []
        /// Rows, steps and FLOPs per experience, which the run-level work adds up (`UserWork`).
        var work = UserWork()
        var outcome: TrainingOutcome? = nil
        var costs: CostModel? = nil
        var stream: ExperienceStream? = nil
        /// The final model's parameters (`keep_models`).
        var finalParameters: [Float] = []
        /// The user's state when the run stopped early (or how its run ended before that).
        var checkpoint: RunCheckpoint.PopulationUserCheckpoint? = nil
    }

    /// Slots written by exactly one worker each (distinct indices), read after all finish.
    final class Slots<Element>: @unchecked Sendable {
        let base: UnsafeMutablePointer<Element>
        let count: Int
        init(_ n: Int, initial: Element) {
            count = n
            base = .allocate(capacity: n)
            base.initialize(repeating: initial, count: n)
        }
        deinit {
            base.deinitialize(count: count)
            base.deallocate()
        }
    }

    /// User `i`'s model seed and scenario options, from the population seed and the index alone:
    /// a population run's user `i` and a federation's client `i` are the same simulated person.
    static func member(_ i: Int, of scenario: any PopulationScenario, spread: Double,
                       seed popSeed: UInt64) -> (modelSeed: UInt64, options: any PopulationScenario) {
        var rng = RandomSource(seed: popSeed, stream: "population.user.\(i)")
        var modelRNG = rng.derived("model")
        let modelSeed = modelRNG.next()
        return (modelSeed, scenario.user(i, spread: spread, rng: &rng))
    }

    /// User `i`'s stream as the run trains on it: built from `options` at the user's model seed,
    /// and with `"validation_split"` carved for this user (owner "user i"). A population run's
    /// user `i` and a federation's client `i` both take it from here, so they are the same data.
    static func stream(ofUser i: Int, options: any PopulationScenario, modelSeed: UInt64,
                       config: RunConfig) throws -> ExperienceStream {
        let stream = try options.makeStream(seed: modelSeed)
        return try config.validationSplit.map { try $0.apply(to: stream, owner: "user \(i)") } ?? stream
    }

    static func user(_ i: Int, run: RunConfig, population: PopulationConfig, popSeed: UInt64,
                     scenario: any PopulationScenario, keepDetails: Bool,
                     resume: RunCheckpoint.PopulationUserCheckpoint? = nil, stopAfter: Int? = nil) -> UserResult {
        var r = UserResult()
        let (modelSeed, options) = member(i, of: scenario, spread: population.spread, seed: popSeed)
        r.modelSeed = modelSeed
        var resumeFrom: TrainerCheckpoint? = nil
        switch resume {
        case .ended(let status, let message)?:
            // The user's run ended before the checkpoint: it ends the same way again.
            r.status = status
            r.message = message
            r.checkpoint = resume
            return r
        case .training(let c)?: resumeFrom = c
        case nil: break
        }
        do {
            let stream = try Self.stream(ofUser: i, options: options, modelSeed: r.modelSeed, config: run)
            r.dataSeed = UInt64(stream.metadata["seed"] ?? "") ?? 0
            let (outcome, costs, _, stopped) = try RunExecutor.train(run, stream: stream, seed: r.modelSeed,
                                                                     resumingFrom: resumeFrom, stopAfter: stopAfter)
            if let stopped {
                r.checkpoint = .training(stopped)
                r.status = .completed
                return r
            }
            let m = MetricSet(matrix: AccuracyMatrix(outcome.accuracy), randomBaseline: outcome.randomAccuracy,
                              initialBaseline: outcome.initialAccuracy)
            r.matrix = outcome.accuracy
            r.metrics = m.named.map(\.value)
            r.trainSeconds = outcome.trainSeconds
            r.initial = outcome.initialAccuracy
            r.random = outcome.randomAccuracy
            r.work = UserWork(progress: outcome.progress)
            r.status = .completed
            if population.keepModels { r.finalParameters = outcome.finalModel.parameters }
            if keepDetails {
                r.outcome = outcome
                r.costs = costs
                r.stream = stream
            }
        } catch let error as TrainingError {
            if error.isDivergence { r.status = .diverged }
            r.message = error.description
        } catch {
            r.message = "\(error)"
        }
        if stopAfter != nil { r.checkpoint = .ended(status: r.status, message: r.message) }
        return r
    }

    /// Trains every user (in parallel, deterministic for any worker count). With `stopAfter`,
    /// every user stops after that experience and the result carries one checkpoint entry per
    /// user; `resume` continues from such entries.
    public static func execute(_ run: ResolvedRun, population: PopulationConfig,
                               resumingFrom resume: [RunCheckpoint.PopulationUserCheckpoint]? = nil,
                               stopAfter: Int? = nil) -> RunResult {
        let clock = ContinuousClock()
        let start = clock.now
        let config = run.config
        var result = RunResult.notStarted(run)
        guard let generator = config.scenario.options as? any PopulationScenario else {
            result.message = "scenario \"\(config.scenario.typeName)\" does not support populations (supported: "
                + Registry.scenarios.filter { $0 is any PopulationScenario.Type }.map { $0.typeName }.joined(separator: ", ") + ")"
            return result
        }
        let n = population.users
        if let resume, resume.count != n {
            result.message = "the checkpoint holds \(resume.count) users, this population has \(n)"
            return result
        }
        let popSeed = population.seed ?? config.seed
        let scenario: any PopulationScenario
        do { scenario = try generator.forPopulation(users: n, seed: popSeed) } catch {
            result.message = "\(error)"
            return result
        }
        let slots = Slots(n, initial: UserResult())
        let workers = max(1, min(n, population.jobs > 0 ? population.jobs : ProcessInfo.processInfo.activeProcessorCount))
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            var i = w
            while i < n {
                slots.base[i] = user(i, run: config, population: population, popSeed: popSeed, scenario: scenario,
                                     keepDetails: i == 0, resume: resume?[i], stopAfter: stopAfter)
                i += workers
            }
        }
        let users = (0..<n).map { slots.base[$0] }
        if users.contains(where: { if case .training? = $0.checkpoint { return true } else { return false } }) {
            // Stopped early: no metrics yet, only every user's state.
            result.populationCheckpoint = users.map { $0.checkpoint ?? .ended(status: $0.status, message: $0.message) }
            result.status = .completed
            let done = result.runCheckpoint?.experiencesDone ?? 0
            result.message = "stopped every user after experience \(done - 1) of \(result.runCheckpoint?.experienceCount ?? 0)"
            result.wallSeconds = (clock.now - start).seconds
            return result
        }
        aggregate(users, population: population, seed: popSeed, into: &result)
        if let file = scenario as? DatasetScenario, !file.memberIds.isEmpty {
            result.population?.userNames = file.memberIds
            result.streamMetadata["population_user_names"] = file.memberIds.joined(separator: ",")
        }
        result.wallSeconds = (clock.now - start).seconds
        return result
    }

    /// Fills `result` from every user's numbers: the population outcome (per-user metrics,
    /// aggregates) and the run-level numbers over the users that completed (mean accuracy matrix,
    /// per-user means of the forgetting measures). Shared with the federated runner, whose
    /// clients' personal matrices are its users'.
    static func aggregate(_ users: [UserResult], population: PopulationConfig, seed popSeed: UInt64,
                          userIds: [Int]? = nil, into result: inout RunResult) {
        let n = users.count
        let names = MetricSet(matrix: AccuracyMatrix([[0]]), randomBaseline: [0], initialBaseline: [0]).named
        let ok = users.indices.filter { users[$0].status == .completed }
        let values = names.indices.map { m in users.map { $0.status == .completed ? $0.metrics[m] : .nan } }
        var outcome = PopulationOutcome(
            config: population, seed: popSeed, dataSeeds: users.map(\.dataSeed), modelSeeds: users.map(\.modelSeed),
            status: users.map(\.status), messages: users.map(\.message), metricNames: names.map(\.name),
            metricMeanings: names.map(\.meaning), values: values,
            finalAccuracy: users.map { $0.matrix.last ?? [] }, matrices: population.storeMatrices ? users.map(\.matrix) : [],
            mean: [], std: [], quantiles: [], trainSeconds: users.map(\.trainSeconds))
        outcome.userIds = userIds
        if users.contains(where: { !$0.finalParameters.isEmpty }) { outcome.finalParameters = users.map(\.finalParameters) }
        for m in names.indices {
            let v = ok.map { values[m][$0] }.filter { !$0.isNaN }.sorted()
            let mean = v.isEmpty ? .nan : v.reduce(0, +) / Double(v.count)
            let variance = v.count > 1 ? v.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(v.count - 1) : .nan
            outcome.mean.append(mean)
            outcome.std.append(variance.squareRoot())
            outcome.quantiles.append(population.quantiles.map { quantile(v, $0) })
        }
        result.population = outcome

        // The run-level numbers: user 0's stream description and costs, and the mean accuracy
        // matrix over the users that completed (ACC and BWT of the mean = mean ACC and BWT).
        if let first = users.first(where: { $0.stream != nil }), let stream = first.stream {
            result.experienceNames = stream.experiences.map(\.name)
            result.experienceMetadata = stream.experiences.map(\.metadata)
            result.featureNames = stream.featureNames
            result.streamMetadata = stream.metadata.merging(["population_users": "\(n)", "population_note":
                "accuracy_matrix, baselines and metrics are over the mean matrices of all completed users; per-user values in population/"]) { $1 }
        }
        let mismatch = averageCompleted(users, ok: ok, metrics: names.map(\.name), values: values, means: outcome.mean, into: &result)
        let failed = n - ok.count
        result.status = failed == 0 && mismatch.isEmpty ? .completed : .failed
        if failed > 0, let bad = users.first(where: { $0.status != .completed }) {
            result.message = "\(failed) of \(n) users did not complete; first: \(bad.message)"
        }
        if !mismatch.isEmpty { result.message = result.message.isEmpty ? mismatch : result.message + "; " + mismatch }
    }

    /// Sets the run's outcome, metrics and costs to the means over the completed users (`ok`)
    /// whose matrices have the first one's number of experiences; returns why some were left
    /// out ("" when none were). `values[m][user]` is metric `metrics[m]`, `means[m]` its mean over `ok`.
    private static func averageCompleted(_ users: [UserResult], ok: [Int], metrics names: [String], values: [[Double]],
                                         means: [Double], into result: inout RunResult) -> String {
        // Only users with the same number of experiences T as the described stream can be
        // averaged; any other T makes the run fail (never index past a shorter matrix).
        guard let firstOK = ok.first, let base = users[firstOK].outcome else { return "" }
        let T = base.accuracy.count
        var mismatch = ""
        let cohort = ok.filter { users[$0].matrix.count == T && users[$0].initial.count == T && users[$0].random.count == T
            && users[$0].work.processed.count == T && users[$0].matrix.allSatisfy { $0.count == T } }
        if cohort.count < ok.count, let other = ok.first(where: { !cohort.contains($0) }) {
            mismatch = "users have different numbers of experiences (user \(firstOK): \(T), user \(other): "
                + "\(users[other].matrix.count)), so their accuracy matrices cannot be averaged; \(ok.count - cohort.count) "
                + "of \(ok.count) completed users left out of the run-level numbers (use a cut that gives every user the same experiences)"
        }
        func meanOf(_ pick: (UserResult) -> [Double]) -> [Double] {
            (0..<T).map { j in cohort.map { pick(users[$0])[j] }.reduce(0, +) / Double(cohort.count) }
        }
        var o = base
        o.accuracy = (0..<T).map { i in meanOf { $0.matrix[i] } }
        o.initialAccuracy = meanOf(\.initial)
        o.randomAccuracy = meanOf(\.random)
        // Totals over users, so throughput, FLOP and energy figures stay meaningful: every
        // tally of work (rows, steps, extra FLOPs), not the rows alone.
        o.trainSeconds = users.map(\.trainSeconds).reduce(0, +)
        UserWork.total(cohort.map { users[$0].work }, experiences: T).apply(to: &o.progress)
        result.outcome = o
        var metrics = MetricSet(matrix: AccuracyMatrix(o.accuracy), randomBaseline: o.randomAccuracy,
                                initialBaseline: o.initialAccuracy)
        // ACC, BWT, FWT and learning accuracy are linear in R, so the mean matrix gives the mean
        // over users. Forgetting takes a max per user; the max of means would understate it, so
        // those metrics are the means of the per-user values.
        func userMean(_ name: String) -> Double? {
            guard let m = names.firstIndex(where: { $0 == name }) else { return nil }
            if cohort.count == ok.count { return means[m] }
            let v = cohort.map { values[m][$0] }.filter { !$0.isNaN }
            return v.isEmpty ? .nan : v.reduce(0, +) / Double(v.count)
        }
        metrics.forgetting = userMean("forgetting") ?? metrics.forgetting
        metrics.forgettingMaxAllRows = userMean("forgetting_max_all_rows") ?? metrics.forgettingMaxAllRows
        if T > 1 {
            metrics.forgettingPerExperience = (0..<(T - 1)).map { j in
                cohort.map { AccuracyMatrix(users[$0].matrix).forgettingPerExperience[j] }.reduce(0, +) / Double(cohort.count)
            }
        }
        result.metrics = metrics
        result.costs = users[firstOK].costs
        return mismatch
    }

    /// Linear-interpolation quantile of sorted values (numpy's default); NaN if empty.
    static func quantile(_ sorted: [Double], _ q: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let h = q * Double(sorted.count - 1)
        let lo = Int(h.rounded(.down)), hi = min(lo + 1, sorted.count - 1)
        return sorted[lo] + (h - Double(lo)) * (sorted[hi] - sorted[lo])
    }
}
