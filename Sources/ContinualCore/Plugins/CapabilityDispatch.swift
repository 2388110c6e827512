/// Calls a capability's hook on a plugin stored as `any StrategyPlugin`, in place.
///
/// Casting an existential to another protocol copies the value, and mutating the copy would copy
/// the plugin's arrays (copy-on-write) on every step. These helpers instead open the plugin's
/// concrete type, check its conformance once, and call the hook on the original storage.
extension StrategyPlugin {
    mutating func callAddPenalty(parameters: UnsafeBufferPointer<Float>,
                                 gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        guard let type = Self.self as? any ParameterPenalty.Type else { return 0 }
        return withUnsafeMutablePointer(to: &self) { Self.penalty(type, UnsafeMutableRawPointer($0), parameters, gradient) }
    }
    private static func penalty<T: ParameterPenalty>(_: T.Type, _ p: UnsafeMutableRawPointer,
                                                     _ parameters: UnsafeBufferPointer<Float>,
                                                     _ gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        p.assumingMemoryBound(to: T.self).pointee.addPenalty(parameters: parameters, gradient: gradient)
    }

    mutating func callAddBatchLoss(_ input: BatchLossInput) -> Double {
        guard let type = Self.self as? any BatchLossTerm.Type else { return 0 }
        return withUnsafeMutablePointer(to: &self) { Self.batchLoss(type, UnsafeMutableRawPointer($0), input) }
    }
    private static func batchLoss<T: BatchLossTerm>(_: T.Type, _ p: UnsafeMutableRawPointer, _ input: BatchLossInput) -> Double {
        p.assumingMemoryBound(to: T.self).pointee.addBatchLoss(input)
    }

    mutating func callAdjustGradient(_ gradient: UnsafeMutableBufferPointer<Float>, context: GradientContext) {
        guard let type = Self.self as? any GradientAdjuster.Type else { return }
        withUnsafeMutablePointer(to: &self) { Self.adjust(type, UnsafeMutableRawPointer($0), gradient, context) }
    }
    private static func adjust<T: GradientAdjuster>(_: T.Type, _ p: UnsafeMutableRawPointer,
                                                    _ gradient: UnsafeMutableBufferPointer<Float>, _ context: GradientContext) {
        p.assumingMemoryBound(to: T.self).pointee.adjustGradient(gradient, context: context)
    }

    mutating func callAfterStep(_ step: StepObservation) {
        guard let type = Self.self as? any StepObserver.Type else { return }
        withUnsafeMutablePointer(to: &self) { Self.observe(type, UnsafeMutableRawPointer($0), step) }
    }
    private static func observe<T: StepObserver>(_: T.Type, _ p: UnsafeMutableRawPointer, _ step: StepObservation) {
        p.assumingMemoryBound(to: T.self).pointee.afterStep(step)
    }

    mutating func callWillComputeGradient(model: inout MLP) {
        guard let type = Self.self as? any GradientPointTransform.Type else { return }
        withUnsafeMutablePointer(to: &self) { Self.will(type, UnsafeMutableRawPointer($0), &model) }
    }
    private static func will<T: GradientPointTransform>(_: T.Type, _ p: UnsafeMutableRawPointer, _ model: inout MLP) {
        p.assumingMemoryBound(to: T.self).pointee.willComputeGradient(model: &model)
    }

    mutating func callDidComputeGradient(model: inout MLP, gradient: UnsafeMutableBufferPointer<Float>) {
        guard let type = Self.self as? any GradientPointTransform.Type else { return }
        withUnsafeMutablePointer(to: &self) { Self.did(type, UnsafeMutableRawPointer($0), &model, gradient) }
    }
    private static func did<T: GradientPointTransform>(_: T.Type, _ p: UnsafeMutableRawPointer, _ model: inout MLP,
                                                       _ gradient: UnsafeMutableBufferPointer<Float>) {
        p.assumingMemoryBound(to: T.self).pointee.didComputeGradient(model: &model, gradient: gradient)
    }

    mutating func callGates(route: Int, step: StepIndex) -> UnitGates? {
        guard let type = Self.self as? any ActivationGate.Type else { return nil }
        return withUnsafeMutablePointer(to: &self) { Self.gates(type, UnsafeMutableRawPointer($0), route, step) }
    }
    private static func gates<T: ActivationGate>(_: T.Type, _ p: UnsafeMutableRawPointer, _ route: Int, _ step: StepIndex) -> UnitGates? {
        p.assumingMemoryBound(to: T.self).pointee.gates(route: route, step: step)
    }

    mutating func callDidBackward(gateGradient: UnsafeBufferPointer<Float>, route: Int, step: StepIndex) {
        guard let type = Self.self as? any ActivationGate.Type else { return }
        withUnsafeMutablePointer(to: &self) { Self.didBackward(type, UnsafeMutableRawPointer($0), gateGradient, route, step) }
    }
    private static func didBackward<T: ActivationGate>(_: T.Type, _ p: UnsafeMutableRawPointer, _ g: UnsafeBufferPointer<Float>,
                                                       _ route: Int, _ step: StepIndex) {
        p.assumingMemoryBound(to: T.self).pointee.didBackward(gateGradient: g, route: route, step: step)
    }

    /// Zeroes the block gradient of a `ParameterBlockOwner` (in place).
    mutating func callZeroBlockGradient() {
        guard let type = Self.self as? any ParameterBlockOwner.Type else { return }
        withUnsafeMutablePointer(to: &self) { Self.zeroBlock(type, UnsafeMutableRawPointer($0)) }
    }
    private static func zeroBlock<T: ParameterBlockOwner>(_: T.Type, _ p: UnsafeMutableRawPointer) {
        let plugin = p.assumingMemoryBound(to: T.self)
        if plugin.pointee.parameterBlockGradient.count != plugin.pointee.parameterBlock.count {
            plugin.pointee.parameterBlockGradient = [Float](repeating: 0, count: plugin.pointee.parameterBlock.count)
        } else {
            plugin.pointee.parameterBlockGradient.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        }
    }

    /// Size of a `ParameterBlockOwner`'s block (nil for other plugins).
    var parameterBlockCount: Int? { (self as? any ParameterBlockOwner)?.parameterBlock.count }
    /// Whether a `ParameterBlockOwner`'s block optimizer restarts per experience.
    var restartsBlockOptimizer: Bool { (self as? any ParameterBlockOwner)?.restartsBlockOptimizerPerExperience ?? false }

    /// One step of `optimizer` on a `ParameterBlockOwner`'s block, then its `didUpdateParameterBlock`.
    mutating func callStepBlock(_ optimizer: inout Optimizer, learningRate: Float?) {
        guard let type = Self.self as? any ParameterBlockOwner.Type else { return }
        withUnsafeMutablePointer(to: &self) { Self.stepBlock(type, UnsafeMutableRawPointer($0), &optimizer, learningRate) }
    }
    private static func stepBlock<T: ParameterBlockOwner>(_: T.Type, _ p: UnsafeMutableRawPointer, _ optimizer: inout Optimizer,
                                                          _ learningRate: Float?) {
        let plugin = p.assumingMemoryBound(to: T.self)
        guard !plugin.pointee.parameterBlock.isEmpty else { return }
        plugin.pointee.parameterBlockGradient.withUnsafeBufferPointer { g in
            optimizer.step(parameters: &plugin.pointee.parameterBlock, gradient: g.baseAddress!, trainable: nil,
                           learningRate: learningRate)
        }
        plugin.pointee.didUpdateParameterBlock()
    }

    /// The plugin's predictions if it overrides them (nil otherwise, or if it declines).
    public mutating func overridingPredictions(model: MLP, samples: Samples, experienceIndex: Int,
                                               workspace: Workspace) -> Predictions? {
        guard let type = Self.self as? any PredictionOverride.Type else { return nil }
        return withUnsafeMutablePointer(to: &self) {
            Self.predict(type, UnsafeMutableRawPointer($0), model, samples, experienceIndex, workspace)
        }
    }
    private static func predict<T: PredictionOverride>(_: T.Type, _ p: UnsafeMutableRawPointer, _ model: MLP,
                                                       _ samples: Samples, _ j: Int, _ ws: Workspace) -> Predictions? {
        p.assumingMemoryBound(to: T.self).pointee.predictions(model: model, samples: samples, experienceIndex: j, workspace: ws)
    }

    /// The plugin's gradient stage if it is a `GradientAdjuster`.
    var gradientStageIfAdjuster: GradientStage? { (self as? any GradientAdjuster)?.gradientStage }
}

/// Which plugins of a strategy adopt each per-step capability (indices in list order; adjusters
/// sorted by stage). Computed once per experience, after `beforeExperience`.
struct PluginCapabilities {
    var penalties: [Int] = []
    var batchLosses: [Int] = []
    var adjusters: [Int] = []
    var observers: [Int] = []
    var transforms: [Int] = []
    /// The one plugin that gates hidden units (`ActivationGate`), if any.
    var gate: Int? = nil
    var blockOwners: [Int] = []
    /// The one plugin that grows columns beside the model (`ColumnNetwork`), if any.
    var column: Int? = nil

    init() {}

    init(_ plugins: [any StrategyPlugin]) {
        for (k, p) in plugins.enumerated() {
            if p is any ParameterPenalty { penalties.append(k) }
            if p is any BatchLossTerm { batchLosses.append(k) }
            if p is any StepObserver { observers.append(k) }
            if p is any GradientPointTransform { transforms.append(k) }
            if p is any ActivationGate, gate == nil { gate = k }
            if p is any ParameterBlockOwner { blockOwners.append(k) }
            if p is any ColumnNetwork, column == nil { column = k }
        }
        adjusters = plugins.indices.compactMap { k in plugins[k].gradientStageIfAdjuster.map { (k, $0) } }
            .sorted { ($0.1, $0.0) < ($1.1, $1.0) }.map(\.0)
    }
}
