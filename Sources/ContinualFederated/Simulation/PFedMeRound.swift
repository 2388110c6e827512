import ContinualCore

/// pFedMe's local round and server step (Dinh, Tran and Nguyen 2020, "Personalized Federated
/// Learning with Moreau Envelopes", Algorithm 1). The client's personal model θ solves the
/// Moreau-envelope problem θ̂(w) = argmin_θ f_i(θ) + (λ/2)‖θ − w‖² around its local model w.
/// Each local step draws a fresh batch D from the client's shuffled data and
///
///   K times (inner, `innerSteps`, rate ν = `personalRate`):  θ ← θ − ν·(∇f(θ; D) + λ·(θ − w))
///   then (outer, rate η = `rate`):                           w ← w − η·λ·(w − θ)
///
/// and after the round the server sets w ← (1 − β)·w + β·mean(w_i) (`serverUpdate`: the run's
/// aggregate of the clients' w_i − w, scaled by β; β = 1 is FedAvg's mean).
///
/// Choices made here (the paper leaves them open or its code differs from its text):
/// - θ is warm-started: it starts the round at w (the global model the client received) and each
///   local step's inner loop starts from the previous step's θ, as the authors' code does;
/// - the same batch D serves all K inner steps of a local step (the paper's δ-approximate solve
///   on one mini-batch); gradients are of the mean loss over the batch, in `Float`;
/// - a round takes as many local steps as `local_epochs` passes would have batches (⌈n/b⌉ per
///   pass), or exactly `local_steps` when that is set; the order is reshuffled when used up;
/// - the phone predicts with θ̂(w_g) (`personalise`): K inner steps from the current global model
///   on the mean loss over every training sample it has received so far (full batch). The
///   authors' code evaluates the θ of the client's last local step instead, which needs state per
///   client; this keeps the phone stateless between rounds, as Per-FedAvg's adaptation does.
///
/// Limits (tested): with ν = 1/λ the inner loop lands at θ = w − ∇f(θ′; D)/λ, so the outer step is
/// w ← w − η·∇f(θ′; D) with θ′ − w = O(1/λ): as λ → ∞ a local step is plain SGD at rate η, and
/// pFedMe with β = 1 is FedAvg; the personal model θ̂(w) → w.
public struct PFedMeRound: Sendable, OwnLoopRound {
    /// λ > 0: the strength of the pull between the personal and the local model.
    public var lambda: Float
    /// K ≥ 1: inner gradient steps per local step.
    public var innerSteps: Int
    /// ν: the inner (personal) step size.
    public var personalRate: Float
    /// η: the local model's step size (the run's SGD learning rate).
    public var rate: Float

    public init(lambda: Float, innerSteps: Int, personalRate: Float, rate: Float) {
        precondition(lambda > 0 && innerSteps >= 1, "pFedMe needs lambda > 0 and inner steps ≥ 1")
        self.lambda = lambda
        self.innerSteps = innerSteps
        self.personalRate = personalRate
        self.rate = rate
    }


    /// Local steps of a round over `samples` rows: `maxSteps` if given, else one per batch of the
    /// `epochs` passes (at least 1).
    public func steps(samples n: Int, batchSize b: Int, epochs: Int, maxSteps: Int?) -> Int {
        if let m = maxSteps { return m }
        return max(1, epochs * ((n + b - 1) / b))
    }

    /// K inner steps on `rows` of `data` from `theta` towards the local model `w`; returns the
    /// loss of the last inner step's gradient evaluation.
    func solve<C: Collection<Int>>(_ theta: inout MLP, around w: [Float], data: Samples, rows: C,
                                   workspace ws: Workspace) -> Double {
        var loss = Double.nan
        for _ in 0..<innerSteps {
            let (g, l) = PerFedAvgRound.meanGradient(theta, data, rows: rows, workspace: ws)
            loss = l
            for i in w.indices {
                let t = theta.parameters[i]
                theta.parameters[i] = t - personalRate * (g[i] + lambda * (t - w[i]))
            }
        }
        return loss
    }

    /// Trains the local model `model` (w) for `steps` local steps on `data` with batches of
    /// `batchSize`; the personal model starts at w and is dropped at the end of the round.
    public func train(_ model: inout MLP, on data: Samples, batchSize: Int, steps: Int,
                      shuffle: inout RandomSource, recordOrder: Bool) -> OwnLoopRecord {
        var record = OwnLoopRecord()
        let n = data.count
        guard n > 0, steps > 0 else { return record }
        let ws = model.makeWorkspace(capacity: batchSize)
        var draw = BatchDraw(count: n, batchSize: batchSize, shuffle: &shuffle, records: recordOrder)
        var theta = model
        var lossSum = 0.0
        let pull = rate * lambda
        for _ in 0..<steps {
            let batch = draw.next(&shuffle)
            let w = model.parameters
            lossSum += solve(&theta, around: w, data: data, rows: batch, workspace: ws)
            for i in w.indices { model.parameters[i] = w[i] - pull * (w[i] - theta.parameters[i]) }
            record.rows += innerSteps * batch.count
            record.steps += 1
            record.gradientSteps += innerSteps
        }
        record.meanLoss = lossSum / Double(steps)
        record.visited = draw.visited
        return record
    }

    /// The personal model θ̂(w): K inner steps from w towards w on the mean loss over all of
    /// `data` (w unchanged for empty data).
    public func personalise(_ model: MLP, on data: Samples, workspace: Workspace) -> MLP {
        guard data.count > 0 else { return model }
        var theta = model
        _ = solve(&theta, around: model.parameters, data: data, rows: 0..<data.count, workspace: workspace)
        return theta
    }

    /// The server's update from the run's aggregate of the clients' w_i − w: β·aggregate, so that
    /// w + update = (1 − β)·w + β·mean(w_i). β = 1 returns `aggregate` itself (bit for bit).
    public static func serverUpdate(_ aggregate: [Float], beta: Float) -> [Float] {
        beta == 1 ? aggregate : aggregate.map { beta * $0 }
    }
}
