import ContinualCore

/// How a method with one copy of added parameters per route extends the model (`AdapterBlocks`,
/// `LoRABlocks`): its options, the blocks it adds, the attributes it reports.
public protocol RoutedBlocks {
    associatedtype Options: RoutedCopiesOptions
    /// Adds the blocks to `spec`: `copies` copies each, routes `stride` apart.
    static func extend(_ spec: inout MLPSpec, options: Options, copies: Int, stride: Int) throws
    /// The method's own report attributes (the routing state adds its accounting).
    static func attributes(_ options: Options) -> [String: PluginReport.Value]
}

/// A parameter-isolation method with a shared core frozen after an experience and one copy of
/// its blocks per route (`Adapters`, `LoRA`): the lifecycle, routing, checkpoint and report they
/// share; `Blocks` says what is added. The core trains while the experience index ≤
/// `freeze_core_after`; afterwards only the current route's blocks (and its head on multi-head
/// models) train. Test-time routing: see `RoutingMode`.
public struct RoutedCopies<Blocks: RoutedBlocks>: PredictionOverride {
    public typealias Options = Blocks.Options
    public let options: Options
    var state: RoutedIsolation

    public init(options: Options) {
        self.options = options
        state = RoutedIsolation(options)
    }

    public var name: String { Options.typeName }

    /// Prepares the routing state and extends the model once (a second method adding blocks is
    /// refused), its new blocks initialised from the method's own seeded stream.
    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        let kind = Options.typeName
        try state.prepare(context: context)
        guard !model.spec.isExtended else { throw TrainingError.invalid("\(kind): the model already has adapters or LoRA blocks") }
        let (copies, stride) = state.extensionLayout(experiences: context.experienceCount)
        var spec = model.spec
        try Blocks.extend(&spec, options: options, copies: copies, stride: stride)
        if let message = spec.validationError() { throw TrainingError.invalid("\(kind): \(message)") }
        var rng = context.randomSource(kind)
        model = MLP(extending: model, to: spec, rng: &rng)
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        state.beforeExperience(model: &model, context: context)
    }

    public mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        state.adjustTrainingSet(&samples, context: context)
    }

    public mutating func predictions(model: MLP, samples: Samples, experienceIndex: Int,
                                     workspace: Workspace) -> Predictions? {
        state.predictions(model: model, samples: samples, experienceIndex: experienceIndex, workspace: workspace)
    }

    public func report() -> PluginReport {
        var report = PluginReport(attributes: Blocks.attributes(options))
        state.report(into: &report)
        return report
    }

    public func checkpointState() -> PluginState { state.checkpointState() }
    /// The added parameters are part of the model (counted in its bytes); routing needs no storage.
    public var resources: PluginResources { .none }
    public mutating func restore(from saved: PluginState) throws { try state.restore(from: saved) }
}
