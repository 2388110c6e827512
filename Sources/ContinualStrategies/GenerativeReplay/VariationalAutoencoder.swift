import ContinualCore

/// The generator of deep generative replay: a variational autoencoder (Kingma & Welling 2014)
/// made of two of the toolkit's MLPs, with its own Adam optimizer.
///
/// - Encoder: inputs → `hidden` (ReLU) → 2·`latent` linear outputs, read as [μ | log σ²].
/// - Decoder: `latent` → `hidden` reversed (ReLU) → one linear output per input feature: logits of
///   Bernoulli pixels (`bernoulli`, features in [0, 1]) or the means of unit-variance Gaussians
///   (`gaussian`, any real features).
/// - Loss per row (the negative ELBO): Σ_d reconstruction + Σ_j KL(N(μ_j, σ_j²) ‖ N(0, 1)), with
///   reconstruction softplus(l) − x·l (binary cross-entropy on logits) or ½(l − x)², and
///   KL = −½(1 + log σ² − μ² − σ²). A batch's loss is Σ_i w_i · loss_i with per-row weights
///   (the caller's mixture of current and replayed rows), in float64.
/// - Reparameterisation z = μ + exp(½ log σ²) · ε, ε ~ N(0, 1) from the caller's seeded source.
///   log σ² is clamped to [−20, 20] before use (its gradient is zero outside), so a diverging
///   encoder cannot produce ∞·0 = NaN; within that range the gradient is exact (tested against
///   finite differences).
/// - Samples: z ~ N(0, 1) through the decoder; the replayed input is the decoder's mean
///   (sigmoid of the logits, or the Gaussian mean), not a random draw from it, as in van de Ven
///   & Tolias's implementation.
public struct VariationalAutoencoder: Sendable {
    public enum Reconstruction: String, CaseIterable, Sendable, Codable { case bernoulli, gaussian }

    public internal(set) var encoder: MLP
    public internal(set) var decoder: MLP
    public let latent: Int
    public let reconstruction: Reconstruction
    var encoderOptimizer: Optimizer
    var decoderOptimizer: Optimizer

    static let logVarianceRange: ClosedRange<Float> = -20...20

    public init(dimension: Int, hidden: [Int], latent: Int, reconstruction: Reconstruction, learningRate: Float,
                rng: inout RandomSource) {
        let adam = OptimizerSpec.adam(learningRate: learningRate)
        encoder = MLP(spec: MLPSpec(inputs: dimension, hidden: hidden, activation: .relu,
                                    head: .multiclass(classes: 2 * latent)), rng: &rng)
        decoder = MLP(spec: MLPSpec(inputs: latent, hidden: hidden.reversed(), activation: .relu,
                                    head: dimension == 1 ? .binary : .multiclass(classes: dimension)), rng: &rng)
        self.latent = latent
        self.reconstruction = reconstruction
        encoderOptimizer = Optimizer(spec: adam, parameterCount: encoder.parameterCount)
        decoderOptimizer = Optimizer(spec: adam, parameterCount: decoder.parameterCount)
    }

    public var dimension: Int { encoder.spec.inputs }
    public var parameterCount: Int { encoder.parameterCount + decoder.parameterCount }

    /// The batch loss Σ_i w_i · loss_i of `x` ([n × dimension]) with the noise `noise`
    /// ([n × latent]); with `encoderGradient`/`decoderGradient` (zeroed by the caller), also adds
    /// its gradient into them.
    public func loss(_ x: [Float], weights: [Float], noise: [Float],
                     encoderGradient: UnsafeMutablePointer<Float>? = nil,
                     decoderGradient: UnsafeMutablePointer<Float>? = nil) -> Double {
        let n = weights.count, D = dimension, Z = latent
        precondition(x.count == n * D && noise.count == n * Z, "VAE batch sizes disagree")
        guard n > 0 else { return 0 }
        let encWS = encoder.makeWorkspace(capacity: n), decWS = decoder.makeWorkspace(capacity: n)
        x.withUnsafeBufferPointer { encoder.forward($0.baseAddress!, count: n, route: 0, workspace: encWS) }
        let e = encWS.logits
        let z = Self.reparameterize(e, noise: noise, count: n, latent: Z)
        z.withUnsafeBufferPointer { decoder.forward($0.baseAddress!, count: n, route: 0, workspace: decWS) }
        let l = decWS.logits
        var total = 0.0
        for i in 0..<n {
            let w = Double(weights[i])
            var rowLoss = 0.0
            for d in 0..<D {
                let t = reconstruction.term(Double(l[i * D + d]), Double(x[i * D + d]))
                rowLoss += t.loss
                l[i * D + d] = Float(w * t.gradient)
            }
            for j in 0..<Z {
                let mu = Double(e[i * 2 * Z + j])
                let lv = Double(min(max(e[i * 2 * Z + Z + j], Self.logVarianceRange.lowerBound), Self.logVarianceRange.upperBound))
                rowLoss += -0.5 * (1 + lv - mu * mu - _exp(lv))
            }
            total += w * rowLoss
        }
        guard let gEnc = encoderGradient, let gDec = decoderGradient else { return total }
        var dz = [Float](repeating: 0, count: n * Z)
        dz.withUnsafeMutableBufferPointer {
            decoder.backward(logitGradient: l, count: n, route: 0, workspace: decWS, gradient: gDec, inputGradient: $0.baseAddress!)
        }
        for i in 0..<n {
            let w = Double(weights[i])
            for j in 0..<Z {
                let mu = Double(e[i * 2 * Z + j])
                let raw = e[i * 2 * Z + Z + j]
                let inside = Self.logVarianceRange.contains(raw)
                let lv = Double(min(max(raw, Self.logVarianceRange.lowerBound), Self.logVarianceRange.upperBound))
                let g = Double(dz[i * Z + j])
                e[i * 2 * Z + j] = Float(g + w * mu)
                e[i * 2 * Z + Z + j] = inside
                    ? Float(g * Double(noise[i * Z + j]) * 0.5 * _exp(0.5 * lv) + w * 0.5 * (_exp(lv) - 1)) : 0
            }
        }
        encoder.backward(logitGradient: e, count: n, route: 0, workspace: encWS, gradient: gEnc)
        return total
    }

    /// z = μ + exp(½ log σ²)·ε for the rows [μ | log σ²] of `e`, log σ² clamped to `logVarianceRange`.
    static func reparameterize(_ e: UnsafePointer<Float>, noise: [Float], count n: Int, latent Z: Int) -> [Float] {
        var z = [Float](repeating: 0, count: n * Z)
        for i in 0..<n {
            for j in 0..<Z {
                let lv = min(max(e[i * 2 * Z + Z + j], logVarianceRange.lowerBound), logVarianceRange.upperBound)
                z[i * Z + j] = e[i * 2 * Z + j] + (0.5 * lv).exponential * noise[i * Z + j]
            }
        }
        return z
    }

    /// One Adam step on the batch loss; returns the loss before the step.
    @discardableResult
    public mutating func trainStep(_ x: [Float], weights: [Float], noise: [Float]) -> Double {
        var gEnc = [Float](repeating: 0, count: encoder.parameterCount)
        var gDec = [Float](repeating: 0, count: decoder.parameterCount)
        let value = gEnc.withUnsafeMutableBufferPointer { ge in
            gDec.withUnsafeMutableBufferPointer { gd in
                loss(x, weights: weights, noise: noise, encoderGradient: ge.baseAddress!, decoderGradient: gd.baseAddress!)
            }
        }
        gEnc.withUnsafeBufferPointer { encoderOptimizer.step(parameters: &encoder.parameters, gradient: $0.baseAddress!, trainable: nil) }
        gDec.withUnsafeBufferPointer { decoderOptimizer.step(parameters: &decoder.parameters, gradient: $0.baseAddress!, trainable: nil) }
        return value
    }

    /// `count` generated inputs ([count × dimension]): z ~ N(0, 1) through the decoder, its mean.
    public func generate(count: Int, rng: inout RandomSource) -> [Float] {
        Self.generate(decoder: decoder, latent: latent, reconstruction: reconstruction, count: count, rng: &rng)
    }

    /// The same with a stored decoder (the previous experience's generator keeps only its decoder).
    public static func generate(decoder: MLP, latent: Int, reconstruction: Reconstruction, count: Int,
                                rng: inout RandomSource) -> [Float] {
        guard count > 0 else { return [] }
        let D = decoder.logitCount
        let z = (0..<(count * latent)).map { _ in Float(rng.normal()) }
        let ws = decoder.makeWorkspace(capacity: count)
        z.withUnsafeBufferPointer { decoder.forward($0.baseAddress!, count: count, route: 0, workspace: ws) }
        var out = [Float](repeating: 0, count: count * D)
        for k in 0..<(count * D) {
            let l = ws.logits[k]
            out[k] = reconstruction == .bernoulli ? (l >= 0 ? 1 / (1 + (-l).exponential) : l.exponential / (1 + l.exponential)) : l
        }
        return out
    }

    /// Parameters and both optimizers' state, for checkpoints.
    func state(into s: inout PluginState, prefix: String) {
        s.floats[prefix + ".encoder"] = encoder.parameters
        s.floats[prefix + ".decoder"] = decoder.parameters
        for (name, o) in [("encoder", encoderOptimizer), ("decoder", decoderOptimizer)] {
            s.floats[prefix + ".adam.\(name).first"] = o.first
            s.floats[prefix + ".adam.\(name).second"] = o.second
            s.ints[prefix + ".adam.\(name).steps"] = [Int64(o.steps)]
        }
    }

    mutating func restore(from s: PluginState, prefix: String) throws {
        guard let e = s.floats[prefix + ".encoder"], e.count == encoder.parameterCount,
              let d = s.floats[prefix + ".decoder"], d.count == decoder.parameterCount else {
            throw CheckpointError.mismatch("generative_replay's generator does not match this configuration")
        }
        encoder.parameters = e
        decoder.parameters = d
        func optimizer(_ name: String, _ o: Optimizer) throws -> Optimizer {
            try Optimizer(spec: o.spec, parameterCount: o.parameterCount,
                          first: s.floats[prefix + ".adam.\(name).first"] ?? [],
                          second: s.floats[prefix + ".adam.\(name).second"] ?? [],
                          steps: Int(s.ints[prefix + ".adam.\(name).steps"]?.first ?? 0))
        }
        encoderOptimizer = try optimizer("encoder", encoderOptimizer)
        decoderOptimizer = try optimizer("decoder", decoderOptimizer)
    }
}

extension VariationalAutoencoder.Reconstruction {
    /// One feature's loss for the decoder output l (a logit, or the Gaussian mean) and target x,
    /// with ∂/∂l: softplus(l) − x·l and σ(l) − x, or ½(l − x)² and l − x.
    @inline(__always)
    func term(_ l: Double, _ x: Double) -> (loss: Double, gradient: Double) {
        switch self {
        case .bernoulli: return (max(l, 0) - x * l + _log1p(_exp(-abs(l))), (l >= 0 ? 1 / (1 + _exp(-l)) : _exp(l) / (1 + _exp(l))) - x)
        case .gaussian: return (0.5 * (l - x) * (l - x), l - x)
        }
    }

    /// Why `method` cannot model these training features (`bernoulli` needs them in [0, 1]), or nil.
    func refusal(_ f: [Float], dimension: Int, method: String, experience: Int) -> String? {
        guard self == .bernoulli, let k = f.firstIndex(where: { !($0 >= 0 && $0 <= 1) }) else { return nil }
        return "\(method): reconstruction \"bernoulli\" models features in [0, 1], but feature \(k % max(dimension, 1)) of a training sample of experience \(experience) is \(f[k]); use \"reconstruction\": \"gaussian\""
    }
}

private extension Float {
    var exponential: Float { Float(_exp(Double(self))) }
}
