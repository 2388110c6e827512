extension MLP {
    /// The hidden layers as a network of their own whose "logits" are the last hidden layer's
    /// pre-activations (apply `spec.activation` for the penultimate features); its parameters
    /// are a prefix of this model's, so its backward pass adds into the model's gradient. For
    /// terms on the penultimate features that run their own forward and backward passes
    /// (ER-AML's metric loss, MOON's contrastive term).
    ///
    /// Throws `TrainingError`, naming `method`, for a model without a hidden layer, with adapters
    /// or LoRA blocks (their parameters are not such a prefix), or trained in mixed precision (the
    /// term adds a float32 gradient).
    public func penultimateNetwork(for method: String, training: TrainingOptions) throws -> MLP {
        guard !spec.hidden.isEmpty else {
            throw TrainingError.invalidSetting(path: ".model.hidden", message: "\(method) reads penultimate features: the model needs a hidden layer (model.hidden is empty)")
        }
        guard !spec.isExtended else {
            throw TrainingError.invalid("\(method) reads the plain network's penultimate features; the model has adapters or LoRA blocks")
        }
        guard !training.precision.isMixed else {
            throw TrainingError.invalidSetting(path: ".training.precision", message: "\(method) adds its own float32 gradient; use float32 training")
        }
        var hiddenSpec = spec
        hiddenSpec.hidden = Array(spec.hidden.dropLast())
        hiddenSpec.head = .multiclass(classes: spec.hidden.last!)
        hiddenSpec.heads = 1
        return MLP(spec: hiddenSpec, parameters: Array(parameters.prefix(hiddenSpec.parameterCount)))
    }
}
