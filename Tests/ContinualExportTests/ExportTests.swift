import ContinualCore
import Testing
@testable import ContinualExport

/// The personal model as ONNX and as a Core ML spec whose output layer trains on the phone.
func exportPersonalModel(_ model: MLP) throws -> (onnx: [UInt8], coreML: [UInt8]) {
    let network = try ExportedNetwork(model: model, route: 0)    // int8: add `int8: .perChannel`
    let onnx = ONNXExport.modelProto(network)
    let coreML = try CoreMLExport.modelSpec(network, updatable: .init(denseLayers: [network.denseStages.count - 1]))
    return (onnx, coreML)
}

/// The protobuf writer/reader, the exported graph (LoRA merged, adapters, int8) against the
/// toolkit's own forward pass, and the field numbers of the ONNX and Core ML messages.
@Suite struct ExportTests {
    // MARK: helpers

    static func field(_ fields: [ProtobufReader.Field], _ number: Int) -> [ProtobufReader.Field] {
        fields.filter { $0.number == number }
    }

    /// A model with every parameter drawn (LoRA's B and adapters' W_up too, so that an export
    /// that ignored them would differ).
    static func model(hidden: [Int] = [6, 5], head: OutputHead = .multiclass(classes: 3), activation: Activation = .tanh,
                      adapters: Bool = false, lora: Bool = false, seed: UInt64 = 7) -> MLP {
        var rng = RandomSource(seed: seed, stream: "test")
        let base = MLP(spec: MLPSpec(inputs: 4, hidden: hidden, activation: activation, head: head), rng: &rng)
        var spec = base.spec
        if adapters { spec.adapters = [.init(after: 0, bottleneck: 2, activation: .relu, copies: 2)] }
        if lora { spec.lowRank = [.init(layer: 0, rank: 2, alpha: 4, copies: 2), .init(layer: hidden.count, rank: 1, alpha: 1, copies: 2)] }
        guard adapters || lora else { return base }
        var m = MLP(extending: base, to: spec, rng: &rng)
        for i in base.parameterCount..<m.parameterCount { m.parameters[i] = Float(rng.uniform() * 2 - 1) * 0.5 }
        return m
    }

    static func inputs(_ n: Int, seed: UInt64 = 3) -> [[Float]] {
        var rng = RandomSource(seed: seed, stream: "x")
        return (0..<n).map { _ in (0..<4).map { _ in Float(rng.uniform() * 4 - 2) } }
    }

    static func toolkitLogits(_ m: MLP, _ x: [Float], route: Int) -> [Float] {
        let ws = m.makeWorkspace(capacity: 1)
        x.withUnsafeBufferPointer { m.forward($0.baseAddress!, count: 1, route: route, workspace: ws) }
        return Array(UnsafeBufferPointer(start: ws.logits, count: m.logitCount))
    }

    static func maxDiff(_ a: [Float], _ b: [Float]) -> Float {
        zip(a, b).map { abs($0 - $1) }.max() ?? .infinity
    }

    // MARK: wire format

    @Test func varintsAndScalarsRoundTrip() throws {
        var w = ProtobufWriter()
        let ints: [Int64] = [0, 1, 127, 128, 300, 16_384, Int64.max, -1, -300]
        for (i, v) in ints.enumerated() { w.int(i + 1, v) }
        w.float(20, 3.25)
        w.double(21, -1e-300)
        w.string(22, "grüße")
        w.packedFloats(23, [1, -2.5, .pi])
        w.packedInts(24, [0, 300, -2])
        w.message(300) { $0.bool(1, true) }
        let f = try ProtobufReader.fields(of: w.bytes)
        #expect(f.prefix(ints.count).map(\.int) == ints)
        // 300 = 0b1_0010_1100 → AC 02 (the encoding guide's example); tag of field 5 varint = 0x28.
        var v = ProtobufWriter()
        v.int(5, 300)
        #expect(v.bytes == [0x28, 0xAC, 0x02])
        // Negative int64 takes ten bytes.
        var n = ProtobufWriter()
        n.int(1, -1)
        #expect(n.bytes.count == 11)
        #expect(Self.field(f, 20).first?.float == 3.25)
        #expect(Self.field(f, 20).first?.wireType == .fixed32)
        #expect(Double(bitPattern: Self.field(f, 21).first!.scalar) == -1e-300)
        #expect(Self.field(f, 22).first?.string == "grüße")
        #expect(try Self.field(f, 23).first?.floats() == [1, -2.5, .pi])
        #expect(try Self.field(f, 24).first?.ints() == [0, 300, -2])
        let nested = try Self.field(f, 300).first!.message()
        #expect(nested.first?.number == 1 && nested.first?.scalar == 1)
        // Field 300 needs a two-byte tag: (300 << 3 | 2) = 2402 → E2 12.
        var t = ProtobufWriter()
        t.data(300, [])
        #expect(t.bytes == [0xE2, 0x12, 0x00])
    }

    @Test func malformedBytesThrowNeverTrap() {
        var w = ProtobufWriter()
        w.string(1, "hello")
        let good = w.bytes
        for cut in 1..<good.count {
            #expect(throws: ProtobufReader.Failure.self) { try ProtobufReader.fields(of: Array(good.prefix(cut))) }
        }
        #expect(throws: ProtobufReader.Failure.self) { try ProtobufReader.fields(of: [0x0B]) }        // wire type 3
        #expect(throws: ProtobufReader.Failure.self) { try ProtobufReader.fields(of: [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) }
        #expect(throws: ProtobufReader.Failure.self) { try ProtobufReader.fields(of: [UInt8](repeating: 0xFF, count: 12)) }
        #expect(throws: ExportError.self) { try ONNXWeights(onnx: [0x3A, 0x05, 1, 2]) }
        #expect(throws: ExportError.self) { try ONNXWeights(onnx: []) }
    }

    // MARK: the graph equals the toolkit's forward pass

    @Test func loraMergedEqualsTheUnmergedForward() throws {
        let m = Self.model(lora: true)
        for route in 0..<2 {
            let net = try ExportedNetwork(model: m, route: route)
            let plain = try ExportedNetwork(model: MLP(spec: m.spec.plain, parameters: Array(m.parameters.prefix(m.spec.plain.parameterCount))), route: 0)
            var worst: Float = 0, changed: Float = 0
            for x in Self.inputs(50) {
                let z = Self.toolkitLogits(m, x, route: route)
                worst = max(worst, Self.maxDiff(net.logits(x), z))
                changed = max(changed, Self.maxDiff(plain.logits(x), z))
            }
            #expect(worst < 1e-5, "route \(route): merged vs unmerged \(worst)")
            // The LoRA update matters: ignoring it would be caught.
            #expect(changed > 1e-2)
            #expect(net.stages.count == 3)
        }
    }

    @Test func adaptersAndMultipleHeadsExportTheirRoute() throws {
        var rng = RandomSource(seed: 1, stream: "heads")
        let heads = MLP(spec: MLPSpec(inputs: 4, hidden: [5], head: .binary, heads: 3), rng: &rng)
        for route in 0..<3 {
            let net = try ExportedNetwork(model: heads, route: route)
            for x in Self.inputs(20) { #expect(Self.maxDiff(net.logits(x), Self.toolkitLogits(heads, x, route: route)) < 1e-6) }
        }
        #expect(throws: ExportError.self) { try ExportedNetwork(model: heads, route: 3) }
        let m = Self.model(activation: .relu, adapters: true)
        for route in 0..<2 {
            let net = try ExportedNetwork(model: m, route: route)
            #expect(net.stages.count == 4)
            guard case .adapter = net.stages[1] else { Issue.record("stage 1 is not the adapter"); continue }
            for x in Self.inputs(50) { #expect(Self.maxDiff(net.logits(x), Self.toolkitLogits(m, x, route: route)) < 1e-5) }
        }
    }

    @Test func int8UsesTheToolkitsQuantisation() throws {
        let m = Self.model(activation: .relu)
        for g in QuantizedMLP.Granularity.allCases {
            let q = QuantizedMLP(m, granularity: g)
            let net = try ExportedNetwork(model: m, route: 0, int8: g)
            #expect(net.isQuantized)
            for x in Self.inputs(50) { #expect(Self.maxDiff(net.logits(x), q.logits(x, route: 0)) < 1e-5) }
            // ONNX round trip: int8 initializers and scales give back q·scale.
            let back = try ONNXWeights(onnx: ONNXExport.modelProto(net))
            let expected = net.denseStages.flatMap { $0.weights + $0.bias }
            #expect(back.parameters == expected)
        }
        #expect(throws: ExportError.self) { try ExportedNetwork(model: Self.model(lora: true), route: 0, int8: .perChannel) }
    }

    // MARK: ONNX fields

    @Test func onnxModelProtoFields() throws {
        let m = Self.model(head: .binary, adapters: true)
        let net = try ExportedNetwork(model: m, route: 1)
        let bytes = ONNXExport.modelProto(net, producerVersion: "9.9", metadata: [("k", "v")])
        let model = try ProtobufReader.fields(of: bytes)
        #expect(Self.field(model, 1).first?.int == 7)                     // ir_version
        #expect(Self.field(model, 2).first?.string == "ContinualKit")    // producer_name
        let opset = try Self.field(model, 8).first!.message()
        #expect(Self.field(opset, 1).first?.string == "" && Self.field(opset, 2).first?.int == 13)
        let props = try Self.field(model, 14).map { try $0.message() }.map { ($0[0].string, $0[1].string) }
        #expect(props.contains { $0 == ("continualkit.layer_sizes", "4,6,5,1") })
        #expect(props.contains { $0 == ("k", "v") })
        let graph = try Self.field(model, 7).first!.message()
        let nodes = try Self.field(graph, 1).map { try $0.message() }
        let ops = nodes.map { Self.field($0, 4).first!.string }
        #expect(ops == ["Gemm", "Tanh", "MatMul", "Add", "Relu", "MatMul", "Add", "Add", "Gemm", "Tanh", "Gemm",
                        "Sigmoid", "Sub", "Concat"])
        let inits = try Self.field(graph, 5).map { try $0.message() }
        let byName = Dictionary(uniqueKeysWithValues: inits.map { (Self.field($0, 8).first!.string, $0) })
        let w0 = try #require(byName["dense0.weight"])
        #expect(try Self.field(w0, 1).first!.ints() == [4, 6])
        #expect(Self.field(w0, 2).first?.int == 1)
        guard case .dense(let d0) = net.stages[0] else { Issue.record("not dense"); return }
        #expect(try Self.field(w0, 4).first!.floats() == d0.weights)
        #expect(byName["adapter0.up.weight"] != nil)
        let outputs = try Self.field(graph, 12).map { try $0.message() }.map { Self.field($0, 1).first!.string }
        #expect(outputs == ["logits", "probabilities"])
        // Warm-start reader: the dense layers of the plain network, adapters counted apart.
        let back = try ONNXWeights(onnx: bytes)
        #expect(back.layerSizes == [4, 6, 5, 1])
        #expect(back.adapterCount == 1)
        #expect(back.parameters == net.denseStages.flatMap { $0.weights + $0.bias })
    }

    @Test func coreOnlyEndsAtTheLastHiddenLayer() throws {
        let m = Self.model(adapters: true)
        let core = try ExportedNetwork(model: m, route: 1).core()
        #expect(!core.includesHead && core.outputWidth == 5 && core.denseStages.count == 2)
        let ws = m.makeWorkspace(capacity: 1)
        for x in Self.inputs(20) {
            x.withUnsafeBufferPointer { m.forward($0.baseAddress!, count: 1, route: 1, workspace: ws) }
            let h = Array(UnsafeBufferPointer(start: ws.hiddenActivations(m.layers.count - 2), count: 5))
            #expect(Self.maxDiff(core.logits(x), h) < 1e-5)
        }
        let graph = try Self.field(try ProtobufReader.fields(of: ONNXExport.modelProto(core)), 7).first!.message()
        let outputs = try Self.field(graph, 12).map { try $0.message() }.map { Self.field($0, 1).first!.string }
        #expect(outputs == ["embedding"])
        let back = try ONNXWeights(onnx: ONNXExport.modelProto(core))
        #expect(!back.includesHead && back.layerSizes == [4, 6, 5])
        // Core ML: a plain NeuralNetwork (500), no classifier, not updatable.
        let spec = try ProtobufReader.fields(of: try CoreMLExport.modelSpec(core))
        #expect(Self.field(spec, 500).count == 1 && Self.field(spec, 403).isEmpty)
        #expect(throws: ExportError.self) { try CoreMLExport.modelSpec(core, updatable: .init(denseLayers: [0])) }
        var rng = RandomSource(seed: 1, stream: "flat")
        #expect(throws: ExportError.self) {
            try ExportedNetwork(model: MLP(spec: MLPSpec(inputs: 4, hidden: []), rng: &rng), route: 0).core()
        }
    }

    @Test func docsExampleWritesBothFormats() throws {
        let (onnx, coreML) = try exportPersonalModel(Self.model())
        #expect(try ONNXWeights(onnx: onnx).layerSizes == [4, 6, 5, 3])
        #expect(Self.field(try ProtobufReader.fields(of: coreML), 10).first?.scalar == 1)
    }

    @Test func plainOnnxRoundTripsTheFlatVector() throws {
        let m = Self.model()
        let back = try ONNXWeights(onnx: ONNXExport.modelProto(try ExportedNetwork(model: m, route: 0)))
        #expect(back.parameters == m.parameters)
        #expect(back.metadata["continualkit.head"] == "multiclass:3")
    }

    // MARK: Core ML fields

    @Test func coreMLSpecFieldsAndUpdatableLayers() throws {
        let m = Self.model(head: .binary)
        let net = try ExportedNetwork(model: m, route: 0)
        let bytes = try CoreMLExport.modelSpec(net, updatable: .init(denseLayers: [2], learningRate: 0.05, miniBatchSize: 8))
        let model = try ProtobufReader.fields(of: bytes)
        #expect(Self.field(model, 1).first?.int == 4)                    // specificationVersion
        #expect(Self.field(model, 10).first?.scalar == 1)                // isUpdatable
        let description = try Self.field(model, 2).first!.message()
        #expect(Self.field(description, 11).first?.string == "classLabel")
        #expect(Self.field(description, 50).count == 2)                  // trainingInput: features, classLabel
        let nn = try Self.field(model, 403).first!.message()
        let layers = try Self.field(nn, 1).map { try $0.message() }
        let names = layers.map { Self.field($0, 1).first!.string }
        #expect(names == ["dense0", "dense0.act", "dense1", "dense1.act", "dense2", "softmax"])
        let updatable = layers.filter { Self.field($0, 10).first?.scalar == 1 }.map { Self.field($0, 1).first!.string }
        #expect(updatable == ["dense2"])
        // The binary output layer is two classes [0, z]: weights [2 × 5], first row zero.
        let ip = try Self.field(layers[4], 140).first!.message()
        #expect(Self.field(ip, 2).first?.int == 2)
        let weights = try Self.field(ip, 20).first!.message()
        let w = try Self.field(weights, 1).first!.floats()
        guard case .dense(let out) = net.stages[2] else { Issue.record("not dense"); return }
        #expect(Array(w.prefix(5)) == [0, 0, 0, 0, 0] && Array(w.suffix(5)) == out.weights)
        #expect(Self.field(weights, 50).first?.scalar == 1)
        // First layer transposed to Core ML's [outputs × inputs].
        guard case .dense(let d0) = net.stages[0] else { return }
        let w0 = try Self.field(try Self.field(try Self.field(layers[0], 140).first!.message(), 20).first!.message(), 1).first!.floats()
        #expect(w0[1 * 4 + 2] == d0.weights[2 * 6 + 1])
        let update = try Self.field(nn, 10).first!.message()
        let loss = try Self.field(update, 1).first!.message()
        let ce = try Self.field(loss, 10).first!.message()
        #expect(Self.field(ce, 1).first?.string == "probabilities_blob" && Self.field(ce, 2).first?.string == "classLabel")
        // Quantised layers cannot be updatable; a layer index must exist.
        let q = try ExportedNetwork(model: m, route: 0, int8: .perChannel)
        #expect(throws: ExportError.self) { try CoreMLExport.modelSpec(q, updatable: .init(denseLayers: [2])) }
        #expect(throws: ExportError.self) { try CoreMLExport.modelSpec(net, updatable: .init(denseLayers: [3])) }
        // int8: raw bytes u = q + 128 with scale s and bias −128·s.
        let qBytes = try CoreMLExport.modelSpec(q)
        let qnn = try Self.field(try ProtobufReader.fields(of: qBytes), 403).first!.message()
        let qw = try Self.field(try Self.field(try Self.field(qnn, 1).first!.message(), 140).first!.message(), 20).first!.message()
        guard case .dense(let qd0) = q.stages[0], let q0 = qd0.int8 else { Issue.record("no int8"); return }
        let raw = Self.field(qw, 30).first!.payload
        #expect(Int(raw[raw.startIndex + 1 * 4 + 2]) - 128 == Int(q0.values[2 * 6 + 1]))
        let lin = try Self.field(try Self.field(qw, 40).first!.message(), 101).first!.message()
        #expect(try Self.field(lin, 1).first!.floats() == q0.scales)
    }
}
