import ContinualCore

/// A federated local round that runs its own loop instead of the strategy's: pFedMe's bi-level
/// steps (`PFedMeRound`) and Per-FedAvg's meta-steps (`PerFedAvgRound`). What differs between them
/// is how many steps a round over n samples takes and what a step does; the round's record is
/// the same.
public protocol OwnLoopRound: Sendable {
    /// Steps of a round over `samples` rows: `maxSteps` if given, else from the `epochs` passes'
    /// batches of `batchSize`.
    func steps(samples: Int, batchSize: Int, epochs: Int, maxSteps: Int?) -> Int
    /// Trains `model` for `steps` steps on `data` with batches of `batchSize` (`BatchDraw`, orders
    /// from `shuffle`); `recordOrder` keeps the batches' rows in the record (a traced round).
    func train(_ model: inout MLP, on data: Samples, batchSize: Int, steps: Int, shuffle: inout RandomSource,
               recordOrder: Bool) -> OwnLoopRecord
}

extension OwnLoopRound {
    /// `train` without recording the batch order.
    public func train(_ model: inout MLP, on data: Samples, batchSize: Int, steps: Int, shuffle: inout RandomSource) -> OwnLoopRecord {
        train(&model, on: data, batchSize: batchSize, steps: steps, shuffle: &shuffle, recordOrder: false)
    }
}

/// What an own-loop round did: rows passed forward and backward, steps, and the mean of the
/// losses the method reports (pFedMe: f(θ; D) at each step's last inner step; Per-FedAvg: the
/// outer losses f(w′; D′)).
public struct OwnLoopRecord: Sendable, Equatable {
    public var rows = 0
    public var steps = 0
    /// Mini-batch gradient evaluations, each with the update it feeds (pFedMe: K per step;
    /// Per-FedAvg: 2 per first-order step, 4 per Hessian-free step): the energy model's steps.
    public var gradientSteps = 0
    public var meanLoss = Double.nan
    /// The rows of every batch the steps drew, in order (only when asked: `recordOrder`).
    public var visited: [Int] = []
    public init() {}
}
