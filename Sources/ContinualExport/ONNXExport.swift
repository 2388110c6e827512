import ContinualCore

/// Writes an `ExportedNetwork` as an ONNX `ModelProto` (IR version 7, default-domain opset 13),
/// readable by ONNX Runtime and `onnx.checker`.
///
/// Graph: input `features` float32 [N, d] → per dense stage `Gemm` (B = W [in × out], C = b) and
/// its activation (`Relu`, `Tanh`, `Sigmoid`; none for the identity) → per adapter stage
/// `MatMul`, `Add`, activation, `MatMul`, `Add` and the residual `Add` → output `logits`
/// [N, logitCount] → output `probabilities` [N, classCount] (`Softmax` over axis 1; a binary
/// head gives [1 − σ(z), σ(z)] with `Sigmoid`, `Sub` and `Concat`, as the toolkit's
/// `Loss.probabilities`). Int8 models store int8 initializers with float scales (one per output
/// channel, or one per tensor) and dequantise them in the graph (`Cast` to float, `Mul` by the
/// scales: weight-only quantisation, activations stay float32), so the file holds the quantised
/// weights and the runtime computes what `QuantizedMLP` computes.
///
/// Initializer names: `dense<i>.weight` [in, out], `dense<i>.bias` [out] (int8: `dense<i>.weight_int8`
/// and `dense<i>.weight_scale`; a low-rank factorised layer: `dense<i>.u` [in, r] and `dense<i>.v`
/// [r, out], computed as `MatMul`, `MatMul`, `Add`), `adapter<i>.down.weight` … `adapter<i>.up.bias`; the metadata
/// holds `continualkit.layer_sizes`, `continualkit.parts` and whatever the caller adds. A core-only
/// graph (`ExportedNetwork.core()`) has the single output `embedding` instead of `logits` and
/// `probabilities`.
///
/// Field numbers are those of onnx/onnx `onnx/onnx.proto` (IR version 7 and later).
public enum ONNXExport {
    /// ONNX IR version 7 (the first to go with opset 13).
    public static let irVersion: Int64 = 7
    /// Default-domain operator set: 13 (`Softmax` over one axis).
    public static let opsetVersion: Int64 = 13

    // onnx.proto, TensorProto.DataType
    static let float: Int64 = 1, int8: Int64 = 3
    // onnx.proto, AttributeProto.AttributeType
    static let attributeInt: Int64 = 2

    /// The serialised `ModelProto` of `network`; `metadata` goes to `metadata_props` (after
    /// `continualkit.layer_sizes`, `continualkit.head` and `continualkit.route`).
    public static func modelProto(_ network: ExportedNetwork, producerVersion: String = "",
                                  metadata: [(String, String)] = []) -> [UInt8] {
        var model = ProtobufWriter()
        model.int(1, irVersion)                                   // ModelProto.ir_version = 1
        model.string(2, "ContinualKit")                           // ModelProto.producer_name = 2
        if !producerVersion.isEmpty { model.string(3, producerVersion) }  // producer_version = 3
        model.string(4, "org.continualkit")                       // ModelProto.domain = 4
        model.int(5, 1)                                           // ModelProto.model_version = 5
        model.string(6, "ContinualKit MLP, route \(network.route)")  // ModelProto.doc_string = 6
        model.message(7) { graph(&$0, network) }                   // ModelProto.graph = 7
        model.message(8) { op in                                  // ModelProto.opset_import = 8
            op.string(1, "")                                      // OperatorSetIdProto.domain = 1
            op.int(2, opsetVersion)                               // OperatorSetIdProto.version = 2
        }
        let sizes = [network.inputs] + network.denseStages.map(\.outputs)
        var props: [(String, String)] = [
            ("continualkit.layer_sizes", sizes.map(String.init).joined(separator: ",")),
            ("continualkit.head", headText(network.head)),
            ("continualkit.route", String(network.route)),
            ("continualkit.parts", network.includesHead ? "all" : "core"),
        ]
        props += metadata
        for (k, v) in props {
            model.message(14) { e in                              // ModelProto.metadata_props = 14
                e.string(1, k)                                    // StringStringEntryProto.key = 1
                e.string(2, v)                                    // StringStringEntryProto.value = 2
            }
        }
        return model.bytes
    }

    static func headText(_ head: OutputHead) -> String {
        switch head {
        case .binary: return "binary"
        case .multiclass(let k): return "multiclass:\(k)"
        }
    }

    /// GraphProto: node = 1, name = 2, initializer = 5, doc_string = 10, input = 11, output = 12.
    static func graph(_ g: inout ProtobufWriter, _ network: ExportedNetwork) {
        var graph = ONNXGraph()
        var current = "features"
        // The output layer's result is `logits`; a core-only graph ends in `embedding` (below).
        let lastDense = network.includesHead ? network.stages.lastIndex { if case .dense = $0 { return true } else { return false } } ?? -1 : -1
        var denseIndex = 0, adapterIndex = 0
        for (s, stage) in network.stages.enumerated() {
            switch stage {
            case .dense(let d):
                current = graph.addDense(d, prefix: "dense\(denseIndex)", input: current, isLast: s == lastDense)
                denseIndex += 1
            case .adapter(let a):
                current = graph.addAdapter(a, prefix: "adapter\(adapterIndex)", input: current)
                adapterIndex += 1
            }
        }
        graph.addOutputs(network.includesHead ? network.head : nil, input: current)
        graph.write(into: &g)
        valueInfo(&g, 11, "features", width: network.inputs)     // GraphProto.input = 11
        if network.includesHead {
            valueInfo(&g, 12, "logits", width: network.head.logitCount)      // GraphProto.output = 12
            valueInfo(&g, 12, "probabilities", width: network.head.classCount)
        } else {
            valueInfo(&g, 12, "embedding", width: network.outputWidth)
        }
    }

    /// ValueInfoProto (name = 1, type = 2) of a float32 [N, width] tensor: TypeProto.tensor_type = 1
    /// → TypeProto.Tensor (elem_type = 1, shape = 2) → TensorShapeProto.dim = 1 → Dimension
    /// (dim_value = 1, dim_param = 2).
    static func valueInfo(_ g: inout ProtobufWriter, _ field: Int, _ name: String, width: Int) {
        g.message(field) { v in
            v.string(1, name)
            v.message(2) { type in
                type.message(1) { tensor in
                    tensor.int(1, float)
                    tensor.message(2) { shape in
                        shape.message(1) { $0.string(2, "N") }
                        shape.message(1) { $0.int(1, Int64(width)) }
                    }
                }
            }
        }
    }
}

/// The nodes and initializers of the graph `ONNXExport.graph` writes, collected stage by stage in
/// graph order before they are serialised.
private struct ONNXGraph {
    /// op, inputs, outputs, int attributes.
    var nodes: [(String, [String], [String], [(String, Int64)])] = []
    /// name, dims, float values or int8 values.
    var initializers: [(String, [Int], [Float]?, [Int8]?)] = []

    /// The activation node of `act` from `input` to `output`; returns the activated tensor's name
    /// (`input` itself for the identity, which needs no node).
    mutating func activation(_ act: Activation, _ input: String, _ output: String) -> String {
        let op: String
        switch act {
        case .identity: return input
        case .relu: op = "Relu"
        case .tanh: op = "Tanh"
        case .sigmoid: op = "Sigmoid"
        }
        nodes.append((op, [input], [output], []))
        return output
    }

    /// A dense stage: its initializers, `Gemm` (or the low-rank `MatMul`, `MatMul`, `Add`) and its
    /// activation; returns the stage's output name (`logits` for the output layer).
    mutating func addDense(_ d: ExportedNetwork.Dense, prefix p: String, input current: String, isLast: Bool) -> String {
        let weight = p + ".weight"
        if let q = d.int8 {
            // Weight-only int8: Cast + Mul rather than DequantizeLinear. ONNX Runtime's
            // extended graph optimisations fuse DequantizeLinear → Gemm into a dynamically
            // quantised MatMul that also quantises the activations (measured: logits off by
            // up to 0.016 on the habit-drift test sets), which is not the toolkit's int8
            // model; Cast + Mul computes w = q·s exactly and keeps the file int8.
            initializers.append((p + ".weight_int8", [d.inputs, d.outputs], nil, q.values))
            initializers.append((p + ".weight_scale", q.perTensor ? [] : [d.outputs],
                                 q.perTensor ? [q.scales.first ?? 1] : q.scales, nil))
            nodes.append(("Cast", [p + ".weight_int8"], [p + ".weight_q"], [("to", ONNXExport.float)]))
            nodes.append(("Mul", [p + ".weight_q", p + ".weight_scale"], [weight], []))
        } else if d.factors == nil {
            initializers.append((weight, [d.inputs, d.outputs], d.weights, nil))
        }
        initializers.append((p + ".bias", [d.outputs], d.bias, nil))
        let z = isLast && d.activation == .identity ? "logits" : p + ".z"
        if let f = d.factors {
            // Low-rank: (x·U)·V + b, r·(in + out) multiply-adds instead of in·out.
            initializers.append((p + ".u", [d.inputs, f.rank], f.u, nil))
            initializers.append((p + ".v", [f.rank, d.outputs], f.v, nil))
            nodes.append(("MatMul", [current, p + ".u"], [p + ".xu"], []))
            nodes.append(("MatMul", [p + ".xu", p + ".v"], [p + ".xw"], []))
            nodes.append(("Add", [p + ".xw", p + ".bias"], [z], []))
        } else {
            nodes.append(("Gemm", [current, weight, p + ".bias"], [z], []))
        }
        return activation(d.activation, z, isLast ? "logits" : p + ".out")
    }

    /// An adapter stage: down projection, activation, up projection and the residual `Add`;
    /// returns its output name.
    mutating func addAdapter(_ a: ExportedNetwork.Adapter, prefix p: String, input current: String) -> String {
        initializers.append((p + ".down.weight", [a.width, a.bottleneck], a.down, nil))
        initializers.append((p + ".down.bias", [a.bottleneck], a.downBias, nil))
        initializers.append((p + ".up.weight", [a.bottleneck, a.width], a.up, nil))
        initializers.append((p + ".up.bias", [a.width], a.upBias, nil))
        nodes.append(("MatMul", [current, p + ".down.weight"], [p + ".down.xw"], []))
        nodes.append(("Add", [p + ".down.xw", p + ".down.bias"], [p + ".down.z"], []))
        let u = activation(a.activation, p + ".down.z", p + ".down.out")
        nodes.append(("MatMul", [u, p + ".up.weight"], [p + ".up.xw"], []))
        nodes.append(("Add", [p + ".up.xw", p + ".up.bias"], [p + ".up.z"], []))
        nodes.append(("Add", [current, p + ".up.z"], [p + ".out"], []))
        return p + ".out"
    }

    /// The graph's outputs after the stages: `probabilities` from `logits` for `head`, or the
    /// core-only `embedding` (nil head) from `current`.
    mutating func addOutputs(_ head: OutputHead?, input current: String) {
        switch head {
        case nil:
            // Core only: the last hidden activations, under a name of their own.
            nodes.append(("Identity", [current], ["embedding"], []))
        case .multiclass?:
            nodes.append(("Softmax", ["logits"], ["probabilities"], [("axis", 1)]))
        case .binary?:
            initializers.append(("one", [], [1], nil))
            nodes.append(("Sigmoid", ["logits"], ["p_positive"], []))
            nodes.append(("Sub", ["one", "p_positive"], ["p_negative"], []))
            nodes.append(("Concat", ["p_negative", "p_positive"], ["probabilities"], [("axis", 1)]))
        }
    }

    /// Serialises the nodes (named `<op>_<i>`), the graph's name and the initializers into `g`.
    func write(into g: inout ProtobufWriter) {
        for (i, n) in nodes.enumerated() {
            g.message(1) { node in                                // GraphProto.node = 1
                for input in n.1 { node.string(1, input) }        // NodeProto.input = 1
                for output in n.2 { node.string(2, output) }      // NodeProto.output = 2
                node.string(3, "\(n.0.lowercased())_\(i)")        // NodeProto.name = 3
                node.string(4, n.0)                               // NodeProto.op_type = 4
                for (name, value) in n.3 {
                    node.message(5) { attr in                     // NodeProto.attribute = 5
                        attr.string(1, name)                      // AttributeProto.name = 1
                        attr.int(3, value)                        // AttributeProto.i = 3
                        attr.int(20, ONNXExport.attributeInt)     // AttributeProto.type = 20
                    }
                }
            }
        }
        g.string(2, "continualkit_mlp")                           // GraphProto.name = 2
        for (name, dims, floats, int8s) in initializers {
            g.message(5) { t in                                   // GraphProto.initializer = 5
                t.packedInts(1, dims.map(Int64.init))             // TensorProto.dims = 1
                t.int(2, floats != nil ? ONNXExport.float : ONNXExport.int8)  // TensorProto.data_type = 2
                t.string(8, name)                                 // TensorProto.name = 8
                if let floats {
                    t.packedFloats(4, floats)                     // TensorProto.float_data = 4 (packed)
                } else if let int8s {
                    t.data(9, int8s.map { UInt8(bitPattern: $0) }) // TensorProto.raw_data = 9
                }
            }
        }
    }
}
