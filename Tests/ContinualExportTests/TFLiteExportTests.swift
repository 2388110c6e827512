import ContinualCore
import Foundation
import Testing
@testable import ContinualExport

/// The LiteRT exporter: the graph it builds, evaluated operator by operator with the TFLite
/// semantics of each builtin (FC: y = x·Wᵀ + b with W [out × in]), against the toolkit's own
/// forward pass; and the written bytes walked by hand (identifier, schema version, buffers,
/// alignment, tensors, signature) without any FlatBuffers or TFLite library.
@Suite struct TFLiteExportTests {
    /// Runs `g` on one sample with the reference semantics of the builtins used (no runtime).
    static func evaluate(_ g: TFLiteModel.Subgraph, _ x: [Float]) -> [String: [Float]] {
        var values: [Int32: [Float]] = [:]
        func value(_ i: Int32) -> [Float] {
            if let v = values[i] { return v }
            let t = g.tensors[Int(i)]
            let d = t.data!
            if t.type == .int8 {
                // Symmetric dequantisation along dimension 0: f = scale[row]·q.
                let rows = Int(t.shape[0]), n = d.count / rows
                return d.enumerated().map { k, byte in
                    Float(Int8(bitPattern: byte)) * (t.quantization!.scales.count == 1 ? t.quantization!.scales[0] : t.quantization!.scales[k / n])
                }
            }
            return stride(from: 0, to: d.count, by: 4).map { k in
                Float(bitPattern: UInt32(d[k]) | UInt32(d[k + 1]) << 8 | UInt32(d[k + 2]) << 16 | UInt32(d[k + 3]) << 24)
            }
        }
        values[g.inputs[0]] = x
        for o in g.operators {
            let a = value(o.inputs[0])
            let out: [Float]
            switch o.op {
            case .fullyConnected:
                let w = value(o.inputs[1]), b = value(o.inputs[2])
                let outs = b.count, ins = a.count
                #expect(w.count == outs * ins)
                out = (0..<outs).map { j in (0..<ins).reduce(b[j]) { $0 + a[$1] * w[j * ins + $1] } }
            case .dequantize: out = a
            case .relu: out = a.map { max($0, 0) }
            case .tanh: out = a.map { Foundation.tanh($0) }
            case .logistic: out = a.map { 1 / (1 + Foundation.exp(-$0)) }
            case .add: out = zip(a, value(o.inputs[1])).map(+)
            case .sub: out = zip(a, value(o.inputs[1])).map(-)
            case .concatenation: out = o.inputs.flatMap { value($0) }
            case .softmax:
                let m = a.max()!, e = a.map { Foundation.exp($0 - m) }, s = e.reduce(0, +)
                out = e.map { $0 / s }
            default:
                Issue.record("unexpected operator \(o.op)")
                out = a
            }
            values[o.outputs[0]] = out
        }
        return Dictionary(uniqueKeysWithValues: g.outputs.map { (g.tensors[Int($0)].name, values[$0]!) })
    }

    static func graph(_ n: ExportedNetwork) -> TFLiteModel.Subgraph {
        var g = TFLiteModel.Subgraph(name: "main")
        TFLiteExport.inference(n, into: &g)
        return g
    }

    @Test(arguments: [(false, false, OutputHead.multiclass(classes: 3), Activation.tanh), (true, false, .binary, .relu),
                      (false, true, .multiclass(classes: 3), .sigmoid), (true, true, .binary, .tanh)])
    func theGraphComputesTheToolkitsLogits(adapters: Bool, lora: Bool, head: OutputHead, activation: Activation) throws {
        let m = ExportTests.model(head: head, activation: activation, adapters: adapters, lora: lora)
        for route in 0..<(adapters || lora ? 2 : 1) {
            let n = try ExportedNetwork(model: m, route: route)
            let g = Self.graph(n)
            for x in ExportTests.inputs(20) {
                let out = Self.evaluate(g, x)
                let z = ExportTests.toolkitLogits(m, x, route: route)
                #expect(ExportTests.maxDiff(out["logits"]!, z) < 1e-5)
                let p = z.withUnsafeBufferPointer { Loss.probabilities(head: head, logits: $0.baseAddress!) }.map { Float($0) }
                #expect(ExportTests.maxDiff(out["probabilities"]!, p) < 1e-6)
            }
        }
    }

    @Test(arguments: [QuantizedMLP.Granularity.perChannel, .perTensor])
    func int8GraphsComputeQuantizedMLP(granularity: QuantizedMLP.Granularity) throws {
        let m = ExportTests.model(head: .binary, activation: .relu)
        let n = try ExportedNetwork(model: m, route: 0, int8: granularity)
        let g = Self.graph(n)
        let q = QuantizedMLP(m, granularity: granularity)
        let dequantize = g.operators.filter { $0.op == .dequantize }
        #expect(dequantize.count == 3)
        // Version 5 for per-channel scales, 2 for one scale (the binary output layer has one
        // output channel, so one scale even per channel).
        #expect(dequantize.map(\.version) == (granularity == .perChannel ? [5, 5, 2] : [2, 2, 2]))
        for t in g.tensors where t.type == .int8 {
            #expect(t.quantization!.scales.count == (granularity == .perTensor ? 1 : Int(t.shape[0])))
        }
        #expect(!g.tensors.contains { $0.type == .float32 && $0.name.hasSuffix(".weight") && $0.data != nil })
        for x in ExportTests.inputs(20) {
            #expect(ExportTests.maxDiff(Self.evaluate(g, x)["logits"]!, q.logits(x, route: 0)) < 1e-5)
        }
    }

    @Test func coreOnlyGraphsEndInTheEmbedding() throws {
        let m = ExportTests.model(adapters: true)
        let n = try ExportedNetwork(model: m, route: 1).core()
        let g = Self.graph(n)
        #expect(g.outputs.map { g.tensors[Int($0)].name } == ["embedding"])
        for x in ExportTests.inputs(5) {
            #expect(ExportTests.maxDiff(Self.evaluate(g, x)["embedding"]!, n.logits(x)) < 1e-6)
        }
    }

    /// The serialised model read back by hand: Model (version 0, operator_codes 1, subgraphs 2,
    /// description 3, buffers 4, metadata 6, signature_defs 7) → SubGraph → Tensor → Buffer.
    @Test func theWrittenBytesHoldTheGraph() throws {
        let m = ExportTests.model(head: .multiclass(classes: 3), activation: .tanh)
        let n = try ExportedNetwork(model: m, route: 0)
        let bytes = TFLiteExport.model(n, metadata: [("continualkit.strategy", "naive")])
        let r = FlatBufferBytes(bytes: bytes)
        #expect(Array(bytes[4..<8]) == Array("TFL3".utf8))
        let model = r.root
        #expect(r.u32(r.field(model, 0)!) == 3)
        #expect(r.string(r.field(model, 3)!) == "ContinualKit MLP, route 0")
        // Operator codes: builtin_code (id 3) and the saturated byte (id 0) agree for codes < 127.
        let (nc, cs) = r.vector(r.field(model, 1)!)
        let codes = (0..<nc).map { i -> Int32 in
            let t = r.follow(cs + 4 * i)
            let code = r.i32(r.field(t, 3)!)
            #expect(r.field(t, 0).map { Int32(Int8(bitPattern: r.bytes[$0])) } == (code == 0 ? nil : code))
            return code
        }
        #expect(codes == [TFLiteModel.Op.fullyConnected, .tanh, .softmax].map(\.rawValue))
        // One subgraph; tensors with their buffers; FC weights [out × in] = the transpose.
        let (ng, gs) = r.vector(r.field(model, 2)!)
        #expect(ng == 1)
        let sub = r.follow(gs)
        let (nb, bs) = r.vector(r.field(model, 4)!)
        let buffer0 = r.follow(bs)
        #expect(r.field(buffer0, 0) == nil)                    // the empty sentinel
        let (nt, ts) = r.vector(r.field(sub, 0)!)
        var weights: [String: [Float]] = [:]
        var constants = 0
        for i in 0..<nt {
            let t = r.follow(ts + 4 * i)
            let name = r.string(r.field(t, 3)!)
            guard let bp = r.field(t, 2) else { continue }
            let index = Int(r.u32(bp))
            #expect(index > 0 && index < nb)
            let (count, start) = r.vector(r.field(r.follow(bs + 4 * index), 0)!)
            #expect(start % 16 == 0, "\(name): buffer data at \(start)")
            weights[name] = (0..<(count / 4)).map { Float(bitPattern: r.u32(start + 4 * $0)) }
            constants += 1
        }
        #expect(constants == 6 && nb == 1 + 6 + 5)             // sentinel, 3 weights + 3 biases, 5 metadata values
        for (i, d) in n.denseStages.enumerated() {
            #expect(weights["dense\(i).weight"] == TFLiteExport.transpose(d.weights, rows: d.inputs, columns: d.outputs))
            #expect(weights["dense\(i).bias"] == d.bias)
        }
        // Inputs and outputs, and the signature naming them.
        let (_, ins) = r.vector(r.field(sub, 1)!)
        let (no, outs) = r.vector(r.field(sub, 2)!)
        func tensorName(_ index: Int32) -> String { r.string(r.field(r.follow(ts + 4 * Int(index)), 3)!) }
        #expect(tensorName(r.i32(ins)) == "features" && no == 2)
        #expect([0, 1].map { tensorName(r.i32(outs + 4 * $0)) } == ["logits", "probabilities"])
        let (ns, ss) = r.vector(r.field(model, 7)!)
        #expect(ns == 1)
        let sig = r.follow(ss)
        #expect(r.string(r.field(sig, 2)!) == "serving_default")
        // Metadata: name → UTF-8 value in a buffer.
        let (nm, ms) = r.vector(r.field(model, 6)!)
        let metadata = Dictionary(uniqueKeysWithValues: (0..<nm).map { i -> (String, String) in
            let e = r.follow(ms + 4 * i)
            let (count, start) = r.vector(r.field(r.follow(bs + 4 * Int(r.u32(r.field(e, 1)!))), 0)!)
            return (r.string(r.field(e, 0)!), String(decoding: bytes[start..<(start + count)], as: UTF8.self))
        })
        #expect(metadata["continualkit.layer_sizes"] == "4,6,5,3" && metadata["continualkit.strategy"] == "naive")
        #expect(metadata["continualkit.head"] == "multiclass:3" && metadata["continualkit.parts"] == "all")
    }
}

/// The trainable LiteRT model's structure: the variables every signature shares, their
/// initialisation, the SGD update wired to them, and what is refused.
@Suite struct TFLiteTrainingTests {
    static func names(_ g: TFLiteModel.Subgraph, _ ids: [Int32]) -> [String] { ids.map { g.tensors[Int($0)].name } }

    @Test(arguments: [OutputHead.binary, .multiclass(classes: 3)])
    func signaturesShareTheOutputLayersVariables(head: OutputHead) throws {
        let m = ExportTests.model(head: head, activation: .tanh)
        let n = try ExportedNetwork(model: m, route: 0)
        let model = try TFLiteTraining.build(n, optimizer: .sgd(learningRate: 0.25))
        #expect(model.subgraphs.map(\.name) == ["main", "train", "parameters", "init", "restore"])
        #expect(model.signatures.map(\.key) == ["serving_default", "train", "parameters", "restore"])
        #expect(model.signatures.map(\.subgraph) == [0, 1, 2, 4])
        let shared = ["dense2.weight", "dense2.bias"]
        for (i, g) in model.subgraphs.enumerated() {
            // Every signature's subgraph runs the init subgraph (3) first; init itself does not.
            if i == 3 {
                #expect(!g.operators.contains { $0.op == .callOnce })
            } else {
                #expect(g.operators.first?.options == .callOnce(initSubgraph: 3))
            }
            let handles = g.operators.compactMap { o -> String? in
                if case .varHandle(_, let name) = o.options { return name } else { return nil }
            }
            #expect(handles == shared, "subgraph \(g.name)")
        }
        // Initial values: the exported layer, in FC layout.
        let initGraph = model.subgraphs[3]
        let last = n.denseStages[2]
        let initial = initGraph.tensors.filter { $0.data != nil }
        #expect(initial.map(\.name) == shared.map { $0 + ".initial" })
        #expect(initial[0].shape == [Int32(last.outputs), Int32(last.inputs)] && initial[1].shape == [Int32(last.outputs)])
        func floats(_ t: TFLiteModel.Tensor) -> [Float] {
            stride(from: 0, to: t.data!.count, by: 4).map { k in
                Float(bitPattern: (0..<4).reduce(UInt32(0)) { $0 | UInt32(t.data![k + $1]) << (8 * UInt32($1)) })
            }
        }
        #expect(floats(initial[0]) == TFLiteExport.transpose(last.weights, rows: last.inputs, columns: last.outputs))
        #expect(floats(initial[1]) == last.bias)
        // Train: two assignments, each of (variable − lr·gradient); the learning rate constant.
        let train = model.subgraphs[1]
        #expect(Self.names(train, train.inputs) == ["features", "targets"] && Self.names(train, train.outputs) == ["loss"])
        let assigns = train.operators.filter { $0.op == .assignVariable }
        #expect(assigns.count == 2)
        for (a, name) in zip(assigns, shared) {
            let update = train.operators.first { $0.outputs == [a.inputs[1]] }!
            #expect(update.op == .sub && Self.names(train, update.inputs) == [name + ".read", name + ".step"])
        }
        #expect(floats(train.tensors.first { $0.name == "learning_rate" }!) == [0.25])
        // The inference graph reads the variables instead of holding the layer as constants.
        let main = model.subgraphs[0]
        #expect(!main.tensors.contains { $0.name == "dense2.weight" && $0.data != nil })
        #expect(main.operators.filter { $0.op == .readVariable }.count == 2)
        // The bytes serialise, with the four signatures.
        let bytes = try TFLiteTraining.model(n, optimizer: .sgd(learningRate: 0.25))
        let r = FlatBufferBytes(bytes: bytes)
        #expect(r.vector(r.field(r.root, 7)!).count == 4 && r.vector(r.field(r.root, 2)!).count == 5)
    }

    @Test func whatCannotTrainIsRefused() throws {
        let m = ExportTests.model(head: .binary, activation: .relu)
        let n = try ExportedNetwork(model: m, route: 0)
        #expect(TFLiteTraining.unsupportedReason(n, optimizer: .sgd(learningRate: 0.1)) == nil)
        #expect(TFLiteTraining.unsupportedReason(n, optimizer: .sgd(learningRate: 0.1, momentum: 0.9))!.contains("plain SGD"))
        #expect(TFLiteTraining.unsupportedReason(n, optimizer: .adam(learningRate: 0.1)) == nil)
        #expect(TFLiteTraining.unsupportedReason(n, optimizer: .adam(learningRate: 0.1, weightDecay: 0.01))!.contains("plain SGD"))
        #expect(TFLiteTraining.unsupportedReason(n, optimizer: .adamw(learningRate: 0.1))!.contains("plain SGD"))
        #expect(TFLiteTraining.unsupportedReason(try n.core(), optimizer: .sgd(learningRate: 0.1))!.contains("core-only"))
        let q = try ExportedNetwork(model: m, route: 0, int8: .perChannel)
        #expect(TFLiteTraining.unsupportedReason(q, optimizer: .sgd(learningRate: 0.1))!.contains("int8"))
        #expect(throws: ExportError.self) { try TFLiteTraining.model(q, optimizer: .sgd(learningRate: 0.1)) }
        let a = try ExportedNetwork(model: ExportTests.model(adapters: true), route: 0)
        #expect(TFLiteTraining.unsupportedReason(a, optimizer: .sgd(learningRate: 0.1), trainable: .biases)!.contains("adapters"))
        #expect(TFLiteTraining.unsupportedReason(a, optimizer: .sgd(learningRate: 0.1), trainable: .outputLayer) == nil)
    }

    /// BitFit: one bias variable per dense layer, updated from a gradient backpropagated through
    /// FCs over the frozen weights in the toolkit's [in × out] layout (FC's operand for δ·Wᵀ).
    @Test func bitFitTrainsEveryBiasThroughTheFrozenWeights() throws {
        let m = ExportTests.model(head: .multiclass(classes: 3), activation: .relu)
        let n = try ExportedNetwork(model: m, route: 0)
        let model = try TFLiteTraining.build(n, trainable: .biases, optimizer: .sgd(learningRate: 0.1))
        #expect(model.signatures[2].outputs.map(\.name) == ["dense0.bias", "dense1.bias", "dense2.bias"])
        let train = model.subgraphs[1]
        #expect(train.operators.filter { $0.op == .assignVariable }.count == 3)
        #expect(train.operators.filter { $0.op == .sign }.count == 2)        // relu′ of the two hidden layers
        let backward = train.operators.filter { $0.op == .fullyConnected && $0.inputs.last == -1 }
        #expect(Self.names(train, backward.map { $0.inputs[1] }) == ["dense2.weight_backward", "dense1.weight_backward"])
        for (i, t) in [2, 1].map({ i in train.tensors.first { $0.name == "dense\(i).weight_backward" }! }).enumerated() {
            let d = n.denseStages[2 - i]
            #expect(t.shape == [Int32(d.inputs), Int32(d.outputs)])
            #expect(t.data! == TFLiteModel.littleEndian(d.weights.map(\.bitPattern)))
        }
        // Inference reads the three bias variables; weights stay constants.
        let main = model.subgraphs[0]
        #expect(main.operators.filter { $0.op == .readVariable }.count == 3)
        #expect(main.tensors.filter { $0.name.hasSuffix(".weight") && $0.data != nil }.count == 3)
    }
}
