import ContinualCore

/// Knowledge distillation from a larger teacher into the on-device student (Hinton et al. 2015),
/// then personalisation of the student, `{"type": "distillation"}`.
///
/// Before each experience i < `experiences` (k, default 1) a teacher MLP (`teacher.hidden`,
/// default [64, 64], the student's activation and head) is trained from its own initialisation
/// by the toolkit's training loop (SGD, `teacher.lr`, `teacher.momentum`, `teacher.epochs`,
/// `teacher.batch_size`) on the pooled training sets of experiences 0…i — only data the student
/// may train on by then — and its accuracy on their pooled test sets is recorded. While the
/// student trains on experience i, every batch row with a task label gets the loss
///
///     α·T²·KL(softmax(z_t/T) ‖ softmax(z_s/T)) + (1 − α)·CE(z_s, y)
///
/// (binary heads: the two-class distributions σ(z/T)); the T² keeps the soft term's gradient
/// the same size as T changes (Hinton et al. §2). From experience k on the student trains on the
/// plain loss: that is the personalisation on the user's stream. α = 0 leaves every gradient
/// untouched (bit-identical to training the student directly, `naive`).
///
/// Why a strategy and not a model initialisation (`init_from`): the student learns from the
/// teacher *while* it trains on the user's first experiences, through the same batch-loss hook
/// LwF uses, so the run's steps, data and costs are those of the direct student; an
/// initialisation could only start from a finished student. Implementation choices: the loop's
/// task-loss gradient is scaled by (1 − α) on the distilled rows, so list `distillation` before
/// other loss terms (LwF, DER) whose gradients must not be scaled; rows without a task label
/// (appended by other plugins) are not distilled. Costs: the teacher's forward pass over every
/// distilled batch is counted as the plugin's extra FLOPs per step; the teacher's own training
/// is not counted in the run's energy (a teacher is trained off the device, on the server's
/// pooled data) and is reported in the plugin group instead (`teacher_training_flops`).
public struct Distillation: BatchLossTerm {
    public var name: String { Options.typeName }
    public let options: Options
    public private(set) var teacher: MLP?
    private var teacherSpec: MLPSpec?
    private var run: RunContext?
    private var workspace: Workspace?
    private var gathered: [Float] = []
    private var teacherAccuracy: [Double] = []
    private var teacherTrainingFLOPs: [Double] = []
    private var distilledSteps = 0

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        guard model.routeCount == 1 else {
            throw TrainingError.invalid("distillation distils a single-head teacher into the shared head; this model has \(model.routeCount) heads (multi_head)")
        }
        guard options.experiences <= context.experienceCount else {
            throw TrainingError.invalidOption(key: ".experiences", message: "must be ≤ \(context.experienceCount) (the stream's experiences), got \(options.experiences)")
        }
        let spec = MLPSpec(inputs: model.spec.inputs, hidden: options.teacher.hidden, activation: model.spec.activation,
                           head: model.spec.head)
        if let message = spec.sizeError() ?? spec.validationError() {
            throw TrainingError.invalidOption(key: ".teacher.hidden", message: message)
        }
        teacherSpec = spec
        run = context
        teacher = nil
        teacherAccuracy = []
        teacherTrainingFLOPs = []
        distilledSteps = 0
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        guard context.index < options.experiences, let spec = teacherSpec, let run else { return }
        // The pooled training and test sets of experiences 0…index (what the student may use).
        var train = Samples(dimension: spec.inputs), test = Samples(dimension: spec.inputs)
        for e in context.seen {
            train.features += e.train.features
            train.labels += e.train.labels
            test.features += e.test.features
            test.labels += e.test.labels
        }
        let pooled = Experience(index: 0, name: "distillation_teacher", train: train, test: test)
        let stream = ExperienceStream(name: "distillation_teacher", featureNames: run.featureNames, head: spec.head,
                                      experiences: [pooled])
        let t = options.teacher
        let seed = run.seed ^ StableHash.fnv1a64("plugin.\(run.pluginIndex).distillation.teacher.\(context.index)")
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: Float(t.lr), momentum: Float(t.momentum)),
                              options: TrainingOptions(epochs: t.epochs, batchSize: t.batchSize), plugins: [], seed: seed)
        let outcome = try trainer.run(stream)
        teacher = outcome.finalModel
        teacherAccuracy.append(outcome.progress.accuracy.last?.first ?? .nan)
        teacherTrainingFLOPs.append(Double(t.epochs * train.count * outcome.finalModel.flopsPerTrainingSample))
    }

    /// T²·KL(q ‖ p) of one row and its gradient with respect to the student's logits `z`, where
    /// p = softmax(z/T), q = softmax(t/T) (one logit: the two-class distributions σ(·/T)).
    /// ∂/∂z_c = T·(p_c − q_c) (binary: T·(p − q) on the single logit).
    public static func softTerm(student z: [Double], teacher t: [Double], temperature T: Double) -> (value: Double, gradient: [Double]) {
        if z.count == 1 {
            let p = sigmoid(z[0] / T), q = sigmoid(t[0] / T)
            return (T * T * (kl(q, p) + kl(1 - q, 1 - p)), [T * (p - q)])
        }
        let logP = logSoftmax(z.map { $0 / T }), logQ = logSoftmax(t.map { $0 / T })
        var value = 0.0
        var gradient = [Double](repeating: 0, count: z.count)
        for c in z.indices {
            let p = _exp(logP[c]), q = _exp(logQ[c])
            if q > 0 { value += q * (logQ[c] - logP[c]) }
            gradient[c] = T * (p - q)
        }
        return (T * T * value, gradient)
    }

    /// Cross-entropy of one row (binary: the logistic loss of the single logit).
    static func crossEntropy(_ z: [Double], label: Int) -> Double {
        if z.count == 1 { return label == 1 ? softplus(-z[0]) : softplus(z[0]) }
        return -logSoftmax(z)[label]
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        guard options.alpha > 0, input.experienceIndex < options.experiences, let teacher else { return 0 }
        let n = input.rows.count, d = input.batch.dimension, L = input.logitCount
        guard n > 0 else { return 0 }
        if workspace == nil || workspace!.capacity < n { workspace = teacher.makeWorkspace(capacity: max(n, 64)) }
        if gathered.count < n * d { gathered = [Float](repeating: 0, count: n * d) }
        for (k, row) in input.rows.enumerated() {
            gathered.replaceSubrange((k * d)..<((k + 1) * d), with: input.batch.row(row))
        }
        let ws = workspace!
        gathered.withUnsafeBufferPointer { teacher.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
        let alpha = options.alpha, T = options.temperature, w = Double(input.scale)
        var value = 0.0
        for (k, row) in input.rows.enumerated() {
            let label = Int(input.batch.labels[row])
            guard label >= 0 else { continue }
            let z = (0..<L).map { Double(input.logits[k * L + $0]) }
            let t = (0..<L).map { Double(ws.logits[k * L + $0]) }
            let soft = Self.softTerm(student: z, teacher: t, temperature: T)
            let g = input.logitGradient + k * L
            for c in 0..<L { g[c] = Float((1 - alpha) * Double(g[c]) + w * alpha * soft.gradient[c]) }
            value += w * alpha * (soft.value - Self.crossEntropy(z, label: label))
        }
        distilledSteps += 1
        return value
    }

    @inline(__always) static func sigmoid(_ x: Double) -> Double { x >= 0 ? 1 / (1 + _exp(-x)) : _exp(x) / (1 + _exp(x)) }
    @inline(__always) static func softplus(_ x: Double) -> Double { x > 0 ? x + _log(1 + _exp(-x)) : _log(1 + _exp(x)) }
    @inline(__always) static func kl(_ q: Double, _ p: Double) -> Double { q > 0 ? q * (_log(q) - _log(max(p, .leastNormalMagnitude))) : 0 }
    static func logSoftmax(_ x: [Double]) -> [Double] {
        let m = x.max() ?? 0
        let s = _log(x.reduce(0) { $0 + _exp($1 - m) })
        return x.map { $0 - m - s }
    }

    /// The teacher's parameters; per step its forward pass over the batch and ≈ 10 FLOPs per logit.
    public var resources: PluginResources {
        guard let teacher else { return .none }
        let batch = run?.training.batchSize ?? 1
        return PluginResources(stateBytes: 4 * teacher.parameterCount,
                               extraFLOPsPerStep: options.alpha > 0 ? batch * (teacher.flopsPerPrediction + 10 * teacher.logitCount) : 0)
    }

    public func checkpointState() -> PluginState {
        var state = PluginState(doubles: ["teacher_accuracy": teacherAccuracy, "teacher_training_flops": teacherTrainingFLOPs],
                                ints: ["distilled_steps": [Int64(distilledSteps)]])
        if let teacher { state.floats["teacher_parameters"] = teacher.parameters }
        return state
    }

    public mutating func restore(from state: PluginState) throws {
        distilledSteps = Int(state.ints["distilled_steps"]?.first ?? 0)
        teacherAccuracy = state.doubles["teacher_accuracy"] ?? []
        teacherTrainingFLOPs = state.doubles["teacher_training_flops"] ?? []
        teacher = nil
        if let p = state.floats["teacher_parameters"] {
            guard let spec = teacherSpec, spec.parameterCount == p.count else {
                throw CheckpointError.mismatch("distillation's teacher has \(p.count) parameters, the configured teacher \(teacherSpec?.parameterCount ?? 0)")
            }
            teacher = MLP(spec: spec, parameters: p)
        }
    }

    public func report() -> PluginReport {
        PluginReport(
            attributes: [
                "alpha": .double(options.alpha), "temperature": .double(options.temperature),
                "experiences": .int(Int64(options.experiences)),
                "teacher_hidden": .string(options.teacher.hidden.map(String.init).joined(separator: ",")),
                "teacher_parameters": .int(Int64(teacherSpec?.parameterCount ?? 0)),
                "teacher_epochs": .int(Int64(options.teacher.epochs)), "teacher_lr": .double(options.teacher.lr),
                "teacher_momentum": .double(options.teacher.momentum), "teacher_batch_size": .int(Int64(options.teacher.batchSize)),
                "teacher_data": .string("pooled training sets of experiences 0...i, retrained before each distilled experience i"),
                "loss_convention": .string("alpha * T^2 * KL(softmax(z_teacher/T) || softmax(z_student/T)) + (1 - alpha) * CE, batch mean, rows with a task label"),
                "distilled_steps": .int(Int64(distilledSteps)),
            ],
            arrays: [
                "teacher_accuracy": .init(values: teacherAccuracy, attributes: ["meaning": .string("the teacher's accuracy on the pooled test sets of experiences 0...i, per distilled experience i")]),
                "teacher_training_flops": .init(values: teacherTrainingFLOPs, attributes: ["meaning": .string("epochs x samples x FLOPs per training sample of each teacher (not in the run's energy)")]),
            ])
    }
}

extension Distillation {
    /// `{"type": "distillation", "teacher": {"hidden": [64, 64], "epochs": 20, "lr": 0.05,
    /// "momentum": 0.9, "batch_size": 32}, "temperature": 4, "alpha": 0.9, "experiences": 1}`
    public struct Options: PluginOptions {
        public static let typeName = "distillation"
        public static let summary = "distil a larger teacher into the on-device student with soft targets at temperature T (Hinton et al. 2015), then personalise"
        public static let strengthKey: String? = "alpha"

        /// The teacher network and how it is trained.
        public struct Teacher: Codable, Sendable, Equatable {
            public var hidden: [Int] = [64, 64]
            public var epochs = 20
            public var lr = 0.05
            public var momentum = 0.9
            public var batchSize = 32

            public init(hidden: [Int] = [64, 64], epochs: Int = 20, lr: Double = 0.05, momentum: Double = 0.9, batchSize: Int = 32) {
                self.hidden = hidden
                self.epochs = epochs
                self.lr = lr
                self.momentum = momentum
                self.batchSize = batchSize
            }

            enum CodingKeys: String, CodingKey, CaseIterable { case hidden, epochs, lr, momentum, batchSize = "batch_size" }

            public init(from decoder: any Decoder) throws {
                let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
                hidden = try c.decode(.hidden, default: [64, 64])
                epochs = try c.decode(.epochs, default: 20)
                lr = try c.decode(.lr, default: 0.05)
                momentum = try c.decode(.momentum, default: 0.9)
                batchSize = try c.decode(.batchSize, default: 32)
                try c.require(!hidden.isEmpty && hidden.count <= 16 && hidden.allSatisfy { (1...4096).contains($0) }, .hidden,
                              "must list 1 to 16 hidden widths in 1…4096, got \(hidden)")
                try c.require((1...10_000).contains(epochs), .epochs, "must be in 1…10000, got \(epochs)")
                try c.require(lr > 0 && lr.isFinite, .lr, "must be a positive number, got \(lr)")
                try c.require(momentum >= 0 && momentum < 1, .momentum, "must be in [0, 1), got \(momentum)")
                try c.require((1...65_536).contains(batchSize), .batchSize, "must be in 1…65536, got \(batchSize)")
            }

            public func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(hidden, forKey: .hidden)
                try c.encode(epochs, forKey: .epochs)
                try c.encode(lr, forKey: .lr)
                try c.encode(momentum, forKey: .momentum)
                try c.encode(batchSize, forKey: .batchSize)
            }
        }

        public var teacher = Teacher()
        /// Temperature T > 0 of the soft targets (Hinton et al. use 1–20).
        public var temperature = 4.0
        /// Weight α ∈ [0, 1] of the soft term; 0 = the student trained directly.
        public var alpha = 0.9
        /// Experiences 0..<k the student distils on (the teacher is retrained before each).
        public var experiences = 1

        public init(teacher: Teacher = Teacher(), temperature: Double = 4, alpha: Double = 0.9, experiences: Int = 1) {
            self.teacher = teacher
            self.temperature = temperature
            self.alpha = alpha
            self.experiences = experiences
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case teacher, temperature, alpha, experiences }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            teacher = try c.decode(.teacher, default: Teacher())
            temperature = try c.decode(.temperature, default: 4.0)
            alpha = try c.decode(.alpha, default: 0.9)
            experiences = try c.decode(.experiences, default: 1)
            try c.require(temperature > 0 && temperature.isFinite && temperature <= 1e6, .temperature,
                          "must be a finite number in (0, 1e6], got \(temperature)")
            try c.require(alpha >= 0 && alpha <= 1, .alpha, "must be in [0, 1], got \(alpha)")
            try c.require(experiences >= 1, .experiences, "must be ≥ 1, got \(experiences)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(teacher, forKey: .teacher)
            try c.encode(temperature, forKey: .temperature)
            try c.encode(alpha, forKey: .alpha)
            try c.encode(experiences, forKey: .experiences)
        }

        public func makePlugin() -> any StrategyPlugin { Distillation(options: self) }
    }
}
