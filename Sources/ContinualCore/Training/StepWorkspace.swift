/// Every buffer one optimizer step needs, allocated once per experience (no allocation per step
/// on the common path): the gradient, the copies observers need, a copy of the logits for
/// batch-loss terms, the step masks per set of routes, and which plugins take part in which hook.
struct StepWorkspace {
    /// The network's scratch buffers (activations, deltas).
    let network: Workspace
    var gradient: [Float] = []
    /// Copy of the data-loss gradient (only if some plugin observes steps).
    var taskGradient: [Float] = []
    /// Parameters before the step (only if some plugin observes steps).
    var before: [Float] = []
    /// The logits of the current forward pass (only if some plugin adds a batch-loss term).
    var logits: [Float] = []
    /// 0, 1, 2, …: the rows of an unmixed batch, handed to batch-loss terms as a slice.
    var identityRows: [Int] = []
    /// Step masks per set of routes in a batch (see `Trainer.mask`).
    var maskCache: [[Int32]: [Bool]?] = [:]
    var capabilities = PluginCapabilities()
    /// Classes the softmax covers in this experience (nil = all; `TrainingOptions.activeOutputs`).
    var active: [Bool]? = nil
    /// This step's learning rate from the schedule; nil = the optimizer's own rate.
    var learningRate: Float? = nil
    /// Where this step sits (experience, epoch, step), set by the loop before each step.
    var index = StepIndex(experience: 0)
    /// ∂L/∂gate of the current pass (only if a plugin gates hidden units).
    var gateGradient: [Float] = []
    /// Mixed precision: the batch's scaled parameter gradient before it is rounded and unscaled
    /// (`TrainingPrecision`), and whether it overflowed in this step.
    var lowGradient: [Float] = []
    var overflowed = false

    init(network: Workspace) { self.network = network }

    /// Sizes the buffers for `parameterCount` parameters and the plugins' capabilities; called
    /// at the start of every experience (plugins may have grown the model or changed the mask).
    mutating func prepare(parameterCount: Int, plugins: [any StrategyPlugin], rows: Int, logitCount: Int) {
        capabilities = PluginCapabilities(plugins)
        maskCache = [:]
        if gradient.count != parameterCount { gradient = [Float](repeating: 0, count: parameterCount) }
        if !capabilities.observers.isEmpty {
            taskGradient = [Float](repeating: 0, count: parameterCount)
            before = [Float](repeating: 0, count: parameterCount)
        }
        if !capabilities.batchLosses.isEmpty {
            if logits.count < rows * logitCount { logits = [Float](repeating: 0, count: rows * logitCount) }
            if identityRows.count < rows { identityRows = Array(0..<rows) }
        }
    }
}
