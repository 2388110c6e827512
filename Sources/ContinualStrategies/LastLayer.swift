import ContinualCore

/// Last-layer fine-tuning: the whole network trains up to `freeze_core_after`, then only the
/// output layer (on a multi-head model: the current experience's head) trains.
/// `{"type": "last_layer", "freeze_core_after": 0}`.
public typealias LastLayer = FrozenCoreFineTuning<LastLayerPart>

/// Last-layer fine-tuning's part: the output layer, or the current head.
public enum LastLayerPart: FrozenCorePart {
    public static let typeName = "last_layer"
    public static let summary = "only the output layer trains after the first experience(s)"
    public static var afterFreeze: TrainableMask.Parts { .init(sharedOutputLayer: true, routedHeads: true) }
}
