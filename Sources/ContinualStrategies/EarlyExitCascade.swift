import ContinualCore

/// The decision rule and the per-prediction costs of a two-stage early-exit cascade: an exit
/// head on the first hidden layer's outputs answers a sample when its confidence is at least a
/// threshold τ; otherwise the rest of the network runs on the same hidden activations (they are
/// computed once) and the full model answers (BranchyNet, Teerapittayanon et al. 2016).
///
/// Confidence of the exit head's class probabilities p (binary: p = (1 − σ(z), σ(z))):
/// - `max_probability`: max_c p_c (BranchyNet's alternative; the usual rule in later work);
/// - `entropy`: 1 − H(p) / ln K, the normalised entropy turned into a confidence in [0, 1]
///   (BranchyNet exits when the entropy is *below* a threshold; this is the same rule with
///   τ = 1 − threshold / ln K, so both rules share the τ sweep's [0, 1] scale).
/// Both are computed in float64 from the float32 logits. A sample exits iff τ ≤ 1 and
/// confidence ≥ τ (a NaN confidence never exits). τ = 0 therefore answers every sample with the
/// exit head; τ > 1 never runs the exit head at all, so predictions *and costs* are exactly the
/// full model's.
///
/// Costs (the conventions of `MLP.flopsPerPrediction` and `TrainingTraffic.bytesPerPrediction`:
/// a multiply-add is 2 FLOPs, a bias add 1, activations `Activation.flopsPerUnit`; bytes are the
/// weights read once plus the activations written once, 4 B each). The confidence itself (a
/// softmax or sigmoid and a max or an entropy) is not counted, as the loss is not. With exit rate r:
/// FLOPs(τ ≤ 1) = F₀ + F_exit + (1 − r)·F_rest, FLOPs(τ > 1) = F₀ + F_rest = the full model's.
public struct EarlyExitCascade: Sendable, Equatable {
    /// How the exit head's confidence is measured.
    public enum Confidence: String, Codable, CaseIterable, Sendable {
        case maxProbability = "max_probability", entropy
    }

    public var head: OutputHead
    public var rule: Confidence
    /// FLOPs of the first hidden layer (shared by both paths).
    public var firstLayerFLOPs: Int
    /// FLOPs of the exit head (h·L multiply-adds plus L bias adds; no activation on logits).
    public var exitHeadFLOPs: Int
    /// FLOPs of the layers after the first (what an exit saves).
    public var restFLOPs: Int
    /// Bytes of the first layer: its weights and biases, the input and its outputs.
    public var firstLayerBytes: Int
    /// Bytes of the exit head: its weights, biases and logits.
    public var exitHeadBytes: Int
    /// Bytes of the layers after the first: their parameters and outputs.
    public var restBytes: Int

    /// Costs of a cascade on `model` (first layer dense, one route) with an exit head of
    /// `hidden × logitCount` weights.
    public init(model: MLP, rule: Confidence) {
        head = model.spec.head
        self.rule = rule
        func flops(_ l: Layer) -> Int { 2 * l.multiplyAddsPerSample + l.outputs * (1 + l.activation.flopsPerUnit) }
        let first = model.layers[0]
        let rest = model.layers.dropFirst()
        let h = first.outputs, k = model.logitCount
        firstLayerFLOPs = flops(first)
        restFLOPs = rest.reduce(0) { $0 + flops($1) }
        exitHeadFLOPs = 2 * h * k + k
        firstLayerBytes = 4 * (first.inputs * first.outputs + first.outputs + first.inputs + first.outputs)
        exitHeadBytes = 4 * (h * k + k + k)
        restBytes = 4 * rest.reduce(0) { $0 + $1.inputs * $1.outputs + 2 * $1.outputs }
    }

    /// FLOPs of the full model's prediction (`MLP.flopsPerPrediction` of a single-route model).
    public var fullFLOPs: Int { firstLayerFLOPs + restFLOPs }
    /// Bytes of the full model's prediction (`TrainingTraffic.bytesPerPrediction`).
    public var fullBytes: Int { firstLayerBytes + restBytes }

    /// Mean FLOPs per prediction at threshold `tau` when a fraction `exitRate` of samples exits.
    public func flopsPerPrediction(threshold tau: Double, exitRate: Double) -> Double {
        guard tau <= 1 else { return Double(fullFLOPs) }
        return Double(firstLayerFLOPs + exitHeadFLOPs) + (1 - exitRate) * Double(restFLOPs)
    }

    /// Mean bytes moved per prediction at threshold `tau` with exit rate `exitRate`.
    public func bytesPerPrediction(threshold tau: Double, exitRate: Double) -> Double {
        guard tau <= 1 else { return Double(fullBytes) }
        return Double(firstLayerBytes + exitHeadBytes) + (1 - exitRate) * Double(restBytes)
    }

    /// Confidence of one row of exit logits (`head.logitCount` values), in [0, 1] (NaN for
    /// non-finite logits).
    public func confidence(_ logits: UnsafePointer<Float>) -> Double {
        let p: [Double]
        switch head {
        case .binary:
            let z = Double(logits[0])
            guard z.isFinite else { return .nan }
            let s = z >= 0 ? 1 / (1 + _exp(-z)) : _exp(z) / (1 + _exp(z))
            p = [1 - s, s]
        case .multiclass(let k):
            var m = -Double.infinity
            for j in 0..<k {
                guard logits[j].isFinite else { return .nan }
                m = max(m, Double(logits[j]))
            }
            var e = (0..<k).map { _exp(Double(logits[$0]) - m) }
            let s = e.reduce(0, +)
            for j in 0..<k { e[j] /= s }
            p = e
        }
        switch rule {
        case .maxProbability:
            return p.max()!
        case .entropy:
            var h = 0.0
            for q in p where q > 0 { h -= q * _log(q) }
            return 1 - h / _log(Double(p.count))
        }
    }

    /// Whether a sample of confidence `c` exits at threshold `tau`.
    @inline(__always)
    public static func exits(confidence c: Double, threshold tau: Double) -> Bool {
        tau <= 1 && c >= tau
    }

    /// The cascade's answers for `count` samples given both heads' logits (row-major,
    /// `head.logitCount` per row): class, whether the exit answered, and (binary heads) the
    /// answering head's logit as the score.
    public func decide(exitLogits: [Float], fullLogits: [Float], count: Int, threshold tau: Double)
        -> (classes: [Int32], exited: [Bool], scores: [Float]?)
    {
        let k = head.logitCount
        precondition(exitLogits.count == count * k && fullLogits.count == count * k, "one row of logits per sample")
        var exitClasses = [Int32](repeating: 0, count: count), fullClasses = exitClasses
        exitLogits.withUnsafeBufferPointer { Loss.predictions(head: head, logits: $0.baseAddress!, count: count, into: &exitClasses) }
        fullLogits.withUnsafeBufferPointer { Loss.predictions(head: head, logits: $0.baseAddress!, count: count, into: &fullClasses) }
        var exited = [Bool](repeating: false, count: count)
        var classes = fullClasses
        var scores: [Float]? = k == 1 ? fullLogits : nil
        exitLogits.withUnsafeBufferPointer { e in
            for i in 0..<count where EarlyExitCascade.exits(confidence: confidence(e.baseAddress! + i * k), threshold: tau) {
                exited[i] = true
                classes[i] = exitClasses[i]
                if k == 1 { scores![i] = e[i] }
            }
        }
        return (classes, exited, scores)
    }
}
