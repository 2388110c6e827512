import ContinualCore

/// The generative half of brain-inspired replay (van de Ven, Siegelmann & Tolias 2020): what is
/// added to the classifier so that the classifier itself is a VAE ("replay through feedback").
///
/// - Encoder: the classifier's hidden layers (not here: the caller runs them and passes their
///   last activations h) → `toZ`, one linear layer to [μ | log σ²] (2·latent).
/// - Decoder: latent → the hidden widths reversed (ReLU) → one linear output per reconstructed
///   feature, one single-layer `MLP` per layer so each row can carry its own gates.
/// - Gates ("gating based on internal context"): per class c and per decoder hidden layer a fixed
///   0/1 mask, each unit 0 with probability `gateProportion` (the authors' `dg_prop`), drawn once
///   from a seeded stream. A row with class weights π uses the gate Σ_c π_c·mask_c (one-hot π: the
///   class's mask; the authors' soft gate for distilled replays), multiplying the ReLU output —
///   equal to gating the pre-activation, as the authors do, because ReLU is positively homogeneous.
/// - Prior ("conditional replay"): a Gaussian mixture with one learnable mode (means, log
///   variances, initialised N(0, 1) as in the authors' code) per class; with `conditional` off one
///   fixed N(0, I) mode. The KL term is the authors' single-sample estimate
///   log q(z|x) − log Σ_c π_c N(z; m_c, diag e^{s_c}), z the reparameterised sample.
/// - Per row: mean over features of the reconstruction loss (BCE on logits, or ½(l − x)²) plus
///   KL / features (the authors' `average=True` and division by the number of pixels).
struct FeedbackGenerator: Sendable, Equatable {
    var toZ: MLP
    var decoder: [MLP]
    var priorMeans: [Float]
    var priorLogVariances: [Float]
    /// Per decoder hidden layer: classes × units, 0 or 1.
    let gates: [[Float]]
    let latent: Int
    let modes: Int
    let conditional: Bool
    let reconstruction: VariationalAutoencoder.Reconstruction

    init(hidden: [Int], outputs: Int, classes: Int, latent: Int, conditional: Bool, gateProportion: Double,
         reconstruction: VariationalAutoencoder.Reconstruction, rng: inout RandomSource, gateRNG: inout RandomSource) {
        func layer(_ a: Int, _ b: Int) -> MLP {
            MLP(spec: MLPSpec(inputs: a, hidden: [], activation: .relu, head: b == 1 ? .binary : .multiclass(classes: b)), rng: &rng)
        }
        toZ = layer(hidden.last!, 2 * latent)
        let widths = [latent] + hidden.reversed() + [outputs]
        decoder = (0..<(widths.count - 1)).map { layer(widths[$0], widths[$0 + 1]) }
        self.latent = latent
        self.conditional = conditional
        modes = conditional ? classes : 1
        priorMeans = (0..<(modes * latent)).map { _ in conditional ? Float(rng.normal()) : 0 }
        priorLogVariances = (0..<(modes * latent)).map { _ in conditional ? Float(rng.normal()) : 0 }
        gates = hidden.reversed().map { w in
            (0..<(classes * w)).map { _ in gateProportion > 0 && gateRNG.uniform() < gateProportion ? 0 : 1 }
        }
        self.reconstruction = reconstruction
    }

    /// Trainable parameters, flat: toZ, the decoder's layers, the prior's means and log variances
    /// (the prior's only when `conditional`).
    var parameters: [Float] {
        get { toZ.parameters + decoder.flatMap(\.parameters) + (conditional ? priorMeans + priorLogVariances : []) }
        set {
            var o = 0
            func take(_ n: Int) -> [Float] { defer { o += n }; return Array(newValue[o..<(o + n)]) }
            toZ.parameters = take(toZ.parameterCount)
            for k in decoder.indices { decoder[k].parameters = take(decoder[k].parameterCount) }
            if conditional {
                priorMeans = take(priorMeans.count)
                priorLogVariances = take(priorLogVariances.count)
            }
        }
    }

    var parameterCount: Int {
        toZ.parameterCount + decoder.reduce(0) { $0 + $1.parameterCount } + (conditional ? 2 * modes * latent : 0)
    }

    var outputs: Int { decoder.last!.logitCount }

    /// The gate of each unit of decoder hidden layer `k` for class weights `pi` (one row).
    func gate(_ k: Int, pi: ArraySlice<Float>) -> [Float] {
        let w = gates[k].count / pi.count
        var g = [Float](repeating: 0, count: w)
        for (c, p) in zip(0..<pi.count, pi) where p != 0 {
            for u in 0..<w { g[u] += p * gates[k][c * w + u] }
        }
        return g
    }

    /// Decodes `z` ([n × latent]) with per-row class weights `pi` ([n × classes]); returns the
    /// workspaces (for `backward`), the gates used and the logits ([n × outputs]).
    func decode(_ z: [Float], pi: [Float], count n: Int) -> (spaces: [Workspace], gates: [[Float]], logits: [Float]) {
        let C = pi.count / max(n, 1)
        var a = z, spaces: [Workspace] = [], used: [[Float]] = []
        for (k, layer) in decoder.enumerated() {
            let ws = layer.makeWorkspace(capacity: n)
            a.withUnsafeBufferPointer { layer.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
            let w = layer.logitCount
            a = Array(UnsafeBufferPointer(start: ws.logits, count: n * w))
            spaces.append(ws)
            guard k < decoder.count - 1 else { break }
            var g = [Float](repeating: 1, count: n * w)
            for i in 0..<n {
                let row = gate(k, pi: pi[(i * C)..<((i + 1) * C)])
                for u in 0..<w {
                    g[i * w + u] = row[u]
                    a[i * w + u] = max(a[i * w + u], 0) * row[u]
                }
            }
            used.append(g)
        }
        return (spaces, used, a)
    }

    /// Back-propagates ∂L/∂logits through the decoder; adds ∂L/∂θ into `gradient` (the decoder's
    /// span of `parameters`) and returns ∂L/∂z.
    func decoderBackward(_ d: [Float], spaces: [Workspace], gates used: [[Float]], count n: Int,
                         gradient: UnsafeMutablePointer<Float>) -> [Float] {
        var offsets: [Int] = [], o = toZ.parameterCount
        for layer in decoder { offsets.append(o); o += layer.parameterCount }
        var delta = d
        for k in stride(from: decoder.count - 1, through: 0, by: -1) {
            let layer = decoder[k]
            if k < decoder.count - 1 {
                // y = relu(pre)·g: ∂y/∂pre = g·1[pre > 0]; pre is the layer's logits, still in its workspace.
                let pre = spaces[k].logits, w = layer.logitCount
                for i in 0..<(n * w) { delta[i] = pre[i] > 0 ? delta[i] * used[k][i] : 0 }
            }
            var dx = [Float](repeating: 0, count: n * layer.spec.inputs)
            delta.withUnsafeMutableBufferPointer { dp in
                dx.withUnsafeMutableBufferPointer {
                    layer.backward(logitGradient: dp.baseAddress!, count: n, route: 0, workspace: spaces[k],
                                   gradient: gradient + offsets[k], inputGradient: $0.baseAddress!)
                }
            }
            delta = dx
        }
        return delta
    }

    /// Σ_i w_i·(reconstruction_i + KL_i) for hidden activations `h` ([n × width]), targets `x`
    /// ([n × outputs]), class weights `pi` ([n × classes]) and noise ([n × latent]). With
    /// `gradient` (length `parameterCount`) adds ∂/∂θ there; with `hiddenGradient` ([n × width])
    /// adds ∂/∂h.
    func loss(h: [Float], x: [Float], pi: [Float], weights: [Float], noise: [Float],
              gradient: UnsafeMutablePointer<Float>? = nil, hiddenGradient: UnsafeMutablePointer<Float>? = nil) -> Double {
        let n = weights.count, Z = latent, D = outputs, C = pi.count / max(n, 1)
        guard n > 0 else { return 0 }
        let ws = toZ.makeWorkspace(capacity: n)
        h.withUnsafeBufferPointer { toZ.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
        let e = ws.logits
        let range = VariationalAutoencoder.logVarianceRange
        let z = VariationalAutoencoder.reparameterize(e, noise: noise, count: n, latent: Z)
        let modePi = conditional ? pi : [Float](repeating: 1, count: n)
        let (spaces, used, l) = decode(z, pi: pi, count: n)
        var dl = [Float](repeating: 0, count: n * D)
        var dz = [Double](repeating: 0, count: n * Z), dlv = [Double](repeating: 0, count: n * Z)
        var dPrior = [Double](repeating: 0, count: 2 * modes * Z)
        var total = 0.0
        for i in 0..<n {
            let w = Double(weights[i])
            var recon = 0.0
            for d in 0..<D {
                let t = reconstruction.term(Double(l[i * D + d]), Double(x[i * D + d]))
                recon += t.loss
                dl[i * D + d] = Float(w / Double(D) * t.gradient)
            }
            let kl = klEstimate(row: i, z: z, e: e, noise: noise, pi: modePi[(i * (conditional ? C : 1))...].prefix(conditional ? C : 1),
                                scale: w / Double(D), dz: &dz, dlv: &dlv, dPrior: &dPrior)
            total += w * (recon / Double(D) + kl / Double(D))
        }
        guard let gradient else { return total }
        let dzDecoder = decoderBackward(dl, spaces: spaces, gates: used, count: n, gradient: gradient)
        for i in 0..<n {
            for j in 0..<Z {
                let raw = e[i * 2 * Z + Z + j], g = dz[i * Z + j] + Double(dzDecoder[i * Z + j])
                let lv = Double(min(max(raw, range.lowerBound), range.upperBound))
                e[i * 2 * Z + j] = Float(g)
                e[i * 2 * Z + Z + j] = range.contains(raw) ? Float(g * Double(noise[i * Z + j]) * 0.5 * _exp(0.5 * lv) + dlv[i * Z + j]) : 0
            }
        }
        var dh = [Float](repeating: 0, count: n * toZ.spec.inputs)
        dh.withUnsafeMutableBufferPointer {
            toZ.backward(logitGradient: e, count: n, route: 0, workspace: ws, gradient: gradient, inputGradient: $0.baseAddress!)
        }
        if let hiddenGradient { for k in dh.indices { hiddenGradient[k] += dh[k] } }
        if conditional {
            let o = parameterCount - 2 * modes * Z
            for k in dPrior.indices { gradient[o + k] += Float(dPrior[k]) }
        }
        return total
    }
}
