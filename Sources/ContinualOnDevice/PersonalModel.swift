import ContinualCore
import ContinualMetrics
import ContinualScenarios
import ContinualStrategies

/// One user's model on the device: a network, a continual-learning strategy, the samples waiting
/// for a training session, and the schedule that decides when a session may run.
///
/// The app's loop: `observe(features:day:)` the day's feature vector (and `predict` it to decide
/// what to do), `label(day:outcome:)` it once the outcome is known (usually the next day),
/// `trainIfDue(device:)` from a background task, and `checkpoint()` after every change the app
/// must not lose. A relaunch restores the value with `init(checkpoint:configuration:)`.
///
/// Training runs through the research toolkit's own loop: the Core `Trainer` trains each session
/// as the next experience of a `SessionSource` (`Trainer.trainSession`), and the session gate is
/// the `schedule` block's decision (`ScheduleConfig.runsSession`). Driven day by day with the
/// samples and device states of a scheduled experiment, a `PersonalModel` has bit-identical
/// parameters and predictions to that experiment's run (`ContinualOnDeviceTests` checks this).
///
/// A value type: copying it copies the model, the strategy's state and the pending samples.
/// Every mutating call that fails (`trainIfDue` on diverging data, `label` of an unknown day)
/// leaves the value as it was.
public struct PersonalModel {
    /// Everything that fixes how the model learns. The app keeps it in code (like its model
    /// architecture); a checkpoint stores a fingerprint of it and refuses another configuration.
    public struct Configuration: Sendable {
        /// The network: inputs = the length of the feature vectors, head = the outcome's classes.
        public var model: MLPSpec
        /// The optimizer. Its state (moments, step count) restarts with every session unless
        /// `training.resetOptimizerPerExperience` is false, as between the experiences of `continual run`.
        public var optimizer: OptimizerSpec
        /// Epochs, batch size, early stopping, learning-rate schedule of every session.
        public var training: TrainingOptions
        /// The strategy: the toolkit's plugins in order, each from its typed options
        /// (`[Replay.Options(capacity: 200), EWC.Options(lambda: 100)]`).
        public var strategy: [any PluginOptions]
        /// When sessions run: the type (`daily`, `weekly`, `after_n_new_samples`, `always`, or
        /// `on_drift` with its `detector`), the device gate (`when`: charging, idle, Wi-Fi, minimum
        /// battery, maximum thermal state) and the optional `safeRefresh` gate on each candidate.
        /// `samples_per_day` only chops research streams into days and is not used here.
        public var schedule: ScheduleConfig
        /// The energy profile for the per-session cost figures.
        public var profile: DeviceProfile
        /// Seed of every random choice (initial weights, shuffling, the plugins' streams).
        public var seed: UInt64
        /// Sessions the strategy is prepared for (`RunContext.experienceCount`); only strategies
        /// with one copy per session (adapters or LoRA routed by task id) are limited by it. To
        /// reproduce a scheduled experiment, set it to that run's number of sessions.
        public var sessionCapacity: Int
        /// Names of the features, in order (context-routed adapters look one up by name).
        public var featureNames: [String]
        /// A warm start: values for the first parameters of the freshly built model (e.g. a
        /// global model's), as the research runner's `model.init_from` applies them.
        public var initialParameters: [Float]?
        /// A secret key the app holds (e.g. in the Keychain): checkpoints are then sealed with
        /// HMAC-SHA256 under it, and restoring refuses any checkpoint not sealed with this key —
        /// authenticity, not only integrity. nil: a plain SHA-256 digest (detects damage and edits
        /// by a tool that does not recompute it, not a deliberate edit). Not part of `fingerprint`.
        public var integrityKey: [UInt8]?

        /// A configuration; defaults: Adam (lr 0.005), 5 epochs of batches of 32 per session, naive
        /// fine-tuning, a daily schedule gated on charging + idle, the `phone_npu_2023` profile,
        /// seed 1, 365 sessions.
        public init(model: MLPSpec, optimizer: OptimizerSpec = .adam(learningRate: 0.005),
                    training: TrainingOptions = TrainingOptions(epochs: 5, batchSize: 32),
                    strategy: [any PluginOptions] = [Naive.Options()], schedule: ScheduleConfig = ScheduleConfig(),
                    profile: DeviceProfile = .phoneNPU2023, seed: UInt64 = 1, sessionCapacity: Int = 365,
                    featureNames: [String] = [], initialParameters: [Float]? = nil) {
            self.model = model
            self.optimizer = optimizer
            self.training = training
            self.strategy = strategy
            self.schedule = schedule
            self.profile = profile
            self.seed = seed
            self.sessionCapacity = sessionCapacity
            self.featureNames = featureNames
            self.initialParameters = initialParameters
        }

        /// FNV-1a 64 of a canonical description of every field: stored in checkpoints so that a
        /// checkpoint is never restored into a model configured differently.
        public var fingerprint: UInt64 {
            var text = "model=\(model)|optimizer=\(optimizer)|training=\(Self.trainingText(training))|schedule=\(schedule.canonicalDescription)"
            text += "|profile=\(profile)|seed=\(seed)|capacity=\(sessionCapacity)|features=\(featureNames)"
            text += "|strategy=" + strategy.map { "\(type(of: $0).typeName):\($0)" }.joined(separator: ";")
            text += "|init=" + (initialParameters.map { p in "\(StableHash.fnv1a64(bytes: p.flatMap { f in withUnsafeBytes(of: f.bitPattern.littleEndian, Array.init) }))" } ?? "none")
            return StableHash.fnv1a64(text)
        }

        /// The training options as the fingerprint describes them: their reflected text, without the
        /// fields added after checkpoints were first written (`precision`, the early-stopping
        /// window rule) while those hold their defaults. Reflection prints stored fields in
        /// declaration order and these are declared last, so a configuration that does not use
        /// them keeps the fingerprint it had before they existed: an app's stored model stays
        /// readable across the toolkit update, and any use of them still changes the fingerprint.
        static func trainingText(_ training: TrainingOptions) -> String {
            var text = "\(training)"
            if let stop = training.earlyStopping, stop.window == nil, stop.tolerance == 0 {
                text = text.replacing(", window: nil, tolerance: 0.0)", with: ")")
            }
            if training.precision == .float32 {
                let tail = ", precision: " + String(reflecting: training.precision) + ")"
                if text.hasSuffix(tail) { text = String(text.dropLast(tail.count)) + ")" }
            }
            return text
        }

        /// Whether a plugin trains on the earlier sessions' own samples (joint training), so the
        /// model must keep them; other strategies keep only what their plugins store.
        var keepsHistory: Bool { strategy.contains { $0 is Joint.Options } }
    }

    /// One day's feature vector waiting for its outcome.
    public struct Observation: Sendable, Equatable {
        /// The day it was observed (the day `label(day:outcome:)` names).
        public var day: Int
        /// The feature vector, `configuration.model.inputs` values.
        public var features: [Float]
    }

    /// The configuration this model was built with.
    public let configuration: Configuration
    var trainer: Trainer
    var loop: SessionLoopState
    /// Observations not yet labelled, oldest first.
    public internal(set) var unlabelled: [Observation] = []
    /// Labelled samples waiting for the next session (what it will train on), oldest first.
    public internal(set) var pending: Samples
    /// Days of `pending`'s samples (labelled on these days), oldest first.
    public internal(set) var pendingDays: [Int] = []
    /// Earlier sessions, one per index: their samples when the strategy trains on them (joint),
    /// else empty placeholders.
    var history: [Experience] = []
    /// Day of the latest session (-1: none yet).
    public internal(set) var lastSessionDay = -1
    /// The `on_drift` trigger (nil for other schedule types): a drift detector fed, at each
    /// `label`, whether the current model mispredicted that observation.
    public internal(set) var trigger: DriftTrigger?
    /// Sessions the safe-refresh gate rolled back (not counted in `sessionsTrained`).
    public internal(set) var rollbacks = 0

    /// A fresh model (random initial weights from the seed, or the warm start). Throws
    /// `PersonalModelError.invalidConfiguration` when the strategy cannot be combined or prepared
    /// for this network (e.g. iCaRL on a binary head).
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        guard configuration.model.inputs >= 1 else {
            throw PersonalModelError.invalidConfiguration("the model needs at least one input, got \(configuration.model.inputs)")
        }
        if let problem = PluginComposition.problem(in: configuration.strategy.map { type(of: $0) }) {
            throw PersonalModelError.invalidConfiguration(problem)
        }
        var trainer = Trainer(spec: configuration.model, optimizer: configuration.optimizer, options: configuration.training,
                              plugins: configuration.strategy.map { $0.makePlugin() }, seed: configuration.seed)
        if let p = configuration.initialParameters {
            guard p.count <= trainer.model.parameterCount else {
                throw PersonalModelError.invalidConfiguration(
                    "the warm start has \(p.count) parameters, the model \(trainer.model.parameterCount)")
            }
            trainer.model.parameters.replaceSubrange(0..<p.count, with: p)
        }
        do {
            loop = try trainer.beginSessions(capacity: configuration.sessionCapacity, dimension: configuration.model.inputs,
                                             head: configuration.model.head, featureNames: configuration.featureNames)
        } catch let error as TrainingError {
            throw PersonalModelError.invalidConfiguration("\(error)")
        }
        self.trainer = trainer
        pending = Samples(dimension: configuration.model.inputs)
        if configuration.schedule.type == .onDrift {
            guard let spec = configuration.schedule.detector else {
                throw PersonalModelError.invalidConfiguration("the on_drift schedule needs a detector (schedule.detector)")
            }
            trigger = DriftTrigger(spec: spec)
        }
    }

    // MARK: The day's loop

    /// Records today's feature vector, to be labelled later with `label(day:outcome:)`. Throws
    /// `PersonalModelError.invalidSample` when the vector has the wrong length or a non-finite value.
    public mutating func observe(features: [Float], day: Int) throws {
        try checkFeatures(features)
        unlabelled.append(Observation(day: day, features: features))
    }

    /// Labels the oldest unlabelled observation of `day` with the outcome that followed it
    /// (a class index: for a binary head 1 = the event happened, 0 = it did not). The sample joins
    /// `pending` and trains in the next session. Throws when `day` has no unlabelled observation
    /// or the outcome is not a class of the model's head.
    public mutating func label(day: Int, outcome: Int) throws {
        guard (0..<configuration.model.head.classCount).contains(outcome) else {
            throw PersonalModelError.invalidSample(
                "outcome \(outcome) is not a class of the model (0..<\(configuration.model.head.classCount))")
        }
        guard let index = unlabelled.firstIndex(where: { $0.day == day }) else {
            throw PersonalModelError.nothingToLabel(day: day)
        }
        let observation = unlabelled.remove(at: index)
        if trigger != nil {
            // The detector's signal: did the model held now mispredict this event?
            trigger!.observe(error: try predictClass(observation.features) != outcome)
        }
        pending.features += observation.features
        pending.labels.append(Int32(outcome))
        pendingDays.append(day)
    }

    /// Labels the oldest unlabelled observation of `day` with a binary outcome.
    public mutating func label(day: Int, outcome: Bool) throws {
        try label(day: day, outcome: outcome ? 1 : 0)
    }

    /// Discards the unlabelled observations of days before `day` (outcomes that will never come).
    public mutating func dropUnlabelled(before day: Int) {
        unlabelled.removeAll { $0.day < day }
    }

    /// Class probabilities of `features` under the current model (sigmoid of the logit for a
    /// binary head: `[p(0), p(1)]`; softmax for a multiclass one), through the model's first
    /// route, as the scheduled experiments predict each day. Throws for a malformed vector.
    public func predict(_ features: [Float]) throws -> [Float] {
        try checkFeatures(features)
        let model = trainer.model
        let ws = model.makeWorkspace(capacity: 1)
        features.withUnsafeBufferPointer { model.forward($0.baseAddress!, count: 1, route: 0, workspace: ws) }
        let logits = (0..<model.logitCount).map { ws.logits[$0] }
        switch model.spec.head {
        case .binary:
            let p = 1 / (1 + _expf(-logits[0]))
            return [1 - p, p]
        case .multiclass:
            let top = logits.max() ?? 0
            let e = logits.map { _expf($0 - top) }
            let sum = e.reduce(0, +)
            return e.map { $0 / sum }
        }
    }

    /// The predicted class of `features`: the model's own decision rule (`logit > 0` for a binary
    /// head, the arg-max otherwise), exactly what the research runner scores.
    public func predictClass(_ features: [Float]) throws -> Int {
        try checkFeatures(features)
        let model = trainer.model
        let ws = model.makeWorkspace(capacity: 1)
        var out: Int32 = 0
        features.withUnsafeBufferPointer { model.predict($0.baseAddress!, count: 1, route: 0, workspace: ws, into: &out) }
        return Int(out)
    }

    /// Runs a training session if the schedule says one is due on `device.day` with the device in
    /// the states `device.hours` (the gate needs one hour that allows training: charging, idle,
    /// Wi-Fi, battery and thermal state as `configuration.schedule.when` requires; `weekly` also
    /// needs 7 days since the last session, `after_n_new_samples` `n` pending samples, and every
    /// type at least one; `always` trains whenever samples are pending, whatever the device).
    /// The session trains on every pending sample; they are then cleared. Returns nil when no
    /// session was due. Throws `PersonalModelError.training` when training fails (a diverging
    /// loss, a model with one copy per session out of capacity); the value is then unchanged.
    public mutating func trainIfDue(device: DeviceDay) throws -> TrainingSessionReport? {
        guard isDue(device: device) else { return nil }
        return try train(day: device.day)
    }

    /// `trainIfDue(device:)` for a background task that sees one device state now.
    public mutating func trainIfDue(day: Int, now: DeviceHour) throws -> TrainingSessionReport? {
        try trainIfDue(device: DeviceDay(day: day, hours: [now]))
    }

    /// Whether `trainIfDue(device:)` would train now.
    public func isDue(device: DeviceDay) -> Bool {
        configuration.schedule.runsSession(day: device.day, device: device, pendingSamples: pending.count,
                                           lastSessionDay: lastSessionDay, endsExperience: true,
                                           driftPending: trigger?.pending ?? false)
    }

    /// Trains one session on the pending samples now, whatever the schedule (an app's "train
    /// now" action). Throws `PersonalModelError.nothingToTrain` when nothing is pending (with
    /// `safe_refresh`: when no more than its `window` samples are pending).
    ///
    /// With `configuration.schedule.safeRefresh`, the newest `window` pending samples are held out,
    /// the session trains on the others, and the candidate replaces the current model only if the
    /// `SafeRefreshGate` accepts it on the held-out window; otherwise the learner is rolled back
    /// (parameters, optimizer, strategy state, session count and shuffle stream) and the session's
    /// training samples are dropped. The held-out samples stay pending either way. The report
    /// says which (`accepted`); a rolled-back session still cost its energy.
    public mutating func train(day: Int) throws -> TrainingSessionReport {
        let gate = configuration.schedule.safeRefresh
        guard pending.count > (gate?.window ?? 0) else { throw PersonalModelError.nothingToTrain }
        let (trainSet, holdout) = gate?.split(pending) ?? (pending, Samples(dimension: pending.dimension))
        let holdoutDays = Array(pendingDays.suffix(holdout.count))
        var trainer = self.trainer
        var loop = self.loop
        let row: TrainingProgress
        do {
            row = try trainer.trainSession(trainSet, history: history, state: &loop)
        } catch let error as TrainingError {
            throw PersonalModelError.training("\(error)")
        }
        let decision = gate?.decide(current: self.trainer.model, candidate: trainer.model, holdout: holdout)
        let session = loop.sessionsDone - 1
        let traffic = TrainingTraffic(model: trainer.model, optimizer: configuration.optimizer)
        let rows = row.samplesProcessed.first ?? 0, steps = row.steps.first ?? 0
        let resources = trainer.plugins.reduce(PluginResources.none) { $0 + $1.resources }
        var report = TrainingSessionReport(
            session: session, day: day, newSamples: trainSet.count, trainingSetSize: row.trainSetSizes.first ?? 0,
            rowsProcessed: rows, steps: steps, epochLosses: row.lossCurve.first ?? [],
            trainableParameters: row.trainableParameters.first ?? 0,
            energy: EnergyEstimate(session: traffic, rows: rows, steps: steps,
                                   trainableParameters: row.trainableParameters.first,
                                   extraFLOPs: row.extraFLOPs.first ?? 0, profile: configuration.profile),
            peakMemory: PeakMemory(model: trainer.model, optimizer: configuration.optimizer,
                                   batchSize: configuration.training.batchSize, resources: resources))
        trigger?.sessionRan()
        lastSessionDay = day
        pending = holdout
        pendingDays = holdoutDays
        if let decision {
            report.accepted = decision.accepted
            report.holdoutAccuracyCurrent = decision.currentAccuracy
            report.holdoutAccuracyCandidate = decision.candidateAccuracy
            // A rollback: keep the learner from before the session (self.trainer, self.loop).
            guard decision.accepted else {
                rollbacks += 1
                return report
            }
        }
        let done = Samples(dimension: pending.dimension)
        history.append(Experience(index: session, name: "session_\(session)",
                                  train: configuration.keepsHistory ? trainSet : done,
                                  test: configuration.keepsHistory ? trainSet : done))
        self.trainer = trainer
        self.loop = loop
        return report
    }

    // MARK: What the model holds

    /// Sessions trained so far.
    public var sessionsTrained: Int { loop.sessionsDone }
    /// The network's flat parameter vector (weights and biases; adapters or LoRA blocks included).
    public var parameters: [Float] { trainer.model.parameters }
    /// The network (a copy), e.g. for export or evaluation.
    public var model: MLP { trainer.model }
    /// Names of the strategy's plugins, in order.
    public var strategyNames: [String] { trainer.plugins.map(\.name) }
    /// What the strategy stores and costs (replay buffers, importance vectors).
    public var strategyResources: PluginResources { trainer.plugins.reduce(.none) { $0 + $1.resources } }

    func checkFeatures(_ features: [Float]) throws {
        guard features.count == configuration.model.inputs else {
            throw PersonalModelError.invalidSample("\(features.count) features, the model takes \(configuration.model.inputs)")
        }
        if let i = features.firstIndex(where: { !$0.isFinite }) {
            throw PersonalModelError.invalidSample("feature \(i) is \(features[i]), not a finite number")
        }
    }
}
