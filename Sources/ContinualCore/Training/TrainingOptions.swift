/// How the Trainer walks through an experience.
public struct TrainingOptions: Sendable, Equatable, Hashable {
    public var epochs: Int
    /// A budget of optimizer steps per experience instead of `epochs` (nil = use `epochs`).
    ///
    /// One step is one optimizer update on one batch of `batchSize` rows of the experience's
    /// (adjusted) training set, however the batch is then assembled: replayed rows appended by a
    /// plugin do not make extra steps, and joint training draws its batches from the union of the
    /// data seen so far. The sampler passes over the training set in epochs — each a fresh
    /// permutation from the run's "shuffle" stream (or the data order with `shuffle: false`),
    /// the last batch of an epoch possibly short — and stops mid-epoch when the budget is spent,
    /// so every experience gets exactly this many steps whatever its size.
    public var stepsPerExperience: Int?
    /// A budget of training FLOPs per experience instead of `epochs` (equal-compute comparisons,
    /// Prabhu et al. 2023; nil = not used): steps are taken while the experience's FLOPs so far
    /// are below it (so the last step may cross it). A step costs its rows' forward and backward
    /// (replayed rows included), the optimizer's update and the plugins' per-step FLOPs, as the
    /// cost model counts them (`CostModel`, `PluginResources.extraFLOPsPerStep`); per-experience
    /// passes (EWC's Fisher, MAS's importance, iCaRL's herding) happen after the budget and are
    /// reported in `training_flops`, not charged against it.
    public var flopsPerExperience: Double?
    public var batchSize: Int
    /// Reshuffle the training set every epoch (from the run's "shuffle" stream).
    public var shuffle: Bool
    /// Reset optimizer state (momentum, Adam moments) at each new experience, as Avalanche does
    /// by default; `false` carries it across experiences.
    public var resetOptimizerPerExperience: Bool
    /// Rows per forward pass during evaluation.
    public var evaluationBatchSize: Int
    /// A run counts as diverged when an epoch's mean task loss exceeds this (nats per sample), as
    /// well as when any loss or parameter becomes NaN or infinite. With ReLU a far too high
    /// learning rate often kills every unit and leaves a *finite* but absurd loss (≈ 10⁶), which
    /// this catches; `nil` disables the threshold (NaN/∞ are always divergence).
    public var divergenceLoss: Double?
    /// Stop an experience's epochs early when its mean training loss stops improving; nil = always
    /// run every epoch.
    public var earlyStopping: EarlyStopping?
    /// Which outputs a multi-class head's softmax covers (a class-incremental protocol choice,
    /// recorded with every run).
    public var activeOutputs: ActiveOutputs
    /// How the learning rate changes within each experience (default: constant).
    public var learningRateSchedule: LearningRateSchedule
    /// The number format training emulates (default float32: the ordinary path, bit for bit;
    /// see `TrainingPrecision` for what a 16-bit format rounds).
    public var precision: TrainingPrecision = .float32

    public init(epochs: Int = 1, stepsPerExperience: Int? = nil, flopsPerExperience: Double? = nil, batchSize: Int = 32, shuffle: Bool = true,
                resetOptimizerPerExperience: Bool = true, evaluationBatchSize: Int = 512,
                divergenceLoss: Double? = 1e4, earlyStopping: EarlyStopping? = nil,
                activeOutputs: ActiveOutputs = .all, learningRateSchedule: LearningRateSchedule = LearningRateSchedule()) {
        self.learningRateSchedule = learningRateSchedule
        self.earlyStopping = earlyStopping
        self.activeOutputs = activeOutputs
        self.epochs = epochs
        self.stepsPerExperience = stepsPerExperience
        self.flopsPerExperience = flopsPerExperience
        self.batchSize = batchSize
        self.shuffle = shuffle
        self.resetOptimizerPerExperience = resetOptimizerPerExperience
        self.evaluationBatchSize = evaluationBatchSize
        self.divergenceLoss = divergenceLoss
    }
}

/// Which outputs of a multi-class head the softmax covers during training and evaluation.
///
/// Both protocols are in the class-incremental literature: `all` trains the softmax over every
/// class of the head from the start (Avalanche's and Mammoth's default single head), so classes
/// not seen yet are pushed down; `seen` covers only the classes whose labels appeared in the
/// training sets of the experiences so far ("active outputs", van de Ven et al. 2022), in training
/// and in the evaluation after each experience. Baselines before any training use all outputs.
/// Binary heads are unaffected.
public enum ActiveOutputs: String, Sendable, Hashable, CaseIterable, Codable {
    case all, seen
}

/// Early stopping on the epoch training loss (saves energy), by one of two rules:
/// - patience (`window == nil`): an experience stops after `patience` consecutive epochs whose
///   mean loss is not below the best so far by more than `minDelta`;
/// - window (`window = W`): after epoch e ≥ W it stops when the improvement over the last W
///   epochs, loss[e − W] − loss[e], is below `tolerance` (a loss that rose counts as a negative
///   improvement and stops it too). Tolerance 0 switches the rule off: the full budget runs.
public struct EarlyStopping: Sendable, Equatable, Hashable {
    /// Epochs without improvement before stopping (≥ 1; `Int.max` = never stop).
    public var patience: Int
    /// Improvement (nats per sample) that counts: loss < best − minDelta.
    public var minDelta: Double
    /// The window rule's W (epochs); nil = the patience rule.
    public var window: Int?
    /// The window rule's least improvement over W epochs (nats per sample); 0 = never stop.
    public var tolerance: Double

    public init(patience: Int, minDelta: Double = 0) {
        self.patience = patience
        self.minDelta = minDelta
        self.window = nil
        self.tolerance = 0
    }

    /// The window rule: stop when loss[e − window] − loss[e] < tolerance.
    public init(window: Int, tolerance: Double) {
        self.patience = Int.max
        self.minDelta = 0
        self.window = window
        self.tolerance = tolerance
    }

    /// Tracks the best loss and the epochs since it improved (patience), or the recent losses (window).
    public struct Monitor: Sendable {
        public let rule: EarlyStopping
        public private(set) var best = Double.infinity
        public private(set) var stale = 0
        /// Window rule: the epoch losses so far (NaN losses of empty epochs are not counted).
        public private(set) var history: [Double] = []
        public init(_ rule: EarlyStopping) { self.rule = rule }

        /// Records an epoch's loss; returns true when training should stop.
        public mutating func shouldStop(after loss: Double) -> Bool {
            if let w = rule.window {
                guard !loss.isNaN else { return false }
                history.append(loss)
                guard rule.tolerance > 0, history.count > w else { return false }
                return history[history.count - 1 - w] - loss < rule.tolerance
            }
            if loss < best - rule.minDelta {
                best = loss
                stale = 0
            } else {
                stale += 1
            }
            return stale >= rule.patience
        }
    }
}

/// Why a run stopped early.
public enum TrainingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The loss became NaN or infinite (e.g. a learning rate far too high).
    case diverged(experience: Int, epoch: Int, loss: Double)
    /// A configuration the Trainer cannot run (e.g. more experiences than heads).
    case invalid(String)
    /// An evaluation produced NaN/±∞ outputs (a model with non-finite weights, e.g. a warm start
    /// from a damaged checkpoint, or a learning rate so large that the loss check came too late):
    /// `evaluation` names it ("initial", "random baseline", "after experience i"), `experience`
    /// the test set, `samples` how many of its samples had a non-finite output.
    case nonFiniteOutputs(evaluation: String, experience: Int, samples: Int)
    /// A method's option that cannot work with this model or data; `key` is the option's key
    /// path within the method's entry (".layers"), so messages name `.strategy[i].layers`.
    case invalidOption(key: String, message: String)
    /// A setting outside the method (its absolute key path, e.g. ".model.hidden") that the
    /// method cannot work with.
    case invalidSetting(path: String, message: String)

    /// The run diverged (reported with status `diverged`), as opposed to an invalid configuration.
    public var isDivergence: Bool {
        switch self {
        case .diverged, .nonFiniteOutputs: return true
        case .invalid, .invalidOption, .invalidSetting: return false
        }
    }

    /// Whether the error is a configuration problem (any of the `invalid…` cases), not divergence.
    public var isConfigurationProblem: Bool {
        !isDivergence
    }

    public var description: String {
        switch self {
        case .diverged(let e, let epoch, let loss):
            if loss.isFinite {
                return "diverged: mean training loss \(loss) in experience \(e), epoch \(epoch) exceeded the divergence threshold (training.divergence_loss)"
            }
            return "diverged: training loss or parameters became \(loss) in experience \(e), epoch \(epoch)"
        case .invalid(let message), .invalidOption(_, let message), .invalidSetting(_, let message):
            return message
        case .nonFiniteOutputs(let evaluation, let e, let n):
            return "diverged: the model's outputs were NaN or infinite on \(n) test sample(s) of experience \(e) in the \(evaluation) evaluation (non-finite weights; lower optimizer.lr or check model.init_from)"
        }
    }
}
