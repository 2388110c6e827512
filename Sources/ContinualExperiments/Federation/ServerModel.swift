import ContinualCore
import ContinualFederated

/// The server's model and its optimizer (`server_optimizer`): plain SGD at `server_lr` (rate 1:
/// w + Δ, FedAvg), FedAvgM, or the adaptive FedAdam, FedYogi and FedAdagrad of Reddi et al.
/// 2021 (`ServerOptimizer`). Every algorithm's server update goes through `apply`, which moves
/// the shared part of the global model and leaves the rest (the phones' heads) as it is.
struct ServerModel {
    var global: MLP
    let shared: [Range<Int>]
    let sharedCount: Int
    let optimizer: ServerOptimizer
    var state = ServerOptimizerState()
    /// The rounds' schedule (a divergence names the experience its round falls in).
    let schedule: ArrivalSchedule
    /// Whether a server update was applied in the current round.
    var aggregated = false

    /// Applies `aggregate` (one value per shared parameter) to the shared part of the global
    /// model with the server optimizer; a non-finite model ends the run as diverged.
    mutating func apply(_ aggregate: [Float], round r: Int) throws {
        var sharedParameters = [Float]()
        sharedParameters.reserveCapacity(sharedCount)
        for range in shared { sharedParameters.append(contentsOf: global.parameters[range]) }
        optimizer.apply(aggregate, to: &sharedParameters, state: &state)
        var offset = 0
        for range in shared {
            global.parameters.replaceSubrange(range, with: sharedParameters[offset..<(offset + range.count)])
            offset += range.count
        }
        aggregated = true
        if !global.parameters.allSatisfy({ $0.isFinite }) {
            throw TrainingError.diverged(experience: schedule.period(ofRound: r), epoch: r, loss: .nan)
        }
    }
}
