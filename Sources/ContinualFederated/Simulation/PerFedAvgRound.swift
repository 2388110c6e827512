import ContinualCore

/// Per-FedAvg's local round (Fallah, Mokhtari and Ozdaglar 2020, "Personalized Federated Learning
/// with Theoretical Guarantees: A Model-Agnostic Meta-Learning Approach", Algorithm 1): the
/// clients train the meta-model w whose one-step adaptation α·∇f suits each of them. Each local
/// step draws fresh batches D, D′ (and D″) from the client's shuffled data:
///
///   w′ = w − α·∇f(w; D)                                  (the inner, personalising step)
///   first-order (FO):   w ← w − β·∇f(w′; D′)
///   Hessian-free (HF):  w ← w − β·(∇f(w′; D′) − α·d),
///                       d = [∇f(w + δ·u; D″) − ∇f(w − δ·u; D″)] / (2δ),  u = ∇f(w′; D′)
///
/// (d is the paper's finite-difference Hessian-vector product ∇²f(w; D″)·u.) β is the run's SGD
/// learning rate, α `alpha`. The server averages the clients' w − w_g as FedAvg does; a phone
/// predicts with its adapted model w_g − α·∇f(w_g; its data), one step from the global model
/// (`adapt`).
///
/// Choices made here: a round takes as many batches as `local_epochs` passes would (⌈n/b⌉ per
/// pass), so `batches / 2` FO steps or `batches / 3` HF steps (at least 1), or exactly
/// `local_steps` steps when that is set; the order is reshuffled whenever it is used up; the
/// adaptation at prediction time is one full-batch step on every training sample the phone
/// has received so far. Gradients are of the mean loss over the batch, in `Float`.
public struct PerFedAvgRound: Sendable, OwnLoopRound {
    public enum Variant: Sendable, Equatable {
        case firstOrder
        case hessianFree(delta: Float)
        /// Batches one step draws.
        public var batchesPerStep: Int { self == .firstOrder ? 2 : 3 }
    }
    /// α: the inner (personalising) step size.
    public var alpha: Float
    /// β: the outer (meta) step size.
    public var beta: Float
    public var variant: Variant

    public init(alpha: Float, beta: Float, variant: Variant) {
        self.alpha = alpha
        self.beta = beta
        self.variant = variant
    }


    /// Meta-steps of a round over `samples` rows: `maxSteps` if given, else one per
    /// `batchesPerStep` of the `epochs` passes' batches (at least 1).
    public func steps(samples n: Int, batchSize b: Int, epochs: Int, maxSteps: Int?) -> Int {
        if let m = maxSteps { return m }
        return max(1, epochs * ((n + b - 1) / b) / variant.batchesPerStep)
    }

    /// Trains `model` (w) for `steps` meta-steps on `data` with batches of `batchSize`.
    public func train(_ model: inout MLP, on data: Samples, batchSize: Int, steps: Int,
                      shuffle: inout RandomSource, recordOrder: Bool) -> OwnLoopRecord {
        var record = OwnLoopRecord()
        let n = data.count
        guard n > 0, steps > 0 else { return record }
        let ws = model.makeWorkspace(capacity: batchSize)
        var draw = BatchDraw(count: n, batchSize: batchSize, shuffle: &shuffle, records: recordOrder)
        func nextBatch() -> ArraySlice<Int> { draw.next(&shuffle) }
        var lossSum = 0.0
        for _ in 0..<steps {
            let d1 = nextBatch(), d2 = nextBatch()
            let w = model.parameters
            let (g1, _) = Self.meanGradient(model, data, rows: d1, workspace: ws)
            var inner = model
            for i in w.indices { inner.parameters[i] = w[i] - alpha * g1[i] }
            var (u, loss) = Self.meanGradient(inner, data, rows: d2, workspace: ws)
            lossSum += loss
            record.rows += d1.count + d2.count
            if case .hessianFree(let delta) = variant {
                let d3 = nextBatch()
                var plus = model, minus = model
                for i in w.indices {
                    plus.parameters[i] = w[i] + delta * u[i]
                    minus.parameters[i] = w[i] - delta * u[i]
                }
                let (gp, _) = Self.meanGradient(plus, data, rows: d3, workspace: ws)
                let (gm, _) = Self.meanGradient(minus, data, rows: d3, workspace: ws)
                for i in u.indices { u[i] -= alpha * (gp[i] - gm[i]) / (2 * delta) }
                record.rows += 2 * d3.count
            }
            for i in w.indices { model.parameters[i] = w[i] - beta * u[i] }
            record.steps += 1
            record.gradientSteps += variant == .firstOrder ? 2 : 4
        }
        record.meanLoss = lossSum / Double(steps)
        record.visited = draw.visited
        return record
    }

    /// The personalised model: one step of α on the mean loss over all of `data` (w unchanged
    /// for empty data).
    public func adapt(_ model: MLP, on data: Samples, workspace: Workspace) -> MLP {
        guard data.count > 0 else { return model }
        let (g, _) = Self.meanGradient(model, data, rows: 0..<data.count, workspace: workspace)
        var adapted = model
        for i in g.indices { adapted.parameters[i] -= alpha * g[i] }
        return adapted
    }

    /// ∇ of the mean loss over `rows` of `data` at `model`, and that mean loss, in chunks of
    /// the workspace's capacity (each chunk's gradient added with scale 1/|rows|).
    public static func meanGradient<C: Collection<Int>>(_ model: MLP, _ data: Samples, rows: C,
                                                         workspace ws: Workspace) -> ([Float], Double) {
        var gradient = [Float](repeating: 0, count: model.parameterCount)
        let count = rows.count
        guard count > 0 else { return (gradient, .nan) }
        let d = data.dimension, chunk = max(1, ws.capacity)
        let scale = 1 / Float(count)
        var features = [Float](), labels = [Int32]()
        features.reserveCapacity(min(chunk, count) * d)
        labels.reserveCapacity(min(chunk, count))
        var loss = 0.0
        var index = rows.startIndex
        while index != rows.endIndex {
            features.removeAll(keepingCapacity: true)
            labels.removeAll(keepingCapacity: true)
            while index != rows.endIndex && labels.count < chunk {
                let r = rows[index]
                features.append(contentsOf: data.features[(r * d)..<((r + 1) * d)])
                labels.append(data.labels[r])
                index = rows.index(after: index)
            }
            let m = labels.count
            loss += features.withUnsafeBufferPointer { x in
                labels.withUnsafeBufferPointer { y in
                    gradient.withUnsafeMutableBufferPointer { g in
                        model.lossAndGradient(features: x.baseAddress!, labels: y.baseAddress!, count: m, route: 0,
                                              scale: scale, workspace: ws, gradient: g.baseAddress!)
                    }
                }
            }
        }
        return (gradient, loss / Double(count))
    }
}
