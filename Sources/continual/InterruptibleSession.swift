import ContinualExperiments
import Dispatch
import Foundation

/// Runs a `SweepSession` into its results file for `run` and `sweep` alike: each finished run is
/// written at once (the file is closed between runs), and Ctrl-C / SIGTERM wait for a write in
/// progress, leave every finished run readable and exit 130 with the command that finishes the
/// rest (`--resume`). Runs in flight when the signal arrives are lost.
enum InterruptibleSession {
    static func run(_ session: SweepSession, writer: SweepWriter, jobs: Int, path: String, command: String,
                    execute: @escaping @Sendable (ResolvedRun) -> RunResult = RunExecutor.execute,
                    progress: @escaping @Sendable (SweepSession.Progress) -> Void, tty: Bool) throws -> SweepSession.Outcome {
        let stop = StopFlag()
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                stop.set()
                try? writer.finish()
                let done = writer.completedIds.count
                let text = (tty ? "\n" : "") + "interrupted: \(done) of \(session.selected.count) runs are in \(path); "
                    + "run the same command with --resume to finish (\(command) --resume)\n"
                FileHandle.standardError.write(Data(text.utf8))
                Foundation.exit(130)
            }
            source.resume()
            sources.append(source)
        }
        defer { sources.forEach { $0.cancel() } }
        let box = ResultBox<SweepSession.Outcome>()
        let semaphore = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                box.value = .success(try await session.run(writer: writer, jobs: jobs, shouldStop: { stop.isSet },
                                                           execute: execute, progress: progress))
            } catch {
                box.value = .failure(error)
            }
            semaphore.signal()
        }
        semaphore.wait()
        switch box.value! {
        case .success(let o): return o
        case .failure(let error): throw CLIFailure.runFailed("stopped: \(error)")
        }
    }

    /// Opens the results file: an existing file needs `--resume` (keep its runs) or `--overwrite`.
    static func openWriter(_ session: SweepSession, path: String, resume: Bool, overwrite: Bool) throws -> SweepWriter {
        guard !(resume && overwrite) else { throw CLIFailure.badInput("use either --resume or --overwrite") }
        // One writer per file, for the whole command (released at exit).
        do { try WriterLock.acquire(path) } catch { throw CLIFailure.badInput("\(error)") }
        if FileManager.default.fileExists(atPath: path) && !resume && !overwrite {
            throw CLIFailure.badInput("\(path) exists; use --resume to complete it or --overwrite to replace it")
        }
        let writer: SweepWriter
        do { writer = try session.makeWriter(path: path, resume: resume) } catch { throw CLIFailure.badInput("\(error)") }
        for d in writer.damaged { printError("warning: \(path): run group \(d.id) was unreadable (\(d.reason)); removed, it runs again") }
        return writer
    }
}
