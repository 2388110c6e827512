/// An int8 weight-quantised copy of an `MLP` for inference (post-training quantisation).
///
/// Weights are stored as symmetric int8, q = round(w / s) clamped to [−127, 127], with one scale
/// per tensor (s = max|W| / 127) or one per output channel (s_j = max_k |W[k, j]| / 127); biases and
/// activations stay float32 (weight-only quantisation, the common on-device choice for small
/// MLPs). Each weight is then off by at most s/2, and `outputErrorBound` propagates that through
/// the network by interval arithmetic, giving a guaranteed bound on |logit_int8 − logit_float|
/// for a given input (up to float32 rounding of the bound itself, below 1e-5 relative here).
public struct QuantizedMLP: Sendable, Equatable {
    public enum Granularity: String, Sendable, Codable, CaseIterable {
        case perTensor = "per_tensor"
        case perChannel = "per_channel"
    }

    public let spec: MLPSpec
    public let layers: [Layer]
    public let granularity: Granularity
    /// int8 weights, same layout as the float model's weights (biases excluded).
    public let weights: [Int8]
    /// Per layer and copy: `outputs` scales (per channel) or 1 scale repeated (per tensor).
    public let scales: [Float]
    public let biases: [Float]
    private let weightOffsets: [[Int]]   // [layer][copy] → index into `weights`
    private let scaleOffsets: [[Int]]    // [layer][copy] → index into `scales` (and `biases`)

    /// Why `model` cannot be quantised by this type, or nil if it can (plain dense layers only:
    /// adapters and LoRA updates would need their own scales).
    public static func unsupportedReason(_ model: MLP) -> String? {
        if model.layers.contains(where: { $0.kind != .dense }) { return "int8 quantisation supports dense layers only (the model has adapters)" }
        if model.layers.contains(where: { $0.lowRank != nil }) {
            return "int8 quantisation supports dense layers only (the model has low-rank updates: LoRA, or `low_rank` factors)"
        }
        return nil
    }

    /// Quantises `model`; it must be plain dense (see `unsupportedReason`).
    public init(_ model: MLP, granularity: Granularity) {
        precondition(QuantizedMLP.unsupportedReason(model) == nil, QuantizedMLP.unsupportedReason(model) ?? "")
        spec = model.spec
        layers = model.layers
        self.granularity = granularity
        var w: [Int8] = [], s: [Float] = [], b: [Float] = []
        var wo: [[Int]] = [], so: [[Int]] = []
        for layer in model.layers {
            var wl: [Int], sl: [Int]
            (wl, sl) = ([], [])
            for copy in 0..<layer.copies {
                wl.append(w.count)
                sl.append(s.count)
                let base = layer.weightOffset(route: copy)
                var channelScales = [Float](repeating: 0, count: layer.outputs)
                for j in 0..<layer.outputs {
                    var m: Float = 0
                    for k in 0..<layer.inputs { m = max(m, abs(model.parameters[base + k * layer.outputs + j])) }
                    channelScales[j] = m
                }
                if granularity == .perTensor {
                    let m = channelScales.max() ?? 0
                    channelScales = [Float](repeating: m, count: layer.outputs)
                }
                channelScales = channelScales.map { $0 > 0 ? $0 / 127 : 1 }
                for k in 0..<layer.inputs {
                    for j in 0..<layer.outputs {
                        let v = model.parameters[base + k * layer.outputs + j] / channelScales[j]
                        w.append(Int8(max(-127, min(127, v.rounded(.toNearestOrEven)))))
                    }
                }
                s.append(contentsOf: channelScales)
                b.append(contentsOf: model.parameters[layer.biasRange(route: copy)])
            }
            wo.append(wl)
            so.append(sl)
        }
        weights = w
        scales = s
        biases = b
        weightOffsets = wo
        scaleOffsets = so
    }

    /// Bytes to store the quantised model: int8 weights, float32 scales (one per tensor or per
    /// channel) and float32 biases.
    public var modelBytes: Int {
        let scaleCount = granularity == .perChannel ? scales.count : layers.reduce(0) { $0 + $1.copies }
        return weights.count + 4 * scaleCount + 4 * biases.count
    }

    /// Logits of one sample through `route`.
    public func logits(_ x: [Float], route: Int) -> [Float] {
        var h = x
        for (l, layer) in layers.enumerated() {
            let copy = layer.copyIndex(route: route)
            let wo = weightOffsets[l][copy], so = scaleOffsets[l][copy]
            var out = [Float](repeating: 0, count: layer.outputs)
            for j in 0..<layer.outputs {
                var acc: Float = 0
                for k in 0..<layer.inputs { acc += h[k] * Float(weights[wo + k * layer.outputs + j]) }
                out[j] = acc * scales[so + j] + biases[so + j]
            }
            out.withUnsafeMutableBufferPointer { layer.activation.apply($0.baseAddress!, count: layer.outputs) }
            h = out
        }
        return h
    }

    /// Guaranteed bound on |logit_int8 − logit_float| per logit for input `x`, by interval
    /// propagation: a layer's output moves by at most Σ_k |x_k|·s_j/2 + Σ_k |W_kj|·δ_k (δ = the
    /// bound on its inputs), activations are 1-Lipschitz (ReLU, tanh, identity; sigmoid ¼).
    public func outputErrorBound(_ x: [Float], model: MLP, route: Int) -> [Double] {
        var h = x.map(Double.init)      // float activations
        var delta = [Double](repeating: 0, count: x.count)
        for (l, layer) in layers.enumerated() {
            let copy = layer.copyIndex(route: route)
            let so = scaleOffsets[l][copy]
            let base = layer.weightOffset(route: copy)
            var next = [Double](repeating: 0, count: layer.outputs)
            var nextDelta = [Double](repeating: 0, count: layer.outputs)
            for j in 0..<layer.outputs {
                var z = Double(model.parameters[layer.biasOffset(route: copy) + j])
                var d = 0.0
                let halfStep = Double(scales[so + j]) / 2
                for k in 0..<layer.inputs {
                    let wkj = Double(model.parameters[base + k * layer.outputs + j])
                    z += h[k] * wkj
                    d += (abs(h[k]) + delta[k]) * halfStep + abs(wkj) * delta[k]
                }
                let lipschitz = layer.activation == .sigmoid ? 0.25 : 1.0
                switch layer.activation {
                case .identity: next[j] = z
                case .relu: next[j] = max(z, 0)
                case .tanh: next[j] = _tanh(z)
                case .sigmoid: next[j] = 1 / (1 + _exp(-z))
                }
                nextDelta[j] = lipschitz * d
            }
            h = next
            delta = nextDelta
        }
        return delta
    }

    /// Fraction of `samples` classified correctly through `route`.
    public func accuracy(on samples: Samples, route: Int) -> Double {
        guard !samples.isEmpty else { return .nan }
        var correct = 0
        var prediction: Int32 = 0
        for i in 0..<samples.count {
            let z = logits(Array(samples.row(i)), route: route)
            z.withUnsafeBufferPointer { Loss.predictions(head: spec.head, logits: $0.baseAddress!, count: 1, into: &prediction) }
            if prediction == samples.labels[i] { correct += 1 }
        }
        return Double(correct) / Double(samples.count)
    }
}

extension QuantizedMLP {
    /// Replaces every dense weight of `model` by its symmetric int8 value w_q = s·round(w/s)
    /// (same scales as `init`, per tensor or per output channel); biases stay float32. This is
    /// the "fake quantisation" of quantisation-aware training: the float model computes exactly
    /// what the int8 model would. Adapters and LoRA blocks are left in float.
    public static func fakeQuantize(_ model: inout MLP, granularity: Granularity) {
        let layers = model.layers
        model.parameters.withUnsafeMutableBufferPointer { p in
            for layer in layers where layer.kind == .dense {
                for copy in 0..<layer.copies {
                    let base = layer.offset + copy * layer.parametersPerCopy
                    var scales = [Float](repeating: 0, count: layer.outputs)
                    for k in 0..<layer.inputs {
                        for j in 0..<layer.outputs { scales[j] = max(scales[j], abs(p[base + k * layer.outputs + j])) }
                    }
                    if granularity == .perTensor {
                        let m = scales.max() ?? 0
                        scales = [Float](repeating: m, count: layer.outputs)
                    }
                    for j in 0..<layer.outputs { scales[j] = scales[j] > 0 ? scales[j] / 127 : 1 }
                    for k in 0..<layer.inputs {
                        for j in 0..<layer.outputs {
                            let i = base + k * layer.outputs + j
                            let q = max(-127, min(127, (p[i] / scales[j]).rounded(.toNearestOrEven)))
                            p[i] = q * scales[j]
                        }
                    }
                }
            }
        }
    }
}
