/// Where the training loop's work comes from: which experiences it trains, in order, and how it
/// passes over each one's training set.
///
/// The loop itself (`Trainer`) is the same for every source: prepare, baselines, then per
/// experience the plugins' hooks, the steps, divergence checks and evaluation. Sources differ
/// only in what they hand it:
/// - `EpochSource`: the stream's experiences, `epochs` shuffled passes each (batch training);
/// - `StreamSource`: one ordered pass per experience, every sample seen once (prequential,
///   test-then-train, with a `PrequentialProbe` observer scoring each sample before it is learnt);
/// - `SessionSource`: training sessions planned from a device schedule (each session is an
///   experience of the days since the previous one);
/// - `LocalRoundSource`: at most `steps` optimizer steps per experience (a federated client's
///   local round on its data before it hands its parameters back).
public protocol WorkSource {
    /// The experiences the loop trains (default: the stream's own).
    func experiences(of stream: ExperienceStream) -> [Experience]

    /// How the loop passes over experience `index`'s (adjusted) training set.
    func pass(experience index: Int, options: TrainingOptions) -> TrainingPass
}

public extension WorkSource {
    func experiences(of stream: ExperienceStream) -> [Experience] { stream.experiences }
}

/// How the loop passes over one experience's training set.
public struct TrainingPass: Sendable, Equatable {
    /// Passes over the set (each records one value of the loss curve).
    public var epochs: Int
    /// Whether each epoch visits the rows in a fresh random order (the run's shuffle stream).
    public var shuffle: Bool
    /// Stops the experience when the epoch loss stops improving.
    public var earlyStopping: EarlyStopping?
    /// Stops the experience after this many optimizer steps (nil = no limit).
    public var maxSteps: Int?
    /// Takes steps only while the experience's training FLOPs are below this (nil = no limit;
    /// see `TrainingOptions.flopsPerExperience`).
    public var maxFLOPs: Double?

    public init(epochs: Int, shuffle: Bool, earlyStopping: EarlyStopping? = nil, maxSteps: Int? = nil,
                maxFLOPs: Double? = nil) {
        self.epochs = epochs
        self.shuffle = shuffle
        self.earlyStopping = earlyStopping
        self.maxSteps = maxSteps
        self.maxFLOPs = maxFLOPs
    }
}

/// Batch training: `options.epochs` passes per experience, shuffled if `options.shuffle`, with
/// the configured early stopping — or, with `options.stepsPerExperience`, exactly that many
/// steps (as many epochs as it takes, the last one cut when the budget is spent).
public struct EpochSource: WorkSource {
    public init() {}
    public func pass(experience index: Int, options: TrainingOptions) -> TrainingPass {
        TrainingPass(budget: options)
    }
}

extension TrainingPass {
    /// The pass `options` ask for: `epochs` passes, or `stepsPerExperience` steps over as many
    /// passes as that takes.
    public init(budget options: TrainingOptions) {
        if let steps = options.stepsPerExperience {
            self.init(epochs: Int.max, shuffle: options.shuffle, maxSteps: steps)
        } else if let flops = options.flopsPerExperience {
            self.init(epochs: Int.max, shuffle: options.shuffle, maxFLOPs: flops)
        } else {
            self.init(epochs: options.epochs, shuffle: options.shuffle, earlyStopping: options.earlyStopping)
        }
    }
}

/// Online training: one pass over each experience's rows in stream (time) order, a step every
/// `batchSize` rows (1 = purely online). Pair it with a `PrequentialProbe` observer, which
/// predicts every sample with the model of that moment before the step that learns it.
public struct StreamSource: WorkSource {
    public init() {}
    public func pass(experience index: Int, options: TrainingOptions) -> TrainingPass {
        TrainingPass(epochs: 1, shuffle: false)
    }
}

/// Scheduled training: the experiences are sessions (see the schedule planner in
/// ContinualExperiments), each trained like a batch experience.
public struct SessionSource: WorkSource {
    public let sessions: [Experience]
    public init(sessions: [Experience]) { self.sessions = sessions }
    public func experiences(of stream: ExperienceStream) -> [Experience] { sessions }
    public func pass(experience index: Int, options: TrainingOptions) -> TrainingPass {
        TrainingPass(budget: options)
    }
}

/// A federated client's local round: shuffled passes over its data, at most `steps` optimizer
/// steps (or `epochs` passes, whichever ends first), after which the caller reads the model's
/// parameters and hands them to the server.
public struct LocalRoundSource: WorkSource {
    public let steps: Int
    public let epochs: Int
    public init(steps: Int, epochs: Int = 1) {
        self.steps = steps
        self.epochs = epochs
    }
    public func pass(experience index: Int, options: TrainingOptions) -> TrainingPass {
        TrainingPass(epochs: epochs, shuffle: options.shuffle, maxSteps: steps)
    }
}
