import ContinualCore

/// One user's (or federated client's) training work per experience: rows processed, optimizer
/// steps, gradient evaluations beyond the steps (`TrainingProgress.extraSteps`), the plugins'
/// FLOPs, and the mixed-precision steps skipped where the loop records them.
///
/// A population or federated run's run-level work is the total over its averaged users, so that
/// the figures computed from it — `/summary` `steps_per_experience`, `training_flops` and
/// `energy_j`, `runs/<id>/steps` and `training_flops` — are those users' totals (a federation's
/// evaluated clients'; its train seconds count every client). A client that drops out keeps
/// none of its part-round in its tallies, while `federation/client_joules` charges the part it
/// trained. (Before 2026-11-28 only the rows were totals and the steps were the first user's, so
/// those figures were neither one user's nor the population's.) The steps each user *planned*
/// (`TrainingProgress.plannedSteps`, −1 where a FLOPs budget leaves no plan) are a per-user
/// quantity with no meaningful total, so the total leaves them empty: the energy early stopping
/// saved is a per-run figure (`DeviceReport.joulesSaved`), not computed for a population.
struct UserWork: Sendable, Equatable {
    var processed: [Int] = []
    var steps: [Int] = []
    var extraSteps: [Int] = []
    var extraFLOPs: [Int] = []
    var skippedSteps: [Int] = []

    init() {}

    /// The work a finished training loop recorded.
    init(progress p: TrainingProgress) {
        (processed, steps, extraSteps, extraFLOPs) = (p.samplesProcessed, p.steps, p.extraSteps, p.extraFLOPs)
        skippedSteps = p.skippedSteps
    }

    /// The element-wise sum over `works`, each over `T` experiences. A list is summed when every
    /// work has it for all T experiences; otherwise the total leaves it empty (it is optional in
    /// `TrainingProgress`), except the rows and steps, which a user without them counts as zeros.
    static func total(_ works: [UserWork], experiences T: Int) -> UserWork {
        func sum(_ pick: (UserWork) -> [Int], required: Bool) -> [Int] {
            let lists = works.map(pick)
            guard required || (!lists.isEmpty && lists.allSatisfy { $0.count == T }) else { return [] }
            return (0..<T).map { j in lists.reduce(0) { $0 + (j < $1.count ? $1[j] : 0) } }
        }
        var t = UserWork()
        t.processed = sum(\.processed, required: true)
        t.steps = sum(\.steps, required: true)
        t.extraSteps = sum(\.extraSteps, required: false)
        t.extraFLOPs = sum(\.extraFLOPs, required: true)
        t.skippedSteps = sum(\.skippedSteps, required: false)
        return t
    }

    /// Writes this work into `p`'s tallies and clears its per-user step plan (every other field
    /// of `p` is left as it is).
    func apply(to p: inout TrainingProgress) {
        (p.samplesProcessed, p.steps, p.extraSteps, p.extraFLOPs) = (processed, steps, extraSteps, extraFLOPs)
        (p.plannedSteps, p.skippedSteps) = ([], skippedSteps)
    }
}
