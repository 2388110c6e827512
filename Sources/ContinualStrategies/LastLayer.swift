import ContinualCore

/// Last-layer fine-tuning: the whole network trains up to `freeze_core_after`, then only the
/// output layer (on a multi-head model: the current experience's head) trains.
///
/// A PEFT baseline expressed purely through the trainable mask; the model is unchanged.
public struct LastLayer: MaskedScheduleStrategy {
    public var name: String { Options.typeName }
    public let options: Options
    var schedule: MaskedSchedule

    public init(options: Options) {
        self.options = options
        schedule = MaskedSchedule(freezeCoreAfter: options.freezeCoreAfter,
                                  afterFreeze: .init(sharedOutputLayer: true, routedHeads: true))
    }

    /// `{"type": "last_layer", "freeze_core_after": 0}`
    public struct Options: PluginOptions {
        public static let typeName = "last_layer"
        public static let summary = "only the output layer trains after the first experience(s)"
        /// Last experience on which every parameter trains (-1: only the output layer ever trains).
        public var freezeCoreAfter: Int = 0
        public init() {}
        public init(from decoder: any Decoder) throws { freezeCoreAfter = try FreezeCoreOption.decode(from: decoder) }
        public func encode(to encoder: any Encoder) throws { try FreezeCoreOption.encode(freezeCoreAfter, to: encoder) }
        public func makePlugin() -> any StrategyPlugin { LastLayer(options: self) }
    }
}
