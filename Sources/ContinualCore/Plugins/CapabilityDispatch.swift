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

    mutating func callDidComputeGradient(model: inout MLP) {
        guard let type = Self.self as? any GradientPointTransform.Type else { return }
        withUnsafeMutablePointer(to: &self) { Self.did(type, UnsafeMutableRawPointer($0), &model) }
    }
    private static func did<T: GradientPointTransform>(_: T.Type, _ p: UnsafeMutableRawPointer, _ model: inout MLP) {
        p.assumingMemoryBound(to: T.self).pointee.didComputeGradient(model: &model)
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

    init() {}

    init(_ plugins: [any StrategyPlugin]) {
        for (k, p) in plugins.enumerated() {
            if p is any ParameterPenalty { penalties.append(k) }
            if p is any BatchLossTerm { batchLosses.append(k) }
            if p is any StepObserver { observers.append(k) }
            if p is any GradientPointTransform { transforms.append(k) }
        }
        adjusters = plugins.indices.compactMap { k in plugins[k].gradientStageIfAdjuster.map { (k, $0) } }
            .sorted { ($0.1, $0.0) < ($1.1, $1.0) }.map(\.0)
    }
}
