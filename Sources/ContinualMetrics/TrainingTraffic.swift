import ContinualCore

/// Analytic FLOPs and bytes of memory traffic of training and prediction, from the model's layer
/// sizes and the optimizer (float32 = 4 B). Linear in rows and steps, so a whole experience's
/// cost follows exactly from its processed rows and optimizer steps.
///
/// Bytes of one optimizer step over a batch of B rows (P_r = parameters one route uses,
/// P_t = trainable parameters, s = optimizer state floats per parameter, A = Σ layer widths
/// including the input):
/// - forward reads the weights: 4·P_r; backward reads them again (for ∂x): 4·P_r
/// - backward writes the gradient: 4·P_t
/// - optimizer reads θ and g, writes θ: 3·4·P_t; reads and writes its state: 2·S, with S its
///   state bytes for P_t parameters (4·s·P_t for SGD and Adam; Adafactor and 8-bit Adam:
///   `OptimizerSpec.stateBytes` of the whole model scaled by P_t / P)
/// - activations: forward writes B·A floats, backward reads them: 2·4·B·A
/// Caches are ignored (every access counts as DRAM traffic: an upper bound for tiny models).
public struct TrainingTraffic: Sendable, Equatable {
    public var parametersPerRoute: Int
    public var trainableParameters: Int
    public var stateFloatsPerParameter: Int
    /// Σ layer widths including the input (floats per row kept for backward).
    public var activationWidth: Int
    public var flopsPerTrainingSample: Int
    public var flopsPerOptimizerStep: Int
    public var flopsPerPrediction: Int
    /// The optimizer's FLOPs per trainable parameter and step.
    public var optimizerFLOPsPerParameter: Int
    /// Bytes of optimizer state of the trainable parameters (S above).
    public var optimizerStateBytes: Int
    /// The optimizer's state bytes for the whole model and the model's parameter count (to scale
    /// S when fewer parameters train).
    var wholeModelStateBytes: Int
    var modelParameters: Int
    /// True for SGD and Adam (state = 4·s bytes per parameter, exact for any count).
    var statePerParameter: Bool
    /// The format of weights, gradients and activations in training (`TrainingPrecision`;
    /// default float32). See `withPrecision`.
    public private(set) var precision: NumericFormat = .float32

    public init(model: MLP, optimizer: OptimizerSpec) {
        let cost = CostModel(model: model, optimizer: Optimizer(spec: optimizer, parameterCount: 0))
        optimizerFLOPsPerParameter = Optimizer(spec: optimizer, parameterCount: 0).flopsPerParameter
        parametersPerRoute = model.layers.reduce(0) { $0 + $1.inputs * $1.outputs + $1.outputs }
        trainableParameters = model.trainableCount
        stateFloatsPerParameter = optimizer.stateFloatsPerParameter
        wholeModelStateBytes = optimizer.stateBytes(parameterCount: model.parameterCount, matrices: model.weightMatrices)
        modelParameters = model.parameterCount
        switch optimizer {
        case .sgd, .adam, .adamw: statePerParameter = true
        case .adafactor, .adam8bit: statePerParameter = false
        }
        optimizerStateBytes = 0
        activationWidth = model.spec.inputs + model.layers.reduce(0) { $0 + $1.outputs }
        flopsPerTrainingSample = cost.flopsPerTrainingSample
        flopsPerOptimizerStep = cost.flopsPerOptimizerStep
        flopsPerPrediction = cost.flopsPerPrediction
        optimizerStateBytes = stateBytes(trainable: trainableParameters)
    }

    /// S for `count` trainable parameters: exact for SGD and Adam (4·s·count), the whole model's
    /// bytes scaled by count / P for the optimizers whose state is not per parameter.
    func stateBytes(trainable count: Int) -> Int {
        if statePerParameter { return 4 * stateFloatsPerParameter * count }
        return count >= modelParameters ? wholeModelStateBytes : wholeModelStateBytes * count / max(modelParameters, 1)
    }

    /// The same traffic with `count` trainable parameters: the gradient written and the optimizer's
    /// update cover only them. An experience or session is charged with the parameters that
    /// trained in it (adapters and LoRA train the core in their first experiences only).
    public func withTrainable(_ count: Int) -> TrainingTraffic {
        var t = self
        t.trainableParameters = count
        t.flopsPerOptimizerStep = optimizerFLOPsPerParameter * count
        t.optimizerStateBytes = stateBytes(trainable: count)
        return t
    }

    /// The same traffic with training in `format` (mixed precision, `TrainingPrecision`): forward
    /// and backward read the e-byte weight copy (2·e·P_r), backward writes an e-byte gradient
    /// (e·P_t), the optimizer reads the float32 master weights and the e-byte gradient and writes
    /// the master weights and a new e-byte copy ((4 + e + 4 + e)·P_t), activations take e bytes
    /// (2·e·B·A); optimizer state is unchanged. Predictions stay float32 (the toolkit evaluates
    /// the master weights).
    public func withPrecision(_ format: NumericFormat) -> TrainingTraffic {
        var t = self
        t.precision = format
        return t
    }

    /// Bytes moved per step that do not depend on the batch size.
    public var fixedBytesPerStep: Int {
        guard precision != .float32 else {
            return 4 * (2 * parametersPerRoute + trainableParameters * (1 + 3)) + 2 * optimizerStateBytes
        }
        let e = precision.bytes
        return 2 * e * parametersPerRoute + trainableParameters * (e + 4 + e + 4 + e) + 2 * optimizerStateBytes
    }

    /// Bytes moved per batch row (activations written in forward, read in backward).
    public var bytesPerRow: Int { 2 * precision.bytes * activationWidth }

    /// FLOPs of training `rows` rows in `steps` optimizer steps.
    public func flops(rows: Int, steps: Int) -> Int {
        rows * flopsPerTrainingSample + steps * flopsPerOptimizerStep
    }

    /// Bytes moved by training `rows` rows in `steps` optimizer steps.
    public func bytes(rows: Int, steps: Int) -> Int {
        steps * fixedBytesPerStep + rows * bytesPerRow
    }

    /// Bytes moved by one prediction: weights read once, activations written once (4·(P_r + A)).
    public var bytesPerPrediction: Int { 4 * (parametersPerRoute + activationWidth) }
}

/// Energy of a FLOP and byte count on a device: E = FLOPs · J/FLOP + bytes · J/byte.
public struct EnergyEstimate: Sendable, Equatable {
    public var flops: Int
    public var bytes: Int
    public var joules: Double

    public init(flops: Int, bytes: Int, profile: DeviceProfile) {
        self.flops = flops
        self.bytes = bytes
        joules = Double(flops) * profile.joulesPerFLOP + Double(bytes) * profile.joulesPerByte
    }

    /// Training energy of `rows` rows in `steps` steps.
    public init(training traffic: TrainingTraffic, rows: Int, steps: Int, profile: DeviceProfile) {
        self.init(flops: traffic.flops(rows: rows, steps: steps), bytes: traffic.bytes(rows: rows, steps: steps),
                  profile: profile)
    }

    /// Energy of one training experience or session: `rows` rows in `steps` steps with
    /// `trainableParameters` trainable (nil: `traffic`'s), plus the FLOPs the plugins added
    /// (`TrainingProgress.extraFLOPs`: penalties per step, a Fisher pass). The research results
    /// (`DeviceReport`) and the on-device runtime both count a session this way.
    public init(session traffic: TrainingTraffic, rows: Int, steps: Int, trainableParameters: Int?, extraFLOPs: Int,
                profile: DeviceProfile) {
        let base = EnergyEstimate(training: trainableParameters.map(traffic.withTrainable) ?? traffic, rows: rows,
                                  steps: steps, profile: profile)
        self = extraFLOPs == 0 ? base : EnergyEstimate(flops: base.flops + extraFLOPs, bytes: base.bytes, profile: profile)
    }
}

/// Peak memory of training, in bytes (float32): parameters + optimizer state
/// (`OptimizerSpec.stateBytes`: 8-bit Adam's bytes, Adafactor's factored moments) + gradient vector
/// (all as allocated over the full parameter vector) + activations of one batch
/// (rows · Σ widths incl. input) + replay buffer bytes + the plugins' own state (EWC's Fisher and
/// anchors, SI's importance; reported by the plugins as `state_bytes`).
public struct PeakMemory: Sendable, Equatable {
    public var parameters: Int
    public var optimizerState: Int
    public var gradients: Int
    public var activations: Int
    public var buffer: Int
    public var pluginState: Int
    public var total: Int { parameters + optimizerState + gradients + activations + buffer + pluginState }

    /// Peak memory of training `model` with `optimizer`, batches of `batchSize` rows and plugins
    /// that report `resources` (their replayed rows, stored samples and state).
    public init(model: MLP, optimizer: OptimizerSpec, batchSize: Int, resources: PluginResources) {
        self.init(model: model, optimizer: optimizer, batchRows: batchSize + resources.extraRowsPerBatch,
                  bufferBytes: resources.storedSampleBytes, pluginStateBytes: resources.stateBytes)
    }

    /// `batchRows` = rows of the largest batch (batch size + replayed rows per batch).
    public init(model: MLP, optimizer: OptimizerSpec, batchRows: Int, bufferBytes: Int, pluginStateBytes: Int = 0) {
        pluginState = pluginStateBytes
        let p = model.parameterCount
        parameters = 4 * p
        optimizerState = optimizer.stateBytes(parameterCount: p, matrices: model.weightMatrices)
        gradients = 4 * p
        activations = 4 * batchRows * (model.spec.inputs + model.layers.reduce(0) { $0 + $1.outputs })
        buffer = bufferBytes
    }
}

/// Latency estimate of one prediction: FLOPs / the profile's sustained FLOP/s.
public func predictionLatencySeconds(flops: Int, profile: DeviceProfile) -> Double {
    Double(flops) / profile.flopsPerSecond
}
