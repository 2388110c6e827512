import Foundation
import ContinualCore
import ContinualScenarios

/// Selects each tuned variant's hyperparameters on validation data (`TuneSpec`) before its
/// reported runs: builds the selection runs, runs them with the sweep runner, scores them and
/// picks the best point. Deterministic: the records depend on the experiment file only, never
/// on `jobs` or on the order runs finish.
public enum Tuner {
    /// One selection run: which variant, grid point and seed it scores.
    public struct Trial: Sendable {
        public var target: Int
        public var point: Int
        public var seedIndex: Int
        public var run: ResolvedRun
        /// The run id of the configuration without its name, which holds the point's index:
        /// two points resolving to the same run share it.
        public let configurationId: String

        init(target: Int, point: Int, seedIndex: Int, run: ResolvedRun) {
            (self.target, self.point, self.seedIndex, self.run) = (target, point, seedIndex, run)
            var unnamed = run.config
            unnamed.name = ""
            configurationId = unnamed.runId
        }
    }

    /// Selection runs of `experiment`'s first round, counted without resolving them.
    public static func trialCount(_ experiment: ExperimentFile) -> Int {
        experiment.tuneTargets.reduce(0) { $0 + $1.spec.trialCount }
    }

    /// Selection runs of `experiment` if every `"extend"` value were taken.
    public static func maximumTrialCount(_ experiment: ExperimentFile) -> Int {
        experiment.tuneTargets.reduce(0) { $0 + $1.spec.maximumTrialCount }
    }

    /// The first round's selection runs of `experiment` (its grids as written), target by target,
    /// point by point, seed by seed. Resolving them checks every grid point without training
    /// (what `validate` does, with `extensionChecks`).
    public static func trials(_ experiment: ExperimentFile) throws -> [Trial] {
        var out: [Trial] = []
        for (t, target) in experiment.tuneTargets.enumerated() {
            var seen: [String: Int] = [:]
            out += try trials(of: target, index: t, points: target.spec.grid.points(), from: 0, file: experiment.path, seen: &seen)
        }
        return out
    }

    /// One run (the first selection seed) per point that later rounds could train: the cartesian
    /// product of each parameter's grid and `"extend"` values, less the first round's points.
    /// `validate` and `run`/`sweep` resolve them before anything trains, so a value or a
    /// combination that cannot run is reported then, not in the middle of a tuning.
    public static func extensionChecks(_ experiment: ExperimentFile) throws -> [ResolvedRun] {
        var out: [ResolvedRun] = []
        for (t, target) in experiment.tuneTargets.enumerated() where !target.spec.extensions.isEmpty {
            let first = Set(target.spec.grid.points())
            let points = target.spec.fullGrid.points().filter { !first.contains($0) }
            var seen: [String: Int] = [:]
            out += try trials(of: target, index: t, points: points, from: first.count, file: experiment.path, seen: &seen,
                              seeds: Array(target.spec.seeds.prefix(1))).map(\.run)
        }
        return out
    }

    /// The selection runs of `target` at `points`, numbered from `from` (their index among the
    /// target's trained points); `seen` maps configurations (run ids without the name) to point
    /// indices, to refuse two points that resolve to the same run.
    static func trials(of target: TuneTarget, index t: Int, points: [[JSONValue]], from: Int, file: String,
                       seen: inout [String: Int], seeds: [UInt64]? = nil) throws -> [Trial] {
        var splitObject: [String: JSONValue] = ["fraction": .double(target.spec.split.fraction),
                                                 "seed": .int(Int64(target.spec.split.seed))]
        if let k = target.spec.split.experiences { splitObject["experiences"] = .int(Int64(k)) }
        let split = JSONValue.object(splitObject)
        var out: [Trial] = []
        for (offset, point) in points.enumerated() {
            let p = from + offset
            var json = target.json
            for (param, value) in zip(target.spec.grid.parameters, point) {
                do { json = try param.path.setting(value, in: json) } catch {
                    let at = target.spec.isExtension(param.path, value)
                        ? "\(target.location).extend[\"\(param.path.text)\"]" : "\(target.location).parameters[\"\(param.path.text)\"]"
                    throw ConfigError(file: file, location: at, message: error.message + " (variant \"\(target.variant)\")")
                }
            }
            for (s, seed) in (seeds ?? target.spec.seeds).enumerated() {
                guard case .object(var o) = json else { continue }
                o["seed"] = .int(Int64(seed))
                o["validation_split"] = split
                o["name"] = .string("\(target.variant)_tune\(p)_seed\(seed)")
                let context = "variant \"\(target.variant)\", tuning point " + zip(target.spec.grid.parameters, point).map { p, v in
                    "\(p.path.text)=\(v.shortDescription)" + (target.spec.isExtension(p.path, v) ? " from \"extend\"" : "")
                }.joined(separator: ", ")
                var run: ResolvedRun
                do { run = try ExperimentFile.resolve(.object(o), file: file, context: context) } catch let e as ConfigError {
                    // A value from "extend" is reported where the user wrote it.
                    guard let (param, _) = zip(target.spec.grid.parameters, point).first(where: { target.spec.isExtension($0.path, $1) })
                    else { throw e }
                    throw ConfigError(file: file, location: "\(target.location).extend[\"\(param.path.text)\"]", message: "\(e.location): \(e.message)")
                }
                run.variant = target.variant
                let trial = Trial(target: t, point: p, seedIndex: s, run: run)
                if let other = seen[trial.configurationId] {
                    throw ConfigError(file: file, location: target.location + ".parameters",
                                      message: "grid points \(other) and \(p) resolve to the same configuration (variant \"\(target.variant)\"); remove the duplicate value")
                }
                seen[trial.configurationId] = p
                out.append(trial)
            }
        }
        return out
    }

    /// Runs every selection run (at most `jobs` at once) and returns one record per target, in
    /// target order. Round by round: the grids as written, then, while a choice sits at an edge
    /// its `"extend"` can move, the new points (`TuningRounds`). `progress` sees the count of
    /// finished selection runs and the count known so far (done, total).
    /// `trials`: `trials(experiment)` when the caller resolved them already (nil: resolved here).
    /// `journal`: selection runs it already holds are not run again (their entries fill the
    /// records exactly as the runs did), and each run that finishes now is appended to it.
    /// `world`: every rank of it calls this alike; each round's selection runs are spread over
    /// the ranks (`TuningShare`) and every rank returns the same records (no journal then).
    /// `shouldStop`: polled before each selection run starts; once it is true the runs in flight
    /// finish and `TuningInterrupted` is thrown (under `world`, on every rank, at the end of the
    /// round in which any rank stopped).
    public static func tune(_ experiment: ExperimentFile, trials given: [Trial]? = nil, jobs: Int,
                            journal: TuningJournal? = nil, world: MPIWorld? = nil,
                            shouldStop: @escaping @Sendable () -> Bool = { false },
                            progress: (Int, Int) -> Void = { _, _ in }) async throws -> [TuningRecord] {
        var rounds = TuningRounds(experiment)
        var trials = try given ?? trials(experiment)
        let known = journal?.entries() ?? [:]
        var finished = 0, total = trials.count
        while !trials.isEmpty {
            let entries: [TuningJournal.Entry]
            do {
                entries = try await run(trials, jobs: jobs, known: known, journal: journal, share: world.map(TuningShare.init),
                                        shouldStop: shouldStop) { done in
                    progress(finished + done, total)
                }
            } catch var stopped as TuningInterrupted {
                stopped.done += finished
                stopped.total = total
                throw stopped
            }
            finished += trials.count
            rounds.record(trials, entries)
            trials = try rounds.next(file: experiment.path)
            total += trials.count
        }
        return rounds.records
    }

    /// One round: runs the trials the journal lacks (under `share`, this rank's of them) and
    /// returns every trial's entry in trial order (not finishing order: the summed wall time is
    /// then the same Double however the runs interleave or were split between invocations).
    static func run(_ trials: [Trial], jobs: Int, known: [String: TuningJournal.Entry], journal: TuningJournal?,
                    share: TuningShare? = nil, shouldStop: @escaping @Sendable () -> Bool,
                    progress: (Int) -> Void) async throws -> [TuningJournal.Entry] {
        var entries = trials.map { known[$0.run.runId] }
        let mine = share?.indices(trials.count) ?? Array(trials.indices)
        var done = mine.filter { entries[$0] != nil }.count
        if done > 0 { progress(done) }
        let index = Dictionary(uniqueKeysWithValues: trials.enumerated().map { ($1.run.runId, $0) })
        let pending = mine.filter { entries[$0] == nil }.map { trials[$0].run }
        var journalError: (any Error)? = nil
        try await SweepRunner.run(pending, jobs: jobs, shouldStop: shouldStop) { result in
            guard let i = index[result.runId] else { return }
            let entry = TuningJournal.Entry(score: score(result), flops: flops(result), wallSeconds: result.wallSeconds)
            entries[i] = entry
            if let journal, journalError == nil {
                do { try journal.append(runId: result.runId, entry) } catch { journalError = error }
            }
            done += 1
            progress(done)
        }
        if let journalError { throw journalError }
        let interrupted = TuningInterrupted(done: done, total: trials.count, journal: journal)
        guard let share else {
            guard done == mine.count else { throw interrupted }
            return entries.map { $0! }
        }
        // A stopped rank joins the exchange too, so that every rank learns of the stop.
        guard let all = try share.gather(entries, stopped: done < mine.count) else { throw interrupted }
        if mine.count < trials.count { progress(trials.count) }   // the other ranks' runs, now known here
        return all
    }

    /// Final ACC on the validation data; NaN unless the run completed.
    static func score(_ r: RunResult) -> Double {
        guard r.status == .completed, let acc = r.metrics?.acc else { return .nan }
        return acc
    }

    static func flops(_ r: RunResult) -> Int {
        guard let o = r.outcome, let c = r.costs else { return 0 }
        return TrainingBudget(config: r.run.config.training, outcome: o, costs: c).trainingFLOPs.reduce(0, +)
    }

    /// The chosen values per variant, as `ExperimentFile.parse(chosen:)` takes them. A variant
    /// whose every selection run failed is an error: nothing can be reported for it.
    public static func choices(_ records: [TuningRecord], file: String) throws -> [String: [SweepValue]] {
        var out: [String: [SweepValue]] = [:]
        for r in records {
            guard r.chosen != nil else {
                throw ConfigError(file: file, location: ".variants (\"\(r.variant)\")",
                                  message: "every selection run of the tuning grid failed or diverged; no value can be chosen")
            }
            out[r.variant] = r.chosenValues
        }
        return out
    }
}

/// Selection stopped before every run finished (Ctrl-C): nothing was chosen and nothing written
/// to the results file; the selection runs that finished are in the journal, if one was kept.
public struct TuningInterrupted: Error, CustomStringConvertible {
    public var done: Int
    public var total: Int
    public var journal: TuningJournal? = nil
    public var description: String {
        "tuning interrupted after \(done) of \(total) selection runs known so far; nothing was chosen or written to the results file"
            + (journal.map { "; the finished selection runs are kept in \($0.path) and a resumed command (--resume) does not run them again" } ?? "")
    }
}
