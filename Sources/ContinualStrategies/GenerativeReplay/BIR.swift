import ContinualCore

/// Brain-inspired replay, BI-R (van de Ven, Siegelmann & Tolias, Nature Communications 11:4069,
/// 2020), on top of deep generative replay; checked against the authors' code
/// (GMvandeVen/brain-inspired-replay: `models/vae.py`, `train.py`, `options.py`), none copied.
///
/// - Replay through feedback: the classifier (the run's model) is the VAE's encoder. Its hidden
///   layers feed both its head and `FeedbackGenerator.toZ`; the VAE loss of every row (current
///   and replayed) is back-propagated through the hidden layers into the pass's parameter gradient,
///   so the run's optimizer trains the shared layers on classification + VAE loss, as the authors'
///   single loss does. There is no separate generator network to copy.
/// - Conditional replay: a Gaussian-mixture prior, one learnable mode per class; a replayed row's
///   class is drawn uniformly among the classes of the finished experiences, z from its mode.
/// - Gating based on internal context: fixed random per-class masks on the decoder's hidden units
///   (`gate_proportion` of them off, the authors' `dg_prop` = 0.8 for split and permuted MNIST).
/// - Distillation: replayed rows are trained on the previous model's softmax(z/T) (T = 2) with the
///   KD loss scaled by T² over the run's active classes (zeros for the new classes), replacing the
///   loop's cross-entropy on them; for the VAE terms of a replayed row the same soft targets weight
///   the prior's modes and the class gates (the authors' `y_prob` and soft `gate_input`).
/// - Internal replay (`internal_replay`) is off by default: the authors apply it after
///   convolutional layers only (the option is not offered for MNIST). On, the first hidden layer
///   plays those layers: frozen after the first experience, its activations are what the VAE
///   reconstructs and replays (`BIR+Internal.swift`).
///
/// Weighting, as the authors' `rnt`: (1/t)·(CE + VAE on current rows) + (1 − 1/t)·(KD + VAE on
/// replayed rows), each a mean over its rows (`weighting: equal` = plain mean over all rows).
/// toZ, the decoder and the prior train with the plugin's own Adam (`lr`, β = 0.9, 0.999), taking one
/// step per training step; the shared hidden layers and the head with the run's optimizer.
/// Refused: models without hidden layers (two with internal replay), binary heads, several routes
/// (multi-head), adapters/LoRA, mixed precision (the VAE gradient is added in float32).
public struct BIR: BatchLossTerm {
    public var name: String { Options.typeName }
    public let options: Options
    var generator: FeedbackGenerator?
    var previousGenerator: FeedbackGenerator?
    var previousModel: MLP?
    var optimizer: Optimizer?
    /// The VAE's encoder: the model's hidden layers (above the frozen first one with internal
    /// replay), its parameters those of the model from `encoderOffset` on.
    var encoder: MLP?
    var encoderOffset = 0
    /// Internal replay: the first layer (`below`), everything above it (`above`, the head included),
    /// the previous model's `above`, and this step's replayed first-layer activations.
    var below: MLP?, above: MLP?, previousAbove: MLP?
    var replayLevel: [Float] = []
    var template: MLP?
    var activation = Activation.relu
    /// Classes of the finished experiences (the previous model's).
    var seen: [Bool] = []
    /// Parameters of the first layer (frozen after the first experience with internal replay).
    var frozenCount = 0
    var noise = RandomSource(seed: 0)
    var batchSize = 1, dimension = 0
    var ownRows = 0, replayedRows = 0, task = 1
    /// Per replayed row of this step: the class weights (soft targets, or one-hot of the hard label).
    var replayTargets: [[Double]] = []
    var lossSum = 0.0, steps = 0
    var losses: [Double] = []

    public init(options: Options = Options()) { self.options = options }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        encoder = try model.penultimateNetwork(for: "bir (replay through feedback)", training: context.training)
        encoderOffset = 0
        guard case .multiclass(let classes) = model.spec.head, classes >= 2 else {
            throw TrainingError.invalid("bir needs a multiclass head (one prior mode and gate per class); this stream's head is binary")
        }
        guard model.routeCount == 1 else {
            throw TrainingError.invalidSetting(path: ".model.multi_head", message: "bir needs a single route (one shared head, no task copies): its classes share one prior and one decoder; the model has \(model.routeCount) routes")
        }
        template = model
        activation = model.spec.activation
        dimension = context.dimension
        batchSize = context.training.batchSize
        var rng = context.randomSource("bir.init"), gateRNG = context.randomSource("bir.gates")
        var hidden = model.spec.hidden, outputs = context.dimension
        if options.internalReplay {
            try setUpInternalReplay(model: model, training: context.training)
            outputs = hidden.removeFirst()
        }
        generator = FeedbackGenerator(hidden: hidden, outputs: outputs, classes: classes,
                                      latent: options.latent, conditional: options.conditional,
                                      gateProportion: options.gates ? options.gateProportion : 0,
                                      reconstruction: options.reconstruction, rng: &rng, gateRNG: &gateRNG)
        optimizer = Optimizer(spec: .adam(learningRate: Float(options.learningRate)), parameterCount: generator!.parameterCount)
        noise = context.randomSource("bir.noise")
        previousGenerator = nil
        previousModel = nil
        previousAbove = nil
        seen = [Bool](repeating: false, count: classes)
        losses = []
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        task = context.index + 1
        lossSum = 0
        steps = 0
        if options.internalReplay { freezeBelow(model: &model, experience: context.index) }
        if let refusal = options.reconstruction.refusal(context.experience.train.features, dimension: dimension,
                                                        method: Options.typeName, experience: context.index) {
            throw TrainingError.invalidSetting(path: ".strategy.reconstruction", message: refusal)
        }
    }

    public mutating func extendBatch(_ batch: inout Batch, context: ExperienceContext) {
        ownRows = batch.ownCount
        replayedRows = 0
        replayTargets = []
        replayLevel = []
        let classes = seen.indices.filter { seen[$0] }
        guard let old = previousGenerator, let solver = previousModel, !classes.isEmpty, ownRows > 0 else { return }
        let rep = options.replayPerBatch ?? ownRows, D = old.outputs, C = seen.count
        let (rows, drawn) = old.generate(classes: classes, classCount: C, count: rep, rng: &noise)
        let scorer = options.internalReplay ? previousAbove! : solver
        let ws = scorer.makeWorkspace(capacity: rep)
        rows.withUnsafeBufferPointer { scorer.forward($0.baseAddress!, count: rep, route: 0, workspace: ws) }
        for k in 0..<rep {
            let z = ws.logits + k * C
            var label = drawn[k]
            if options.distillation {
                replayTargets.append(FeedbackGenerator.softTargets(logits: z, seen: seen, temperature: options.temperature))
            } else {
                label = classes.max { z[$0] < z[$1] }!
                replayTargets.append((0..<C).map { $0 == label ? 1 : 0 })
            }
            // Internal replay: the rows are first-layer activations, trained by this plugin.
            if !options.internalReplay { batch.append(features: rows[(k * D)..<((k + 1) * D)], label: Int32(label), route: context.route) }
        }
        if options.internalReplay { replayLevel = rows }
        replayedRows = rep
    }

    /// (weight of the current rows, weight of the replayed rows) in the loss.
    func mixture() -> (Double, Double) {
        guard replayedRows > 0 else { return (1, 0) }
        switch options.weighting {
        case .inverseTask: return (1 / Double(task), 1 - 1 / Double(task))
        case .equal:
            let n = Double(ownRows + replayedRows)
            return (Double(ownRows) / n, Double(replayedRows) / n)
        }
    }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        guard generator != nil, let gradient = input.parameterGradient else { return 0 }
        var rows = VAERows()
        var value = classificationTerms(input, into: &rows)
        if options.internalReplay {
            rows.x = levelInputs(rows.x, model: input.model)
            value += internalReplayTerms(input, gradient: gradient, into: &rows)
        }
        return value + vaeStep(rows, model: input.model, gradient: gradient)
    }

    /// The rows of the VAE loss: inputs at the replayed level, class weights π and row weights.
    struct VAERows { var x: [Float] = [], pi: [Float] = [], weights: [Float] = [] }

    /// Reweights the loop's CE on own rows to (1/t)/own each; on appended replayed rows replaces it
    /// by the distillation term (or reweights it, hard labels) at (1 − 1/t)/replayed; collects the
    /// rows' inputs, class weights and weights for the VAE loss.
    mutating func classificationTerms(_ input: BatchLossInput, into rows: inout VAERows) -> Double {
        let L = input.logitCount, scale = Double(input.scale), own = input.batch.ownCount
        let (wc, wr) = mixture()
        var value = 0.0
        for (k, row) in input.rows.enumerated() {
            let replayed = row >= own
            let w = replayed ? wr / Double(replayedRows) : wc / Double(max(own, 1))
            let label = Int(input.batch.labels[row])
            let z = input.logits + k * L, g = input.logitGradient + k * L
            if replayed && options.distillation {
                let t = replayTargets[row - own]
                let loop = RowLoss.loopCrossEntropy(z, L: L, label: label, active: input.activeClasses)
                let loopGrad = RowLoss.ceGradient(loop.p, label: label)
                let kd = FeedbackGenerator.distillation(logits: z, targets: t, active: input.activeClasses,
                                                        temperature: options.temperature)
                for c in 0..<L { g[c] += Float(w * kd.gradient[c] - scale * loopGrad[c]) }
                value += w * kd.loss - scale * loop.loss
                rows.pi += t.map(Float.init)
            } else {
                if w != scale { for c in 0..<L { g[c] *= Float(w / scale) } }
                rows.pi += replayed ? replayTargets[row - own].map(Float.init)
                    : (0..<L).map { $0 == label ? 1 : 0 }
            }
            rows.weights.append(label >= 0 && label < L ? Float(w) : 0)
            rows.x += input.batch.row(row)
        }
        return value
    }

    /// The VAE loss of `rows` through the shared encoder: its gradient goes into the model's
    /// `gradient` (from `encoderOffset`), toZ, the decoder and the prior take one Adam step.
    mutating func vaeStep(_ rows: VAERows, model: MLP, gradient: UnsafeMutablePointer<Float>) -> Double {
        guard var gen = generator, var net = encoder, !rows.weights.isEmpty else { return 0 }
        let n = rows.weights.count, H = net.logitCount, o = encoderOffset
        net.parameters.withUnsafeMutableBufferPointer { p in
            model.parameters.withUnsafeBufferPointer { p.baseAddress!.update(from: $0.baseAddress! + o, count: p.count) }
        }
        encoder = net
        let ws = net.makeWorkspace(capacity: n)
        rows.x.withUnsafeBufferPointer { net.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
        var h = Array(UnsafeBufferPointer(start: ws.logits, count: n * H))
        h.withUnsafeMutableBufferPointer { activation.apply($0.baseAddress!, count: n * H) }
        let eps = (0..<(n * gen.latent)).map { _ in Float(noise.normal()) }
        var genGradient = [Float](repeating: 0, count: gen.parameterCount), dh = [Float](repeating: 0, count: n * H)
        let vae = genGradient.withUnsafeMutableBufferPointer { gp in
            dh.withUnsafeMutableBufferPointer { dp in
                gen.loss(h: h, x: rows.x, pi: rows.pi, weights: rows.weights, noise: eps, gradient: gp.baseAddress!,
                         hiddenGradient: dp.baseAddress!)
            }
        }
        h.withUnsafeBufferPointer { hp in dh.withUnsafeMutableBufferPointer { activation.backward(outputs: hp.baseAddress!, gradient: $0.baseAddress!, count: n * H) } }
        dh.withUnsafeMutableBufferPointer { net.backward(logitGradient: $0.baseAddress!, count: n, route: 0, workspace: ws, gradient: gradient + o) }
        var p = gen.parameters
        genGradient.withUnsafeBufferPointer { optimizer!.step(parameters: &p, gradient: $0.baseAddress!, trainable: nil) }
        gen.parameters = p
        generator = gen
        lossSum += vae
        steps += 1
        return vae
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        for y in context.experience.train.labels where y >= 0 && Int(y) < seen.count { seen[Int(y)] = true }
        previousModel = model
        previousGenerator = generator
        if options.internalReplay { previousAbove = Self.above(of: model, template: above!, frozen: frozenCount) }
        losses.append(steps > 0 ? lossSum / Double(steps) : .nan)
    }
}
