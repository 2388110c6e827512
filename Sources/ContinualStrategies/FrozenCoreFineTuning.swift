import ContinualCore

/// What a mask-only PEFT baseline trains once its core is frozen, and what it is called:
/// `BitFitPart`, `LastLayerPart`.
public protocol FrozenCorePart: Sendable {
    static var typeName: String { get }
    static var summary: String { get }
    /// The parts that train after `freeze_core_after`.
    static var afterFreeze: TrainableMask.Parts { get }
}

/// A PEFT baseline expressed purely through the trainable mask (`BitFit`, `LastLayer`): the
/// whole network trains up to `freeze_core_after` (exactly like naive fine-tuning), then only
/// `Part.afterFreeze`. The model is unchanged; its whole behaviour is its `MaskedSchedule`, so
/// the two baselines differ in one line each (their part), stated in their own files.
public struct FrozenCoreFineTuning<Part: FrozenCorePart>: MaskedScheduleStrategy {
    public var name: String { Options.typeName }
    public let options: Options
    var schedule: MaskedSchedule

    public init(options: Options) {
        self.options = options
        schedule = MaskedSchedule(freezeCoreAfter: options.freezeCoreAfter, afterFreeze: Part.afterFreeze)
    }

    /// `{"type": NAME, "freeze_core_after": 0}`
    public struct Options: PluginOptions {
        public static var typeName: String { Part.typeName }
        public static var summary: String { Part.summary }
        /// Last experience on which every parameter trains (-1: only the part ever trains).
        public var freezeCoreAfter: Int = 0
        public init() {}
        public init(from decoder: any Decoder) throws { freezeCoreAfter = try FreezeCoreOption.decode(from: decoder) }
        public func encode(to encoder: any Encoder) throws { try FreezeCoreOption.encode(freezeCoreAfter, to: encoder) }
        public func makePlugin() -> any StrategyPlugin { FrozenCoreFineTuning(options: self) }
    }
}
