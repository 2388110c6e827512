/// What a plugin stores and costs beyond the plain model and optimizer, reported as typed values
/// that the cost model and the peak-memory figures read directly.
///
/// Conventions: bytes are what the plugin keeps between steps on the device (not scratch space
/// reallocated per call); FLOPs follow `MLP.flopsPerPrediction` / `flopsPerTrainingSample`
/// (a multiply-add is 2 FLOPs). Extra rows per batch are rows the plugin adds to every training
/// batch (replay), whose forward and backward the cost model already charges per sample; their
/// activations count towards peak memory.
public struct PluginResources: Sendable, Equatable, Hashable {
    /// Bytes of stored samples (features, labels, routes, stored logits), e.g. a replay buffer.
    public var storedSampleBytes: Int
    /// Bytes of any other state kept between steps (importance vectors, anchors, a copy of the
    /// previous model, per-parameter accumulators).
    public var stateBytes: Int
    /// Rows appended to every training batch (replayed samples).
    public var extraRowsPerBatch: Int
    /// FLOPs added to every optimizer step (penalty terms, distillation forwards, projections).
    public var extraFLOPsPerStep: Int
    /// FLOPs added once per experience (a Fisher or importance pass, core-set selection).
    public var extraFLOPsPerExperience: Int
    /// Trainable parameters the plugin owns outside the network (`ParameterBlockOwner`), updated
    /// by the run's optimizer: the loop charges the optimizer's FLOPs for them on every step.
    /// Their values belong in `stateBytes`.
    public var ownedParameters: Int

    public init(storedSampleBytes: Int = 0, stateBytes: Int = 0, extraRowsPerBatch: Int = 0,
                extraFLOPsPerStep: Int = 0, extraFLOPsPerExperience: Int = 0, ownedParameters: Int = 0) {
        self.ownedParameters = ownedParameters
        self.storedSampleBytes = storedSampleBytes
        self.stateBytes = stateBytes
        self.extraRowsPerBatch = extraRowsPerBatch
        self.extraFLOPsPerStep = extraFLOPsPerStep
        self.extraFLOPsPerExperience = extraFLOPsPerExperience
    }

    /// No storage, no extra work (naive fine-tuning).
    public static let none = PluginResources()

    /// Sum over a composed strategy.
    public static func + (a: PluginResources, b: PluginResources) -> PluginResources {
        PluginResources(storedSampleBytes: a.storedSampleBytes + b.storedSampleBytes,
                        stateBytes: a.stateBytes + b.stateBytes,
                        extraRowsPerBatch: a.extraRowsPerBatch + b.extraRowsPerBatch,
                        extraFLOPsPerStep: a.extraFLOPsPerStep + b.extraFLOPsPerStep,
                        extraFLOPsPerExperience: a.extraFLOPsPerExperience + b.extraFLOPsPerExperience,
                        ownedParameters: a.ownedParameters + b.ownedParameters)
    }

    /// Bytes of a float32 vector of `count` values (the common case for state vectors).
    public static func floatBytes(_ count: Int) -> Int { 4 * count }
}
