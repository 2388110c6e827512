/// A LiteRT / TensorFlow Lite model as the exporter builds it — subgraphs of tensors and builtin
/// operators, signatures, metadata — and its serialisation to the `.tflite` FlatBuffer
/// (`FlatBufferBuilder`).
///
/// Table and field ids, enum values and union indices are those of the TFLite schema
/// (`tensorflow/compiler/mlir/lite/schema/schema.fbs`, file identifier "TFL3", schema version
/// 3); each written field names its id below. Constant tensors carry their bytes here; buffers
/// are numbered when the model is serialised (buffer 0 is the schema's empty sentinel).
public struct TFLiteModel: Sendable {
    /// `TensorType` values of the schema.
    public enum TensorType: Int8, Sendable {
        case float32 = 0, int32 = 2, int64 = 4, bool = 6, int8 = 9, resource = 13
    }

    /// The builtin operators the exporters use (`BuiltinOperator` values).
    public enum Op: Int32, Sendable, CaseIterable {
        case add = 0, concatenation = 2, dequantize = 6, fullyConnected = 9, logistic = 14, mul = 18, relu = 19
        case reshape = 22, softmax = 25, tanh = 28, transpose = 39, mean = 40, sub = 41, div = 42, log = 73, sum = 74, sqrt = 75
        case batchMatMul = 126, callOnce = 129, varHandle = 142, readVariable = 143, assignVariable = 144, sign = 158
    }

    /// Per-operator options (the `BuiltinOptions` union member and its fields).
    public enum Options: Sendable, Equatable {
        case none
        /// FullyConnectedOptions (union index 8): fused activation NONE, default weights format.
        case fullyConnected
        /// SoftmaxOptions (9): beta.
        case softmax(beta: Float)
        /// ConcatenationOptions (10): axis.
        case concatenation(axis: Int32)
        /// AddOptions (11), MulOptions (21), SubOptions (28), DivOptions (29): no fused activation.
        case add, mul, sub, div
        /// ReshapeOptions (17): no fields (the shape is the second input).
        case reshape
        /// TransposeOptions (26).
        case transpose
        /// ReducerOptions (27): keep_dims.
        case reducer(keepDims: Bool)
        /// BatchMatMulOptions (101): adj_x, adj_y.
        case batchMatMul(adjX: Bool, adjY: Bool)
        /// CallOnceOptions (103): init_subgraph_index.
        case callOnce(initSubgraph: Int32)
        /// VarHandleOptions (111): container, shared_name.
        case varHandle(container: String, sharedName: String)
        /// ReadVariableOptions (112), AssignVariableOptions (113).
        case readVariable, assignVariable
    }

    /// Symmetric quantisation of a constant tensor: f = scale·q (zero point 0).
    public struct Quantization: Sendable, Equatable {
        /// One scale, or one per index of `dimension`.
        public var scales: [Float]
        /// The axis the scales run along (ignored for one scale).
        public var dimension: Int32
    }

    /// One tensor of a subgraph.
    public struct Tensor: Sendable, Equatable {
        public var name: String
        public var type: TensorType
        /// The static shape (a variable batch dimension is 1 here and −1 in `signature`).
        public var shape: [Int32]
        /// `shape_signature`: the shape with −1 for a variable batch dimension, if any.
        public var signature: [Int32]?
        /// Little-endian bytes of a constant, or nil.
        public var data: [UInt8]?
        public var quantization: Quantization?
    }

    /// One operator: inputs and outputs are tensor indices of its subgraph.
    public struct Operator: Sendable, Equatable {
        public var op: Op
        public var version: Int32
        public var inputs: [Int32]
        public var outputs: [Int32]
        public var options: Options
    }

    /// A subgraph: its tensors, operators in execution order, inputs and outputs.
    public struct Subgraph: Sendable {
        public var name: String
        public var tensors: [Tensor] = []
        public var operators: [Operator] = []
        public var inputs: [Int32] = []
        public var outputs: [Int32] = []

        public init(name: String) { self.name = name }

        /// Adds a tensor and returns its index.
        @discardableResult
        public mutating func tensor(_ name: String, _ type: TensorType = .float32, shape: [Int], batch: Bool = false,
                                    data: [UInt8]? = nil, quantization: Quantization? = nil) -> Int32 {
            var s = shape.map(Int32.init)
            var signature: [Int32]? = nil
            if batch {
                signature = [-1] + s
                s = [1] + s
            }
            tensors.append(Tensor(name: name, type: type, shape: s, signature: signature, data: data, quantization: quantization))
            return Int32(tensors.count - 1)
        }

        /// A float32 constant.
        public mutating func constant(_ name: String, shape: [Int], _ values: [Float]) -> Int32 {
            precondition(shape.reduce(1, *) == values.count, "\(name): \(values.count) values for shape \(shape)")
            return tensor(name, .float32, shape: shape, data: TFLiteModel.littleEndian(values.map(\.bitPattern)))
        }

        /// An int32 constant.
        public mutating func constant(_ name: String, shape: [Int], int32 values: [Int32]) -> Int32 {
            precondition(shape.reduce(1, *) == values.count, "\(name): \(values.count) values for shape \(shape)")
            return tensor(name, .int32, shape: shape, data: TFLiteModel.littleEndian(values))
        }

        /// Appends an operator.
        public mutating func add(_ op: Op, version: Int32 = 1, _ inputs: [Int32], _ outputs: [Int32], _ options: Options = .none) {
            operators.append(Operator(op: op, version: version, inputs: inputs, outputs: outputs, options: options))
        }
    }

    /// A signature: a named entry point into a subgraph with named inputs and outputs.
    public struct Signature: Sendable {
        public var key: String
        public var subgraph: Int
        public var inputs: [(name: String, tensor: Int32)]
        public var outputs: [(name: String, tensor: Int32)]
    }

    public var subgraphs: [Subgraph] = []
    public var signatures: [Signature] = []
    /// `Model.description`.
    public var description: String = ""
    /// `Model.metadata` entries (name → a buffer holding the UTF-8 value).
    public var metadata: [(String, String)] = []

    public init() {}

    static func littleEndian<T: FixedWidthInteger>(_ values: [T]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(values.count * MemoryLayout<T>.size)
        for v in values {
            let u = v.littleEndian
            withUnsafeBytes(of: u) { out.append(contentsOf: $0) }
        }
        return out
    }

    /// The distinct (operator, version) pairs in order of first use: `Model.operator_codes`.
    public var operatorCodes: [(op: Op, version: Int32)] {
        var codes: [(op: Op, version: Int32)] = []
        for g in subgraphs {
            for o in g.operators where !codes.contains(where: { $0.op == o.op && $0.version == o.version }) {
                codes.append((o.op, o.version))
            }
        }
        return codes
    }

    /// The `.tflite` bytes.
    public func serialized() -> [UInt8] {
        var b = FlatBufferBuilder(capacity: 4096)
        // Buffers: 0 is the empty sentinel; then each constant's bytes; then the metadata values.
        var bufferData: [[UInt8]] = [[]]
        var tensorBuffers: [[UInt32]] = []
        for g in subgraphs {
            tensorBuffers.append(g.tensors.map { t in
                guard let d = t.data else { return 0 }
                bufferData.append(d)
                return UInt32(bufferData.count - 1)
            })
        }
        let metadataBuffers = metadata.map { entry -> UInt32 in
            bufferData.append(Array(entry.1.utf8))
            return UInt32(bufferData.count - 1)
        }
        let codes = operatorCodes

        // Buffer { data: [ubyte] (force_align: 16) = 0 }
        let buffers = bufferData.map { data -> FlatBufferBuilder.Offset in
            let d = data.isEmpty ? nil : b.bytesVector(data, alignment: 16)
            b.startTable()
            if let d { b.add(0, d) }
            return b.endTable()
        }
        // OperatorCode { deprecated_builtin_code: byte = 0, custom_code = 1, version: int = 1 (id 2), builtin_code: int = 3 }
        let opcodes = codes.map { code -> FlatBufferBuilder.Offset in
            b.startTable()
            b.add(3, code.op.rawValue)
            b.add(2, code.version, default: 1)
            b.add(0, Int8(min(code.op.rawValue, 127)))     // the byte field saturates at PLACEHOLDER_FOR_GREATER_OP_CODES
            return b.endTable()
        }
        let graphs = subgraphs.enumerated().map { (gi, g) in serialize(g, buffers: tensorBuffers[gi], codes: codes, into: &b) }
        let signatureDefs = signatures.map { s -> FlatBufferBuilder.Offset in
            func maps(_ list: [(name: String, tensor: Int32)]) -> FlatBufferBuilder.Offset {
                let entries = list.map { e -> FlatBufferBuilder.Offset in
                    let name = b.string(e.name)
                    b.startTable()                           // TensorMap { name = 0, tensor_index = 1 }
                    b.add(0, name)
                    b.add(1, UInt32(e.tensor))
                    return b.endTable()
                }
                return b.vector(entries)
            }
            let inputs = maps(s.inputs), outputs = maps(s.outputs), key = b.string(s.key)
            b.startTable()                                   // SignatureDef { inputs = 0, outputs = 1, signature_key = 2, subgraph_index = 4 }
            b.add(0, inputs)
            b.add(1, outputs)
            b.add(2, key)
            b.add(4, UInt32(s.subgraph))
            return b.endTable()
        }
        let metadataTables = zip(metadata, metadataBuffers).map { entry, buffer -> FlatBufferBuilder.Offset in
            let name = b.string(entry.0)
            b.startTable()                                   // Metadata { name = 0, buffer = 1 }
            b.add(0, name)
            b.add(1, buffer)
            return b.endTable()
        }
        let bufferVector = b.vector(buffers)
        let opcodeVector = b.vector(opcodes)
        let subgraphVector = b.vector(graphs)
        let signatureVector = b.vector(signatureDefs)
        let metadataVector = b.vector(metadataTables)
        let descriptionString = b.string(description)
        b.startTable()                                       // Model
        b.add(0, UInt32(3))                                  // version = 0 (schema version 3)
        b.add(1, opcodeVector)                               // operator_codes = 1
        b.add(2, subgraphVector)                             // subgraphs = 2
        b.add(3, descriptionString)                          // description = 3
        b.add(4, bufferVector)                               // buffers = 4
        if !metadata.isEmpty { b.add(6, metadataVector) }    // metadata = 6
        if !signatures.isEmpty { b.add(7, signatureVector) } // signature_defs = 7
        let model = b.endTable()
        b.finish(root: model, fileIdentifier: "TFL3")
        return b.bytes
    }

    private func serialize(_ g: Subgraph, buffers: [UInt32], codes: [(op: Op, version: Int32)],
                           into b: inout FlatBufferBuilder) -> FlatBufferBuilder.Offset {
        let tensors = g.tensors.enumerated().map { (i, t) -> FlatBufferBuilder.Offset in
            let shape = b.vector(t.shape)
            let signature = t.signature.map { b.vector($0) }
            let name = b.string(t.name)
            var quantization: FlatBufferBuilder.Offset? = nil
            if let q = t.quantization {
                let scales = b.vector(q.scales)
                let zeros = b.vector([Int64](repeating: 0, count: q.scales.count))
                b.startTable()                               // QuantizationParameters
                b.add(2, scales)                             // scale = 2
                b.add(3, zeros)                              // zero_point = 3
                b.add(6, q.scales.count > 1 ? q.dimension : 0)  // quantized_dimension = 6
                quantization = b.endTable()
            }
            b.startTable()                                   // Tensor
            b.add(0, shape)                                  // shape = 0
            b.add(1, t.type.rawValue)                        // type = 1
            b.add(2, buffers[i])                             // buffer = 2
            b.add(3, name)                                   // name = 3
            if let quantization { b.add(4, quantization) }   // quantization = 4
            if let signature { b.add(7, signature) }         // shape_signature = 7
            b.add(8, true)                                   // has_rank = 8 (known rank; also for scalars)
            return b.endTable()
        }
        let operators = g.operators.map { o -> FlatBufferBuilder.Offset in
            let inputs = b.vector(o.inputs), outputs = b.vector(o.outputs)
            let (unionType, options) = Self.options(o.options, into: &b)
            let index = codes.firstIndex { $0.op == o.op && $0.version == o.version }!
            b.startTable()                                   // Operator
            b.add(0, UInt32(index))                          // opcode_index = 0
            b.add(1, inputs)                                 // inputs = 1
            b.add(2, outputs)                                // outputs = 2
            if let options {
                b.add(3, unionType)                          // builtin_options_type = 3
                b.add(4, options)                            // builtin_options = 4
            }
            return b.endTable()
        }
        let tensorVector = b.vector(tensors)
        let inputs = b.vector(g.inputs), outputs = b.vector(g.outputs)
        let operatorVector = b.vector(operators)
        let name = b.string(g.name)
        b.startTable()                                       // SubGraph
        b.add(0, tensorVector)                               // tensors = 0
        b.add(1, inputs)                                     // inputs = 1
        b.add(2, outputs)                                    // outputs = 2
        b.add(3, operatorVector)                             // operators = 3
        b.add(4, name)                                       // name = 4
        return b.endTable()
    }

    /// The union type and table of `options` (nil table for `.none`).
    static func options(_ options: Options, into b: inout FlatBufferBuilder) -> (UInt8, FlatBufferBuilder.Offset?) {
        func empty(_ type: UInt8) -> (UInt8, FlatBufferBuilder.Offset?) {
            b.startTable()
            return (type, b.endTable())
        }
        switch options {
        case .none:
            return (0, nil)
        case .fullyConnected:
            return empty(8)                                  // fused_activation_function NONE, weights_format DEFAULT
        case .softmax(let beta):
            b.startTable()
            b.add(0, beta, default: 0)                       // beta = 0 (schema default 0: written)
            return (9, b.endTable())
        case .concatenation(let axis):
            b.startTable()
            b.add(0, axis)                                   // axis = 0
            return (10, b.endTable())
        case .add: return empty(11)
        case .mul: return empty(21)
        case .sub: return empty(28)
        case .div: return empty(29)
        case .reshape: return empty(17)
        case .transpose: return empty(26)
        case .reducer(let keepDims):
            b.startTable()
            b.add(0, keepDims)                               // keep_dims = 0
            return (27, b.endTable())
        case .batchMatMul(let adjX, let adjY):
            b.startTable()
            b.add(0, adjX)                                   // adj_x = 0
            b.add(1, adjY)                                   // adj_y = 1
            return (101, b.endTable())
        case .callOnce(let index):
            b.startTable()
            b.add(0, index, force: true)                     // init_subgraph_index = 0
            return (103, b.endTable())
        case .varHandle(let container, let shared):
            let c = b.string(container), s = b.string(shared)
            b.startTable()
            b.add(0, c)                                      // container = 0
            b.add(1, s)                                      // shared_name = 1
            return (111, b.endTable())
        case .readVariable: return empty(112)
        case .assignVariable: return empty(113)
        }
    }
}
