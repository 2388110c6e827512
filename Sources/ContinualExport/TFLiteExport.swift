import ContinualCore

/// Writes an `ExportedNetwork` as a LiteRT (TensorFlow Lite) model, `.tflite`, for Android's
/// LiteRT interpreter (and any TFLite runtime), with builtin operators only.
///
/// Graph (subgraph 0, signature `serving_default`): input `features` float32 [N, d] (shape
/// [1, d], shape signature [−1, d]: any batch after `resizeInput`) →
/// - dense stage → `FULLY_CONNECTED` (weights [out × in], the transpose of the toolkit's
///   [in × out]: TFLite's FC computes y = x·Wᵀ + b with W stored one output per row; bias [out];
///   no fused activation) → a separate `RELU`, `TANH` or `LOGISTIC` operator (identity: none).
///   The activation is its own operator rather than FC's fused activation because the fused
///   field only covers RELU-like clamps and TANH, not the sigmoid, and one rule for all keeps
///   the graph readable;
/// - int8 dense stage → `DEQUANTIZE` of an int8 constant [out × in] with symmetric quantisation
///   (zero point 0, one scale per output channel along dimension 0, or one scale per tensor) →
///   float32 weights → `FULLY_CONNECTED` as above. Weight-only quantisation as the toolkit's
///   `QuantizedMLP` (w = q·s, activations float32). An FC fed int8 weights directly would run
///   TFLite's *hybrid* kernel, which also quantises the activations (the problem the ONNX
///   exporter avoids with Cast + Mul), so the weights are dequantised first;
/// - adapter stage → `FULLY_CONNECTED` (down, bias b_down) → activation → `FULLY_CONNECTED` (up,
///   bias b_up) → `ADD` with the stage's input (the residual);
/// - multiclass head → `SOFTMAX` (beta 1) of `logits` → `probabilities`; binary head (one logit)
///   → `LOGISTIC` (σ(z)) → `SUB` (1 − σ(z), a constant 1 [1, 1] broadcast) → `CONCATENATION`
///   on axis 1 → `probabilities` [N, 2], as the toolkit's `Loss.probabilities`;
/// - core only (`ExportedNetwork.core()`): the last hidden activations are the single output
///   `embedding`.
/// Outputs: `logits` [N, K] and `probabilities` [N, classes]. Tensor names follow the ONNX
/// exporter (`dense<i>.weight`, `dense<i>.bias`, `dense<i>.weight_int8`, `adapter<i>.down.weight`,
/// …); `Model.metadata` holds `continualkit.layer_sizes`, `.head`, `.route`, `.parts` and what the
/// caller adds, each a buffer of UTF-8 text.
///
/// What cannot be exported is refused before this point, with the ONNX exporter's reasons
/// (`ExportedNetwork.unsupportedReason`: routes chosen per sample, int8 with adapters or LoRA).
public enum TFLiteExport {
    /// The signature of the inference subgraph (what `get_signature_runner()` picks by default).
    public static let inferenceSignature = "serving_default"

    /// The `.tflite` bytes of `network`; `metadata` is appended to `Model.metadata`.
    public static func model(_ network: ExportedNetwork, description: String = "", metadata: [(String, String)] = []) -> [UInt8] {
        var m = TFLiteModel()
        var g = TFLiteModel.Subgraph(name: "main")
        let outputs = inference(network, into: &g)
        m.subgraphs = [g]
        m.signatures = [TFLiteModel.Signature(key: inferenceSignature, subgraph: 0, inputs: [("features", g.inputs[0])],
                                              outputs: outputs)]
        m.description = description.isEmpty ? "ContinualKit MLP, route \(network.route)" : description
        m.metadata = metadataEntries(network) + metadata
        return m.serialized()
    }

    /// The metadata every export carries (as the ONNX exporter's `metadata_props`).
    static func metadataEntries(_ network: ExportedNetwork) -> [(String, String)] {
        let sizes = [network.inputs] + network.denseStages.map(\.outputs)
        return [
            ("continualkit.layer_sizes", sizes.map(String.init).joined(separator: ",")),
            ("continualkit.head", ONNXExport.headText(network.head)),
            ("continualkit.route", String(network.route)),
            ("continualkit.parts", network.includesHead ? "all" : "core"),
        ]
    }

    /// Appends the inference graph of `network` to `g` (input `features`) and returns the named
    /// outputs (also set as the subgraph's outputs). `variables`, if given, may supply a dense
    /// layer's weight [out × in] or bias tensor (by dense index: the trainable model's variables)
    /// instead of constants.
    @discardableResult
    static func inference(_ network: ExportedNetwork, into g: inout TFLiteModel.Subgraph,
                          variables: ((inout TFLiteModel.Subgraph, Int) -> (weight: Int32?, bias: Int32?))? = nil) -> [(name: String, tensor: Int32)] {
        let features = g.tensor("features", shape: [network.inputs], batch: true)
        g.inputs = [features]
        var current = features
        let lastDense = network.includesHead ? network.stages.lastIndex { if case .dense = $0 { return true } else { return false } } ?? -1 : -1
        let lastStage = network.stages.count - 1
        // The output name of a stage's final tensor: `logits` for the output layer, `embedding`
        // for the last stage of a core-only graph.
        func finalName(_ s: Int, _ otherwise: String) -> String {
            if s == lastDense { return "logits" }
            if !network.includesHead && s == lastStage { return "embedding" }
            return otherwise
        }
        var denseIndex = 0, adapterIndex = 0
        for (s, stage) in network.stages.enumerated() {
            switch stage {
            case .dense(let d):
                let p = "dense\(denseIndex)"
                let v = variables?(&g, denseIndex)
                let w = v?.weight ?? weightsTransposed(d, into: &g, prefix: p)
                let b = v?.bias ?? g.constant(p + ".bias", shape: [d.outputs], d.bias)
                let z = g.tensor(d.activation == .identity ? finalName(s, p + ".z") : p + ".z", shape: [d.outputs], batch: true)
                g.add(.fullyConnected, [current, w, b], [z], .fullyConnected)
                current = activation(d.activation, z, name: finalName(s, p + ".out"), width: d.outputs, into: &g)
                denseIndex += 1
            case .adapter(let a):
                let p = "adapter\(adapterIndex)"
                let down = g.constant(p + ".down.weight", shape: [a.bottleneck, a.width], transpose(a.down, rows: a.width, columns: a.bottleneck))
                let downBias = g.constant(p + ".down.bias", shape: [a.bottleneck], a.downBias)
                let up = g.constant(p + ".up.weight", shape: [a.width, a.bottleneck], transpose(a.up, rows: a.bottleneck, columns: a.width))
                let upBias = g.constant(p + ".up.bias", shape: [a.width], a.upBias)
                let dz = g.tensor(p + ".down.z", shape: [a.bottleneck], batch: true)
                g.add(.fullyConnected, [current, down, downBias], [dz], .fullyConnected)
                let u = activation(a.activation, dz, name: p + ".down.out", width: a.bottleneck, into: &g)
                let uz = g.tensor(p + ".up.z", shape: [a.width], batch: true)
                g.add(.fullyConnected, [u, up, upBias], [uz], .fullyConnected)
                let out = g.tensor(finalName(s, p + ".out"), shape: [a.width], batch: true)
                g.add(.add, [current, uz], [out], .add)
                current = out
                adapterIndex += 1
            }
        }
        let outputs: [(name: String, tensor: Int32)]
        switch network.includesHead ? network.head : nil {
        case nil:
            outputs = [("embedding", current)]
        case .multiclass(let k)?:
            let p = g.tensor("probabilities", shape: [k], batch: true)
            g.add(.softmax, [current], [p], .softmax(beta: 1))
            outputs = [("logits", current), ("probabilities", p)]
        case .binary?:
            let positive = g.tensor("p_positive", shape: [1], batch: true)
            g.add(.logistic, [current], [positive])
            let one = g.constant("one", shape: [1, 1], [1])
            let negative = g.tensor("p_negative", shape: [1], batch: true)
            g.add(.sub, [one, positive], [negative], .sub)
            let p = g.tensor("probabilities", shape: [2], batch: true)
            g.add(.concatenation, [negative, positive], [p], .concatenation(axis: 1))
            outputs = [("logits", current), ("probabilities", p)]
        }
        g.outputs = outputs.map(\.tensor)
        return outputs
    }

    /// The FC weight operand [out × in] of a dense stage: a float32 constant, or an int8
    /// constant with its scales and a `DEQUANTIZE` (version 5 with per-channel scales, 2 with one
    /// scale: the versions the schema's op-version rules give for int8 input).
    static func weightsTransposed(_ d: ExportedNetwork.Dense, into g: inout TFLiteModel.Subgraph, prefix p: String) -> Int32 {
        guard let q = d.int8 else {
            return g.constant(p + ".weight", shape: [d.outputs, d.inputs], transpose(d.weights, rows: d.inputs, columns: d.outputs))
        }
        var values = [UInt8](repeating: 0, count: q.values.count)
        for k in 0..<d.inputs {
            for j in 0..<d.outputs { values[j * d.inputs + k] = UInt8(bitPattern: q.values[k * d.outputs + j]) }
        }
        let scales = q.perTensor ? [q.scales.first ?? 1] : q.scales
        let quantized = g.tensor(p + ".weight_int8", .int8, shape: [d.outputs, d.inputs], data: values,
                                 quantization: .init(scales: scales, dimension: 0))
        let w = g.tensor(p + ".weight", shape: [d.outputs, d.inputs])
        g.add(.dequantize, version: scales.count > 1 ? 5 : 2, [quantized], [w])
        return w
    }

    /// `RELU`, `TANH` or `LOGISTIC` of `input` into a new tensor `name`; the identity returns `input`.
    static func activation(_ act: Activation, _ input: Int32, name: String, width: Int, into g: inout TFLiteModel.Subgraph) -> Int32 {
        let op: TFLiteModel.Op
        switch act {
        case .identity: return input
        case .relu: op = .relu
        case .tanh: op = .tanh
        case .sigmoid: op = .logistic
        }
        let out = g.tensor(name, shape: [width], batch: true)
        g.add(op, [input], [out])
        return out
    }

    /// The transpose of a row-major [rows × columns] matrix.
    static func transpose(_ m: [Float], rows: Int, columns: Int) -> [Float] {
        var t = [Float](repeating: 0, count: m.count)
        for r in 0..<rows {
            for c in 0..<columns { t[c * rows + r] = m[r * columns + c] }
        }
        return t
    }
}
