/// Reads the dense weights back from an ONNX model written by `ONNXExport` (for warm starts).
///
/// Only the toolkit's own initializer names are understood (`dense<i>.weight` or
/// `dense<i>.weight_int8` + `dense<i>.weight_scale`, or the factors `dense<i>.u` + `dense<i>.v`
/// of a low-rank layer, and `dense<i>.bias`); int8 weights are dequantised (q·scale), factors
/// multiplied (U·V). Adapter stages, if the file has any, are not part of the plain network
/// and are reported in `adapterCount`.
public struct ONNXWeights: Sendable, Equatable {
    /// Widths: inputs, then every dense stage's outputs.
    public var layerSizes: [Int]
    /// The plain network's flat parameter vector in the toolkit's layout (per layer W [in × out]
    /// row-major, then b).
    public var parameters: [Float]
    /// `metadata_props` of the model.
    public var metadata: [String: String]
    /// Adapter stages found (their parameters are not in `parameters`).
    public var adapterCount: Int
    /// False when the file was exported without its output layer (`continualkit.parts` = core):
    /// then the last size is the last hidden layer's.
    public var includesHead: Bool { metadata["continualkit.parts"] != "core" }

    struct Tensor {
        var dims: [Int]
        var type: Int64
        var floats: [Float]
        var raw: ArraySlice<UInt8>
        var int32s: [Int64]

        /// The values of a float32 initializer (`float_data`, or little-endian `raw_data`), checked
        /// against its shape; `name` is for the messages.
        func floatValues(_ name: String) throws -> [Float] {
            guard type == 1 else { throw ExportError.invalidFile("initializer \(name) is not float32 (data_type \(type))") }
            var v = floats
            if v.isEmpty && !raw.isEmpty {
                guard raw.count % 4 == 0 else { throw ExportError.invalidFile("initializer \(name): raw_data is not a float32 array") }
                v = ProtobufReader.littleEndianFloats(raw)
            }
            guard v.count == ONNXWeights.elementCount(dims) else {
                throw ExportError.invalidFile("initializer \(name) has \(v.count) values for shape \(dims)")
            }
            return v
        }
    }

    /// Parses `bytes` (a serialised ModelProto).
    public init(onnx bytes: [UInt8]) throws {
        let model: [ProtobufReader.Field]
        do { model = try ProtobufReader.fields(of: bytes) } catch {
            throw ExportError.invalidFile("not an ONNX model (protobuf: \(error))")
        }
        let (metadata, tensors, adapters) = try Self.initializers(of: model)
        var sizes: [Int] = []
        var parameters: [Float] = []
        var i = 0
        while true {
            let p = "dense\(i)"
            guard let bias = tensors[p + ".bias"] else { break }
            let (w, dims) = try Self.weight(p, tensors)
            guard dims.count == 2, dims[0] >= 1, dims[1] >= 1 else {
                throw ExportError.invalidFile("initializer \(p).weight has shape \(dims), expected [inputs, outputs]")
            }
            if sizes.isEmpty { sizes = [dims[0]] }
            guard dims[0] == sizes.last! else {
                throw ExportError.invalidFile("\(p).weight has \(dims[0]) inputs; the previous layer has \(sizes.last!) outputs")
            }
            let b = try bias.floatValues(p + ".bias")
            guard b.count == dims[1] else { throw ExportError.invalidFile("\(p).bias has \(b.count) values for \(dims[1]) outputs") }
            sizes.append(dims[1])
            parameters += w
            parameters += b
            i += 1
        }
        guard i > 0 else {
            throw ExportError.invalidFile("the ONNX model has no dense0.weight/dense0.bias initializers (was it exported by `continual export`?)")
        }
        guard parameters.allSatisfy(\.isFinite) else { throw ExportError.invalidFile("the ONNX model has non-finite weights") }
        layerSizes = sizes
        self.parameters = parameters
        self.metadata = metadata
        adapterCount = adapters.count
    }

    /// Elements of a tensor of shape `dims` (negative dimensions count as 0).
    private static func elementCount(_ dims: [Int]) -> Int { dims.reduce(1) { $0 &* max($1, 0) } }

    /// The model's `metadata_props`, its graph's initializers by name, and the adapter stages
    /// they name (`adapter<i>`); throws when the protobuf is malformed or there is no graph.
    private static func initializers(of model: [ProtobufReader.Field]) throws
        -> (metadata: [String: String], tensors: [String: Tensor], adapters: Set<String>) {
        var metadata: [String: String] = [:]
        var tensors: [String: Tensor] = [:]
        var adapters = Set<String>()
        var sawGraph = false
        do {
            for f in model {
                if f.number == 14, f.wireType == .lengthDelimited {          // ModelProto.metadata_props
                    var k = "", v = ""
                    for e in try f.message() {
                        if e.number == 1 { k = e.string } else if e.number == 2 { v = e.string }
                    }
                    metadata[k] = v
                } else if f.number == 7, f.wireType == .lengthDelimited {    // ModelProto.graph
                    sawGraph = true
                    for g in try f.message() where g.number == 5 && g.wireType == .lengthDelimited {  // GraphProto.initializer
                        let (name, t) = try tensor(g)
                        if name.hasPrefix("adapter") { adapters.insert(String(name.prefix { $0 != "." })) }
                        tensors[name] = t
                    }
                }
            }
        } catch let e as ProtobufReader.Failure {
            throw ExportError.invalidFile("not an ONNX model (protobuf: \(e))")
        }
        guard sawGraph else { throw ExportError.invalidFile("not an ONNX model (no graph)") }
        return (metadata, tensors, adapters)
    }

    /// One `TensorProto` (a graph initializer): its name and contents.
    private static func tensor(_ field: ProtobufReader.Field) throws -> (name: String, tensor: Tensor) {
        var t = Tensor(dims: [], type: 0, floats: [], raw: [], int32s: [])
        var name = ""
        for x in try field.message() {
            switch x.number {
            case 1: t.dims += try x.ints().map { Int($0) }        // TensorProto.dims
            case 2: t.type = x.int                                 // TensorProto.data_type
            case 4: t.floats += try x.floats()                     // TensorProto.float_data
            case 5: t.int32s += try x.ints()                       // TensorProto.int32_data
            case 8: name = x.string                                // TensorProto.name
            case 9: t.raw = x.payload                              // TensorProto.raw_data
            default: break
            }
        }
        return (name, t)
    }

    /// Dense layer `p`'s weight matrix W [in × out] (row-major) and its shape: float32, int8 with
    /// its scales (dequantised q·scale), or low-rank factors U·V (multiplied in float64).
    private static func weight(_ p: String, _ tensors: [String: Tensor]) throws -> (w: [Float], dims: [Int]) {
        if let t = tensors[p + ".weight"] {
            return (try t.floatValues(p + ".weight"), t.dims)
        } else if let q = tensors[p + ".weight_int8"], let s = tensors[p + ".weight_scale"] {
            guard q.type == 3, q.dims.count == 2, q.raw.count == elementCount(q.dims) else {
                throw ExportError.invalidFile("initializer \(p).weight_int8 is not an int8 matrix")
            }
            let scales = try s.floatValues(p + ".weight_scale")
            let dims = q.dims
            guard scales.count == 1 || scales.count == dims[1] else {
                throw ExportError.invalidFile("initializer \(p).weight_scale has \(scales.count) scales for \(dims[1]) outputs")
            }
            return (q.raw.enumerated().map { k, byte in Float(Int8(bitPattern: byte)) * scales[scales.count == 1 ? 0 : k % dims[1]] }, dims)
        } else if let tu = tensors[p + ".u"], let tv = tensors[p + ".v"] {
            // A low-rank factorised layer: W = U·V (U [in × r], V [r × out]), merged in float64.
            let u = try tu.floatValues(p + ".u"), v = try tv.floatValues(p + ".v")
            guard tu.dims.count == 2, tv.dims.count == 2, tu.dims[1] == tv.dims[0], tu.dims[1] >= 1,
                  u.count == elementCount(tu.dims), v.count == elementCount(tv.dims) else {
                throw ExportError.invalidFile("initializers \(p).u \(tu.dims) and \(p).v \(tv.dims) are not factors [in, r] and [r, out]")
            }
            let r = tu.dims[1]
            let dims = [tu.dims[0], tv.dims[1]]
            let w = (0..<(dims[0] * dims[1])).map { e in
                let (i, j) = (e / dims[1], e % dims[1])
                return Float((0..<r).reduce(0.0) { $0 + Double(u[i * r + $1]) * Double(v[$1 * dims[1] + j]) })
            }
            return (w, dims)
        } else {
            throw ExportError.invalidFile("the model has \(p).bias but no \(p).weight")
        }
    }
}
