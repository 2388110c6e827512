/// Runs many resolved runs in parallel with at most `jobs` in flight, handing each result to
/// one consumer on the calling task (the single writer), in completion order.
///
/// Each run is pure computation seeded by its own config, so results do not depend on `jobs`
/// or on the order runs finish; only the order `consume` sees them does.
public enum SweepRunner {
    /// Runs `runs`; stops launching new ones once `shouldStop()` is true (runs in flight still
    /// finish and are consumed). Returns how many results were consumed. An error thrown by
    /// `consume` stops launching, lets the runs in flight finish, and is rethrown.
    @discardableResult
    public static func run(_ runs: [ResolvedRun], jobs: Int, shouldStop: @escaping @Sendable () -> Bool = { false },
                           execute: @escaping @Sendable (ResolvedRun) -> RunResult = RunExecutor.execute,
                           consume: (RunResult) throws -> Void) async throws -> Int {
        let width = max(1, jobs)
        var consumed = 0
        var failure: (any Error)?
        await withTaskGroup(of: RunResult.self) { group in
            var next = 0
            func launch() {
                guard next < runs.count, failure == nil, !shouldStop() else { return }
                let run = runs[next]
                next += 1
                group.addTask { execute(run) }
            }
            for _ in 0..<width { launch() }
            while let result = await group.next() {
                if failure == nil {
                    do {
                        try consume(result)
                        consumed += 1
                    } catch {
                        failure = error
                    }
                }
                launch()
            }
        }
        if let failure { throw failure }
        return consumed
    }
}
