import ContinualCore

/// BitFit (Zaken et al. 2021): the whole network trains up to `freeze_core_after`, then only
/// the biases train — plus, on a multi-head model, the current experience's head (weights and
/// bias), as BitFit trains the task-specific classifier.
///
/// A PEFT baseline expressed purely through the trainable mask; the model is unchanged.
public struct BitFit: MaskedScheduleStrategy {
    public var name: String { Options.typeName }
    public let options: Options
    var schedule: MaskedSchedule

    public init(options: Options) {
        self.options = options
        schedule = MaskedSchedule(freezeCoreAfter: options.freezeCoreAfter,
                                  afterFreeze: .init(sharedBiases: true, routedHeads: true))
    }

    /// `{"type": "bitfit", "freeze_core_after": 0}`
    public struct Options: PluginOptions {
        public static let typeName = "bitfit"
        public static let summary = "only biases train after the first experience(s) (Zaken et al. 2021)"
        /// Last experience on which every parameter trains (-1: only biases ever train).
        public var freezeCoreAfter: Int = 0
        public init() {}
        public init(from decoder: any Decoder) throws { freezeCoreAfter = try FreezeCoreOption.decode(from: decoder) }
        public func encode(to encoder: any Encoder) throws { try FreezeCoreOption.encode(freezeCoreAfter, to: encoder) }
        public func makePlugin() -> any StrategyPlugin { BitFit(options: self) }
    }
}
