/// Capability: a loss term on the batch's outputs (distillation in LwF and iCaRL, logit replay in
/// DER), added to the task loss before the single backward pass.
///
/// Called every step after the forward pass and the task loss, in list order (step 4 of the order
/// stated on `StrategyPlugin`), once per forward pass: once per step, or once per route on a
/// multi-head batch that mixes routes. The term adds its gradient with respect to the logits into
/// `input.logitGradient` (already holding the task loss's), so one backward pass serves every
/// term. With zero strength the method must return 0 and leave the logit gradient untouched.
public protocol BatchLossTerm: StrategyPlugin {
    /// Adds the term's logit gradient and returns its value as a share of the batch-mean loss
    /// (Σ over `input.rows` of `input.scale` × the row's term).
    mutating func addBatchLoss(_ input: BatchLossInput) -> Double
}

/// What a `BatchLossTerm` sees of one forward pass.
///
/// Pointers are valid only during the call. A plugin that needs another network's outputs (the
/// previous model in LwF) must run it on a `Workspace` of its own: the loop's workspace holds the
/// activations of the pending backward pass.
public struct BatchLossInput {
    /// The whole batch: own rows first (`batch.ownCount`), then rows plugins appended.
    public let batch: Batch
    /// The batch rows this forward pass covers, in the order of `logits`' rows.
    public let rows: ArraySlice<Int>
    /// Route (head / adapter copy) of this pass.
    public let route: Int
    /// The model's logits, `rows.count × logitCount`, row-major (pre-activation of the head).
    public let logits: UnsafePointer<Float>
    /// ∂(batch-mean loss)/∂logits, same shape: add the term's gradient here.
    public let logitGradient: UnsafeMutablePointer<Float>
    /// Logits per row (1 for a binary head, k for k classes).
    public let logitCount: Int
    /// Weight of one row in the batch mean (1 / batch.count).
    public let scale: Float
    /// The model being trained (read-only; its parameters are those of the forward pass).
    public let model: MLP
    /// Index of the experience being trained.
    public let experienceIndex: Int
    /// The classes the loop's softmax covers in this experience (`training.active_outputs`
    /// "seen"); nil = every class. A term that replaces the task loss on some rows (ER-ACE,
    /// iCaRL) needs it to remove exactly the loop's gradient, scale · (softmax over these − onehot).
    public let activeClasses: [Bool]?
    /// ∂(batch-mean loss)/∂θ of this pass, `model.parameterCount` values, into which the loop's
    /// single backward pass will *add* the logits' share: a term on something other than the
    /// logits (ER-AML's metric loss on the penultimate features) runs its own forward and backward
    /// passes on its own `Workspace` and adds its gradient here. nil under mixed precision (the
    /// loop's gradient is then formed in the low-precision format): such a term must refuse it.
    public let parameterGradient: UnsafeMutablePointer<Float>?

    public init(batch: Batch, rows: ArraySlice<Int>, route: Int, logits: UnsafePointer<Float>,
                logitGradient: UnsafeMutablePointer<Float>, logitCount: Int, scale: Float, model: MLP,
                experienceIndex: Int, activeClasses: [Bool]? = nil, parameterGradient: UnsafeMutablePointer<Float>? = nil) {
        self.parameterGradient = parameterGradient
        self.activeClasses = activeClasses
        self.batch = batch
        self.rows = rows
        self.route = route
        self.logits = logits
        self.logitGradient = logitGradient
        self.logitCount = logitCount
        self.scale = scale
        self.model = model
        self.experienceIndex = experienceIndex
    }

    /// Features of the pass's `k`-th row (a row of `batch`).
    public func features(_ k: Int) -> ArraySlice<Float> { batch.row(rows[rows.startIndex + k]) }
}
