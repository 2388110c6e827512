import ContinualExperiments
import Dispatch
import Foundation

/// The `"tune"` stage of `run` and `sweep`: selects each tuned variant's values on validation
/// data (`Tuner`), prints what it chose, and returns the experiment re-expanded with those values
/// and carrying the records the results file stores under `/tuning`. Nothing is written to the
/// results file before it ends; each finished selection run goes to the output's tuning journal
/// (`TuningJournal`), so a resumed command does not run it again — nor one the file being resumed
/// holds in `/tuning` (`TuningRecord.runIds`): resuming a finished tuned sweep trains no selection run.
enum TuningStage {
    /// `world`: under MPI, every rank calls this alike; the selection runs are spread over the
    /// ranks and every rank gets the same choices (`Tuner.tune(world:)`; no journal then).
    static func apply(_ experiment: ExperimentFile, jobs: Int, output: ResultsOutput?, quiet: Bool = false,
                      from tuned: String? = nil, world: MPIWorld? = nil) throws -> ExperimentFile {
        guard !experiment.tuneTargets.isEmpty else {
            if let tuned { throw CLIFailure.badInput("--tuning-from \(tuned): \(experiment.path) has no tuned variant") }
            return experiment
        }
        if let tuned { return try taken(experiment, from: tuned, quiet: quiet) }
        let journal = try output?.tuningJournal()
        let trials: [Tuner.Trial]
        do {
            trials = try Tuner.trials(experiment)
            _ = try Tuner.extensionChecks(experiment)   // a later round's point fails now, not mid-tuning
        } catch let e as ConfigError { throw CLIFailure.badInput(e.description) }
        let most = Tuner.maximumTrialCount(experiment)
        if !quiet {
            writeOut("tuning \(experiment.tuneTargets.count) variant(s): \(trials.count) selection runs on validation splits of the "
                + "training data (test sets not read)\n")
            if most > trials.count { writeOut("  up to \(most) in all while a choice sits at a grid edge its \"extend\" values move\n") }
            if let world, world.size > 1 { writeOut("  spread over \(world.size) MPI ranks (rank r trains runs r, r + \(world.size), …)\n") }
            if let journal {
                let kept = journal.entries().count   // later rounds' runs included
                writeOut(kept > 0 ? "  \(kept) of them already finished (kept in \(journal.path) or the resumed file's /tuning): not run again\n"
                                  : "  (each finished one is kept in \(journal.path): an interrupted tuning continues with --resume)\n")
            }
        }
        let box = ResultBox<[TuningRecord]>()
        let semaphore = DispatchSemaphore(value: 0)
        let every = max(1, trials.count / 10)
        Task.detached {
            do {
                box.value = .success(try await Tuner.tune(experiment, trials: trials, jobs: jobs, journal: journal, world: world,
                                                          progress: { done, total in
                    if !quiet && (done % every == 0 || done == total) {
                        writeOut("  tuning: \(done)/\(total) selection runs" + (most > total ? " so far (up to \(most))\n" : "\n"))
                    }
                }))
            } catch {
                box.value = .failure(error)
            }
            semaphore.signal()
        }
        semaphore.wait()
        let records: [TuningRecord]
        switch box.value! {
        case .success(let r): records = r
        case .failure(let error): throw CLIFailure.runFailed("tuning stopped: \(error)")
        }
        return try chosen(experiment, records: records, quiet: quiet)
    }

    /// The experiment re-expanded with `records`' choices, carrying the records.
    static func chosen(_ experiment: ExperimentFile, records: [TuningRecord], quiet: Bool) throws -> ExperimentFile {
        var tuned: ExperimentFile
        do {
            let chosen = try Tuner.choices(records, file: experiment.path)
            tuned = try ExperimentFile.parse(data: Data(experiment.sourceText.utf8), path: experiment.path, chosen: chosen)
        } catch let e as ConfigError {
            throw CLIFailure.runFailed(e.description)
        }
        tuned.tuningRecords = records
        if !quiet {
            for r in records {
                let best = r.chosen.map { String(format: "%.2f %%", r.meanScores[$0] * 100) } ?? "—"
                writeOut("  \(r.variant): \(r.chosenText) (validation ACC \(best); \(r.points.count) points × \(r.seeds.count) seed(s))\n")
                if let edge = r.edgeText { writeOut("    note: \(edge) of the values trained; the best may lie beyond them\n") }
            }
        }
        return tuned
    }

    /// `--tuning-from FILE`: the choices of a tuning already run (e.g. by `sweep --tune-only`),
    /// checked to be this file's own tune blocks, instead of tuning again (the shards of a sweep).
    static func taken(_ experiment: ExperimentFile, from path: String, quiet: Bool) throws -> ExperimentFile {
        let records: [TuningRecord]
        do {
            let all = try TuningReader.read(path: path)
            try TuningReader.check(all, against: experiment, from: path)
            records = experiment.tuneTargets.compactMap { t in all.first { $0.variant == t.variant } }
        } catch {
            throw CLIFailure.badInput("--tuning-from \(error)")
        }
        if !quiet { writeOut("tuning: the choices of \(records.count) variant(s) taken from \(path) (no selection run)\n") }
        return try chosen(experiment, records: records, quiet: quiet)
    }
}
