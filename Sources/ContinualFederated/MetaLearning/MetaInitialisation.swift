import ContinualCore

/// Meta-learns an initialisation θ from which a few SGD steps on a new user's first samples give
/// a good personal model (few-shot personalisation, issue 32 item 4).
///
/// One outer step takes a meta-batch of tasks (a task = one simulated user in one phase of their
/// behaviour). For each task i the inner loop starts at φᵢ = θ and takes one plain SGD step of
/// `innerRate` α on the mean loss of each of the task's `inner` batches in order. Then:
///
/// - **Reptile** (Nichol, Achiam and Schulman 2018, "On First-Order Meta-Learning Algorithms",
///   Algorithm 2, the batched version): θ ← θ + ε·(1/n)·Σᵢ (φᵢ − θ), ε = `outerRate`.
/// - **FOMAML** (Finn, Abbeel and Levine 2017, first-order approximation of MAML, §5.2):
///   θ ← θ − β·(1/n)·Σᵢ ∇L_query,i(φᵢ), β = `outerRate`: the query loss's gradient taken at the
///   adapted parameters and applied to θ (the second-order term dropped).
/// - **FedAvg** (McMahan et al. 2017) as the comparison the issue asks for: θ ← (1/n)·Σᵢ φᵢ, equal
///   client weights and server rate 1. That is batched Reptile with ε = 1 (Nichol et al. note the
///   relation); what differs is the data the local steps see (the executor gives FedAvg fresh
///   mini-batches of the user's whole data, Reptile the same few-shot support set every step).
///
/// Choices made here (the papers leave them open or use Adam): the outer update is plain SGD with
/// a constant rate (no Adam, no annealing of ε); gradients are of the mean loss over a batch, in
/// `Float`; the sum over tasks is accumulated in task order, so results are bit-identical for a
/// given task sequence.
public struct MetaInitialisation: Sendable, Equatable {
    public enum Method: String, Sendable, CaseIterable, Codable {
        case reptile, fomaml, fedavg
    }

    /// One task of an outer step: the inner loop's batches (one SGD step each, in order) and, for
    /// FOMAML, the query set on which the outer gradient is taken.
    public struct Task: Sendable {
        public var inner: [Samples]
        public var query: Samples
        public init(inner: [Samples], query: Samples) {
            self.inner = inner
            self.query = query
        }
    }

    public var method: Method
    /// α: the inner loop's SGD rate.
    public var innerRate: Float
    /// ε (Reptile) or β (FOMAML); FedAvg's server rate is 1 whatever this says.
    public var outerRate: Float

    public init(method: Method, innerRate: Float, outerRate: Float) {
        self.method = method
        self.innerRate = innerRate
        self.outerRate = outerRate
    }

    /// What an outer step did: rows passed forward and backward, and the mean over tasks of the
    /// loss after adaptation (query loss for FOMAML, the last inner batch's loss otherwise).
    public struct Record: Sendable, Equatable {
        public var rows = 0
        public var meanLoss = Double.nan
    }

    /// `steps` full-batch SGD steps of `rate` on the mean loss over `data`, from `model`: the
    /// personalisation of a held-out user, and the inner loop on a repeated support set.
    public static func adapt(_ model: MLP, on data: Samples, steps: Int, rate: Float, workspace: Workspace) -> MLP {
        var m = model
        guard data.count > 0 else { return m }
        for _ in 0..<steps { _ = sgdStep(&m, on: data, rate: rate, workspace: workspace) }
        return m
    }

    /// One SGD step on the mean loss over all of `data`; returns that loss (before the step).
    @discardableResult
    static func sgdStep(_ model: inout MLP, on data: Samples, rate: Float, workspace: Workspace) -> Double {
        let (g, loss) = PerFedAvgRound.meanGradient(model, data, rows: 0..<data.count, workspace: workspace)
        for i in g.indices { model.parameters[i] -= rate * g[i] }
        return loss
    }

    /// The inner loop from `theta` over `task.inner`; returns φ and the last batch's loss at φ's
    /// predecessor (the loss of the last step).
    public func innerLoop(_ theta: MLP, task: Task, workspace: Workspace) -> (MLP, Double) {
        var phi = theta
        var loss = Double.nan
        for batch in task.inner where batch.count > 0 {
            loss = Self.sgdStep(&phi, on: batch, rate: innerRate, workspace: workspace)
        }
        return (phi, loss)
    }

    /// One outer step of `method` over `tasks`, in place on `theta`.
    @discardableResult
    public func outerStep(_ theta: inout MLP, tasks: [Task], workspace: Workspace) -> Record {
        var record = Record()
        guard !tasks.isEmpty else { return record }
        let n = Float(tasks.count)
        var direction = [Float](repeating: 0, count: theta.parameterCount)
        var lossSum = 0.0
        for task in tasks {
            let (phi, innerLoss) = innerLoop(theta, task: task, workspace: workspace)
            record.rows += task.inner.reduce(0) { $0 + $1.count }
            switch method {
            case .reptile, .fedavg:
                for i in direction.indices { direction[i] += (phi.parameters[i] - theta.parameters[i]) / n }
                lossSum += innerLoss
            case .fomaml:
                let (g, loss) = PerFedAvgRound.meanGradient(phi, task.query, rows: 0..<task.query.count, workspace: workspace)
                for i in direction.indices { direction[i] += g[i] / n }
                record.rows += task.query.count
                lossSum += loss
            }
        }
        switch method {
        case .reptile:
            for i in direction.indices { theta.parameters[i] += outerRate * direction[i] }
        case .fedavg:
            for i in direction.indices { theta.parameters[i] += direction[i] }
        case .fomaml:
            for i in direction.indices { theta.parameters[i] -= outerRate * direction[i] }
        }
        record.meanLoss = lossSum / Double(tasks.count)
        return record
    }
}
