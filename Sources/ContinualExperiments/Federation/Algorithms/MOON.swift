import ContinualCore

/// MOON (Li, He & Song 2021, "Model-Contrastive Federated Learning", eq. 3–4; `"moon": {"mu": μ,
/// "temperature": τ}`). Client i's local objective adds to the task loss
///
///     ℓ_con = −log( exp(sim(z, z_glob)/τ) / (exp(sim(z, z_glob)/τ) + exp(sim(z, z_prev)/τ)) )
///
/// weighted by μ and averaged over the batch, z the sample's representation under the model being
/// trained, z_glob under the global model received this round and z_prev under the client's own
/// model at the end of its previous local round; sim is the cosine similarity (PyTorch's
/// `CosineSimilarity`, eps 10⁻⁸). It pulls the local representation towards the global one and
/// away from the client's previous one, against client drift on non-IID data.
///
/// Choices: the representation is the penultimate layer's activations (the paper's projection
/// head is not part of this MLP; add a hidden layer to play its part). On a client's first round
/// there is no previous model and ℓ_con is 0, as in the authors' code at round 0 (an empty pool of
/// previous models). The previous model is the one the client trained last, whether or not its
/// update reached the server (the authors keep every party's net). z_glob and z_prev carry no
/// gradient. Nothing travels besides the update.
struct MOON: FederatedAlgorithm {
    let config: MoonConfig

    init?(_ setup: AlgorithmSetup) {
        guard let moon = setup.fed.moon else { return nil }
        config = moon
    }

    func learnerPlugins() -> [any StrategyPlugin] { [MoonTerm(mu: config.mu, temperature: config.temperature)] }

    func beforeLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ upload: inout RoundEntry) throws {
        Self.update(&c) { $0.global = Array(round.global.prefix($0.representationParameters)) }
    }

    func afterLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ trained: TrainedRound,
                         _ upload: inout RoundEntry, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        let trainedModel = c.trainer.model.parameters
        Self.update(&c) { term in
            term.global = []
            term.previous = Array(trainedModel.prefix(term.representationParameters))
        }
        return nil
    }

    /// Changes the client's `MoonTerm`.
    static func update(_ c: inout FederatedClient, _ change: (inout MoonTerm) -> Void) {
        guard let k = c.trainer.plugins.lastIndex(where: { $0 is MoonTerm }), var term = c.trainer.plugins[k] as? MoonTerm else { return }
        change(&term)
        c.trainer.plugins[k] = term
    }
}

/// MOON's settings (`federation.moon`): μ, the contrastive term's weight (the paper tunes
/// {0.1, 1, 5, 10}), and τ, its temperature (0.5 in the paper).
public struct MoonConfig: Codable, Sendable, Equatable {
    public var mu: Double
    public var temperature = 0.5

    public init(mu: Double, temperature: Double = 0.5) {
        self.mu = mu
        self.temperature = temperature
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case mu, temperature }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        mu = try c.decode(Double.self, forKey: .mu)
        temperature = try c.decode(.temperature, default: 0.5)
        try c.require(mu > 0 && mu <= 1e6 && mu.isFinite, .mu, "must be a finite number in (0, 1e6] (the paper: 0.1, 1, 5 or 10), got \(mu)")
        try c.require(temperature >= 1e-3 && temperature <= 1e3, .temperature, "must be in [0.001, 1000] (the paper: 0.5), got \(temperature)")
    }
}

/// MOON's model-contrastive term on the learner (`MOON`): from the batch's rows, their
/// representations under the learner (with gradient), `global` and `previous` (parameters of the
/// hidden layers, a prefix of the model's), and the term's gradient added to the pass's parameter
/// gradient through the hidden layers. Empty `global` or `previous` (outside a federated round, or
/// a client's first) adds nothing.
struct MoonTerm: BatchLossTerm {
    var name: String { "moon" }
    let mu: Double
    let temperature: Double
    var global: [Float] = []
    var previous: [Float] = []
    /// The hidden layers as a network whose "logits" are the last hidden pre-activations.
    private var features: MLP?
    private var activation = Activation.relu
    private var workspace: Workspace?
    private(set) var representationParameters = 0
    private var batchSize = 0

    init(mu: Double, temperature: Double) {
        self.mu = mu
        self.temperature = temperature
    }

    mutating func prepare(model: inout MLP, context: RunContext) throws {
        let net = try model.penultimateNetwork(for: "MOON's contrastive term", training: context.training)
        representationParameters = net.parameterCount
        batchSize = context.training.batchSize
        features = net
        activation = model.spec.activation
    }

    mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        guard !global.isEmpty, !previous.isEmpty, let gradient = input.parameterGradient, var net = features else { return 0 }
        let n = input.rows.count
        guard n > 0 else { return 0 }
        if (workspace?.capacity ?? 0) < n { workspace = net.makeWorkspace(capacity: n) }
        let ws = workspace!
        var x: [Float] = []
        x.reserveCapacity(n * input.batch.dimension)
        for row in input.rows { x += input.batch.row(row) }
        let zGlobal = Self.represent(&net, global, x, n, activation, ws)
        let zPrevious = Self.represent(&net, previous, x, n, activation, ws)
        let z = Self.represent(&net, Array(input.model.parameters.prefix(representationParameters)), x, n, activation, ws)
        features = net
        let w = net.logitCount
        var dz = [Float](repeating: 0, count: n * w)
        var value = 0.0
        for r in 0..<n {
            let row = Self.contrastive(z: z[(r * w)..<((r + 1) * w)], global: zGlobal[(r * w)..<((r + 1) * w)],
                                       previous: zPrevious[(r * w)..<((r + 1) * w)], temperature: temperature)
            let weight = mu * Double(input.scale)
            value += weight * row.loss
            for j in 0..<w { dz[r * w + j] = Float(weight * row.gradient[j]) }
        }
        // Back through the activation (at z, its outputs) and the hidden layers, whose last
        // forward pass (above) was the learner's.
        z.withUnsafeBufferPointer { zz in
            dz.withUnsafeMutableBufferPointer { activation.backward(outputs: zz.baseAddress!, gradient: $0.baseAddress!, count: n * w) }
        }
        dz.withUnsafeMutableBufferPointer { net.backward(logitGradient: $0.baseAddress!, count: n, route: 0, workspace: ws, gradient: gradient) }
        return value
    }

    /// The rows' representations (penultimate activations) under `parameters`.
    static func represent(_ net: inout MLP, _ parameters: [Float], _ x: [Float], _ n: Int, _ activation: Activation,
                          _ ws: Workspace) -> [Float] {
        net.parameters = parameters
        x.withUnsafeBufferPointer { net.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
        var z = Array(UnsafeBufferPointer(start: ws.logits, count: n * net.logitCount))
        z.withUnsafeMutableBufferPointer { activation.apply($0.baseAddress!, count: $0.count) }
        return z
    }

    /// One row's ℓ_con = log(1 + exp((s_p − s_g)/τ)), s = cosine similarity (eps 10⁻⁸ on the
    /// product of norms), and ∂ℓ_con/∂z. In double precision.
    static func contrastive(z: ArraySlice<Float>, global: ArraySlice<Float>, previous: ArraySlice<Float>,
                            temperature tau: Double) -> (loss: Double, gradient: [Double]) {
        let (sg, dg) = cosine(z, global), (sp, dp) = cosine(z, previous)
        let d = (sp - sg) / tau
        // softplus(d), and its derivative σ(d), without overflow for large |d|.
        let loss = d > 0 ? d + _log1p(_exp(-d)) : _log1p(_exp(d))
        let sigma = d >= 0 ? 1 / (1 + _exp(-d)) : _exp(d) / (1 + _exp(d))
        return (loss, zip(dp, dg).map { sigma / tau * ($0 - $1) })
    }

    /// cos(z, y) = z·y / max(‖z‖‖y‖, 10⁻⁸) and its gradient with respect to z.
    static func cosine(_ z: ArraySlice<Float>, _ y: ArraySlice<Float>) -> (Double, [Double]) {
        var dot = 0.0, zz = 0.0, yy = 0.0
        for (a, b) in zip(z, y) {
            dot += Double(a) * Double(b)
            zz += Double(a) * Double(a)
            yy += Double(b) * Double(b)
        }
        let nz = zz.squareRoot(), ny = yy.squareRoot(), denominator = nz * ny
        guard denominator > 1e-8 else { return (dot / 1e-8, y.map { Double($0) / 1e-8 }) }
        let s = dot / denominator
        return (s, zip(z, y).map { Double($1) / denominator - s * Double($0) / zz })
    }

    var resources: PluginResources {
        // Three forward passes of the hidden layers (2 FLOPs per weight and row) and one backward
        // (4), per row of a batch.
        PluginResources(stateBytes: 4 * (global.count + previous.count), extraFLOPsPerStep: 10 * representationParameters * batchSize)
    }

    func report() -> PluginReport {
        PluginReport(attributes: ["mu": .double(mu), "temperature": .double(temperature),
                                  "representation": .string("penultimate activations; cosine similarity, eps 1e-8")])
    }

    func checkpointState() -> PluginState { PluginState(floats: ["global": global, "previous": previous]) }

    mutating func restore(from state: PluginState) throws {
        global = state.floats["global"] ?? []
        previous = state.floats["previous"] ?? []
    }
}
