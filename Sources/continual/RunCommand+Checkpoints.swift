import ContinualExperiments
import Foundation

extension RunCommand {
    /// --checkpoint-every's saves: the checkpoint written durably over --checkpoint (nil: none).
    func periodicCheckpoints(_ runs: [ResolvedRun]) throws -> RoundCheckpoints? {
        guard let every = checkpointEvery, let path = checkpoint, let run = runs.first else { return nil }
        let digest = try run.config.scenarioDataDigest(), json = run.canonicalJSON
        return RoundCheckpoints(every: every) { state in
            try CheckpointFile.write(state, configJSON: json, dataDigest: digest, to: path)
        }
    }

    /// The command that continues after an interruption: this one with --resume, and with
    /// --resume-from the periodic checkpoint when the run saves one.
    func resumeHint() -> String {
        var arguments = CommandLine.arguments
        if checkpointEvery != nil, resumeFrom == nil, let checkpoint { arguments += ["--resume-from", checkpoint] }
        return ResumeHint.command(arguments)
    }

    /// Checks the checkpoint flags (a single run; --stop-after with --checkpoint; --checkpoint-every
    /// for a federated run) and reads the checkpoint --resume-from names (nil: none).
    func checkpointToResume(_ runs: [ResolvedRun]) throws -> RunCheckpoint? {
        if stopAfter != nil || resumeFrom != nil || checkpointEvery != nil {
            guard runs.count == 1 else {
                throw CLIFailure.badInput("--stop-after and --resume-from need a single run; pick one with --variant ("
                    + runs.map(\.config.name).joined(separator: ", ") + ")")
            }
            if stopAfter != nil && checkpoint == nil { throw CLIFailure.badInput("--stop-after needs --checkpoint PATH") }
            if let k = stopAfter, k < 0 { throw CLIFailure.badInput("--stop-after must be ≥ 0, got \(k)") }
            if let n = checkpointEvery {
                guard n >= 1 else { throw CLIFailure.badInput("--checkpoint-every must be ≥ 1 round, got \(n)") }
                guard checkpoint != nil, stopAfter == nil else {
                    throw CLIFailure.badInput("--checkpoint-every N needs --checkpoint PATH (where the run saves every N rounds) and no --stop-after")
                }
                guard runs[0].config.federation != nil else {
                    throw CLIFailure.badInput("--checkpoint-every saves a federated run between rounds; run \"\(runs[0].config.name)\" is not federated (stop it with --stop-after K instead)")
                }
            }
        }
        guard let resumeFrom else { return nil }
        if checkpointEvery != nil && resumeFrom == checkpoint && !FileManager.default.fileExists(atPath: resumeFrom) {
            // Killed before its first save: nothing to resume, the run starts at round 0.
            writeOut("no checkpoint at \(resumeFrom) yet (the run was stopped before its first save): starting at round 0\n")
            return nil
        }
        guard FileManager.default.fileExists(atPath: resumeFrom) else { throw CLIFailure.badInput("\(resumeFrom): no such file") }
        do {
            let resume = try CheckpointFile.readRun(path: resumeFrom)
            let saved = try CheckpointFile.configJSON(path: resumeFrom)
            guard saved == runs[0].canonicalJSON else {
                throw CLIFailure.badInput("\(resumeFrom) was written for another configuration than run \"\(runs[0].config.name)\" of \(file)")
            }
            // The same config can point at a data file whose content changed: resuming would
            // mix old and new data in one run.
            let recorded = try CheckpointFile.dataDigest(path: resumeFrom)
            let current = try runs[0].config.scenarioDataDigest()
            if recorded != current && !allowDataChange {
                throw CLIFailure.badInput("\(resumeFrom) was trained on other scenario data (\(recorded.isEmpty ? "no digest recorded" : recorded)) "
                    + "than the data file now holds (\(current)); resuming would mix old and new data. "
                    + "Pass --allow-data-change to resume anyway")
            }
            return resume
        } catch let failure as CLIFailure {
            throw failure
        } catch {
            throw CLIFailure.badInput("\(resumeFrom): \(error)")
        }
    }

    /// --stop-after K: trains `run` through experience (round) K and saves its learner state to
    /// `checkpoint`; nothing goes to the results file.
    func stopEarly(_ run: ResolvedRun, resumingFrom resume: RunCheckpoint?, after k: Int, checkpoint: String) throws {
        let result = RunExecutor.execute(run, resumingFrom: resume, stopAfter: k)
        guard let state = result.runCheckpoint else {
            if !quiet { print(SummaryText.run(result) + "\n") }
            throw CLIFailure.runFailed("run \(run.config.name) ended before \(run.config.federation != nil ? "round" : "experience") \(k) (\(result.status.rawValue): \(result.message)); no checkpoint written")
        }
        do {
            try CheckpointFile.write(state, configJSON: run.canonicalJSON, dataDigest: try run.config.scenarioDataDigest(),
                                     to: checkpoint)
        } catch {
            throw CLIFailure.runFailed("cannot write checkpoint \(checkpoint): \(error)")
        }
        print("run \(run.config.name) \(result.message); checkpoint: \(checkpoint)")
        print("resume with: continual run \(file)\(variant.map { " --variant \($0)" } ?? "") --resume-from \(checkpoint)")
    }
}
