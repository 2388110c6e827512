import ContinualExperiments
import Dispatch
import Foundation

/// Runs a `SweepSession` into its results file for `run` and `sweep` alike: each finished run is
/// written at once (the file is closed between runs), and Ctrl-C / SIGTERM wait for a write in
/// progress, leave every finished run readable and exit 130 with the command that finishes the
/// rest (`resumeCommand`, see `ResumeHint`). Runs in flight when the signal arrives are lost.
enum InterruptibleSession {
    static func run(_ session: SweepSession, writer: SweepWriter, jobs: Int, path: String, resumeCommand: String,
                    execute: @escaping @Sendable (ResolvedRun) -> RunResult = RunExecutor.execute,
                    progress: @escaping @Sendable (SweepSession.Progress) -> Void, tty: Bool) throws -> SweepSession.Outcome {
        let stop = StopFlag()
        let interruption = Interruption()
        // Ends the process with 130 after folding every finished run into the file; whichever of
        // the signal handler and the main thread (which sees the stop flag when the session
        // returns early) gets here first does it, the other waits for the exit.
        let interrupt: @Sendable () -> Never = {
            interruption.once {
                var note = ""
                do { try writer.finish() } catch { note = " (\(error))" }
                let done = writer.completedIds.count
                let text = (tty ? "\n" : "") + "interrupted: \(done) of \(session.selected.count) runs are in \(path)\(note); "
                    + "finish them with: \(resumeCommand)\n"
                FileHandle.standardError.write(Data(text.utf8))
                Foundation.exit(130)
            }
        }
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                stop.set()
                interrupt()
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
        // Stopped by a signal: the session returned early and must not be reported as a success.
        if stop.isSet { interrupt() }
        switch box.value! {
        case .success(let o): return o
        case .failure(let error): throw CLIFailure.runFailed("stopped: \(error)")
        }
    }

    /// Runs its body once; a second caller blocks for good (the body ends the process).
    final class Interruption: @unchecked Sendable {
        private let lock = NSLock()
        func once(_ body: () -> Never) -> Never {
            lock.lock()
            body()
        }
    }
}
