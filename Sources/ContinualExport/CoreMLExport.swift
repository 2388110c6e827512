import ContinualCore

/// Writes an `ExportedNetwork` as a Core ML model specification (`.mlmodel`, specification
/// version 4): a `NeuralNetworkClassifier` with `innerProduct` layers, activation layers, `add`
/// layers for adapters and a `softmax` layer; inputs `features` (multi-array float32 [d]),
/// outputs `classLabel` (int64) and `probabilities` (int64 → double dictionary). A core-only
/// graph (`ExportedNetwork.core()`) is a plain `NeuralNetwork` with the output `embedding`.
///
/// A binary head (one logit z) becomes a two-class softmax over [0, z], which equals
/// [1 − σ(z), σ(z)]: the output layer gets a zero row of weights and a zero bias first.
///
/// Updatable models (`Updatable`): the chosen dense layers are marked updatable with a
/// categorical cross-entropy loss on the softmax and an SGD optimizer — what Core ML's update
/// task (`MLUpdateTask`) supports. Core ML updates a layer's weights *and* bias together, so a
/// bias-only update (BitFit) cannot be expressed: its layers are marked updatable as a whole.
/// Int8 models store their weights as 8-bit linear quantisation (`rawValue` bytes u = q + 128
/// with per-channel scale s and bias −128·s, so w = s·u − 128·s = s·q); quantised layers cannot
/// be updatable in Core ML. A layer factorised by `low_rank` is written as its product U·V (one
/// `innerProduct`, in·out weights): one layer per dense stage keeps `Updatable.denseLayers` and
/// the binary-head rewrite as they are, and predictions are the toolkit's; only the ONNX file
/// keeps the factors (two MatMuls, r·(in + out) weights).
///
/// Field numbers are those of apple/coremltools `mlmodel/format/Model.proto`,
/// `NeuralNetwork.proto`, `FeatureTypes.proto`, `Parameters.proto` and `DataStructures.proto`.
public enum CoreMLExport {
    /// The specification version written (Core ML 3, iOS 13: on-device update).
    public static let specificationVersion: Int64 = 4

    /// Which layers Core ML's update task may train, and how.
    public struct Updatable: Sendable, Equatable {
        /// Indices of dense stages (0 = first hidden layer; the output layer is the last).
        public var denseLayers: [Int]
        /// SGD's default learning rate (the app may override it within 0…max(1, this)).
        public var learningRate: Double
        /// Samples per update step.
        public var miniBatchSize: Int
        /// Passes over the update data per `MLUpdateTask`.
        public var epochs: Int
        /// Update parameters for the dense layers `denseLayers`.
        public init(denseLayers: [Int], learningRate: Double = 0.01, miniBatchSize: Int = 16, epochs: Int = 1) {
            self.denseLayers = denseLayers
            self.learningRate = learningRate
            self.miniBatchSize = miniBatchSize
            self.epochs = epochs
        }
    }

    // FeatureTypes.proto, ArrayFeatureType.ArrayDataType.FLOAT32
    static let float32Array: Int64 = 65568

    /// Why `network` cannot be written with `updatable`, or nil.
    public static func unsupportedReason(_ network: ExportedNetwork, updatable: Updatable?) -> String? {
        guard let u = updatable else { return nil }
        let n = network.denseStages.count
        if u.denseLayers.isEmpty { return "an updatable Core ML model needs at least one updatable layer" }
        if let bad = u.denseLayers.first(where: { !(0..<n).contains($0) }) {
            return "updatable layer \(bad) does not exist (the model has \(n) dense layers)"
        }
        if network.isQuantized { return "Core ML cannot update quantised layers: export int8 models without --updatable" }
        if !network.includesHead { return "a core-only model has no loss to train: export all parts to make it updatable" }
        if !(u.learningRate > 0 && u.learningRate.isFinite) { return "the learning rate must be positive, got \(u.learningRate)" }
        if u.miniBatchSize < 1 || u.epochs < 1 { return "mini-batch size and epochs must be ≥ 1" }
        return nil
    }

    /// The serialised `Model` message of `network`; `metadata` goes to the description's
    /// user-defined metadata.
    public static func modelSpec(_ network: ExportedNetwork, updatable: Updatable? = nil, version: String = "",
                                 shortDescription: String = "", metadata: [(String, String)] = []) throws -> [UInt8] {
        if let reason = unsupportedReason(network, updatable: updatable) { throw ExportError.unsupported(reason) }
        var model = ProtobufWriter()
        model.int(1, specificationVersion)                        // Model.specificationVersion = 1
        model.message(2) { d in                                   // Model.description = 2
            description(&d, network, updatable: updatable != nil, version: version,
                        shortDescription: shortDescription, metadata: metadata)
        }
        if updatable != nil { model.bool(10, true) }              // Model.isUpdatable = 10
        if network.includesHead {
            model.message(403) { nn in                            // Model.neuralNetworkClassifier = 403
                classifier(&nn, network, updatable: updatable)
            }
        } else {
            model.message(500) { nn in                            // Model.neuralNetwork = 500
                let last = layers(&nn, network, updatable: nil)   // NeuralNetwork.layers = 1
                // The output blob must carry the output feature's name: a linear activation
                // (ActivationParams.linear = 5: alpha = 1, beta = 2) y = 1·x + 0 renames it.
                nn.message(1) { l in
                    l.string(1, "embedding")
                    l.string(2, last)
                    l.string(3, "embedding")
                    l.message(130) { $0.message(5) { lin in lin.float(1, 1); lin.float(2, 0) } }
                }
            }
        }
        return model.bytes
    }

    /// FeatureDescription: name = 1, shortDescription = 2, type = 3 (FeatureType: int64Type = 1,
    /// multiArrayType = 5 {shape = 1, dataType = 2}, dictionaryType = 6 {int64KeyType = 1}).
    static func feature(_ w: inout ProtobufWriter, _ field: Int, _ name: String, _ text: String, kind: Int, width: Int = 0) {
        w.message(field) { f in
            f.string(1, name)
            f.string(2, text)
            f.message(3) { t in
                switch kind {
                case 0: t.message(5) { a in a.packedInts(1, [Int64(width)]); a.int(2, float32Array) }
                case 1: t.message(1) { _ in }
                default: t.message(6) { $0.message(1) { _ in } }
                }
            }
        }
    }

    /// ModelDescription: input = 1, output = 10, predictedFeatureName = 11,
    /// predictedProbabilitiesName = 12, trainingInput = 50, metadata = 100 (Metadata:
    /// shortDescription = 1, versionString = 2, author = 3, userDefined = 100 as map entries
    /// key = 1, value = 2).
    static func description(_ d: inout ProtobufWriter, _ network: ExportedNetwork, updatable: Bool, version: String,
                            shortDescription: String, metadata: [(String, String)]) {
        feature(&d, 1, "features", "the \(network.inputs) input features, in the scenario's column order", kind: 0, width: network.inputs)
        if network.includesHead {
            feature(&d, 10, "classLabel", "predicted class", kind: 1)
            feature(&d, 10, "probabilities", "class probabilities", kind: 2)
            d.string(11, "classLabel")
            d.string(12, "probabilities")
        } else {
            feature(&d, 10, "embedding", "the last hidden layer's activations", kind: 0, width: network.outputWidth)
        }
        if updatable {
            feature(&d, 50, "features", "the \(network.inputs) input features, in the scenario's column order", kind: 0, width: network.inputs)
            feature(&d, 50, "classLabel", "true class (the training target)", kind: 1)
        }
        d.message(100) { m in
            if !shortDescription.isEmpty { m.string(1, shortDescription) }
            if !version.isEmpty { m.string(2, version) }
            m.string(3, "ContinualKit")
            let sizes = [network.inputs] + network.denseStages.map(\.outputs)
            let all = [("continualkit.layer_sizes", sizes.map(String.init).joined(separator: ",")),
                       ("continualkit.route", String(network.route)),
                       ("continualkit.parts", network.includesHead ? "all" : "core")] + metadata
            for (k, v) in all {
                m.message(100) { e in e.string(1, k); e.string(2, v) }
            }
        }
    }

    /// NeuralNetworkClassifier: layers = 1, updateParams = 10, int64ClassLabels = 101
    /// (Int64Vector.vector = 1), labelProbabilityLayerName = 200.
    static func classifier(_ nn: inout ProtobufWriter, _ network: ExportedNetwork, updatable: Updatable?) {
        let logits = layers(&nn, network, updatable: updatable)
        softmaxAndUpdate(&nn, network, logits: logits, updatable: updatable)
    }

    /// The layers of every stage (NeuralNetwork(Classifier).layers = 1); returns the last blob.
    static func layers(_ nn: inout ProtobufWriter, _ network: ExportedNetwork, updatable: Updatable?) -> String {
        var current = "features"
        let dense = network.denseStages.count
        var denseIndex = 0, adapterIndex = 0
        for stage in network.stages {
            switch stage {
            case .dense(var d):
                let name = "dense\(denseIndex)"
                let isOutput = network.includesHead && denseIndex == dense - 1
                if isOutput, network.head == .binary {
                    // Two logits [0, z]: softmax = [1 − σ(z), σ(z)]. Weights are [outputs × inputs].
                    d = ExportedNetwork.Dense(inputs: d.inputs, outputs: 2, weights: binaryWeights(d),
                                              bias: [0] + d.bias, activation: d.activation,
                                              int8: d.int8.map { q in binaryInt8(q, inputs: d.inputs) })
                }
                let isUpdatable = updatable?.denseLayers.contains(denseIndex) ?? false
                let out = name + ".z"
                nn.message(1) { innerProduct(&$0, name, current, out, d, updatable: isUpdatable) }
                current = activationLayer(&nn, d.activation, name + ".act", input: out, output: name + ".out")
                denseIndex += 1
            case .adapter(let a):
                let p = "adapter\(adapterIndex)"
                let down = ExportedNetwork.Dense(inputs: a.width, outputs: a.bottleneck, weights: a.down, bias: a.downBias,
                                                 activation: a.activation, int8: nil)
                let up = ExportedNetwork.Dense(inputs: a.bottleneck, outputs: a.width, weights: a.up, bias: a.upBias,
                                               activation: .identity, int8: nil)
                nn.message(1) { innerProduct(&$0, p + ".down", current, p + ".down.z", down, updatable: false) }
                let u = activationLayer(&nn, a.activation, p + ".down.act", input: p + ".down.z", output: p + ".down.out")
                nn.message(1) { innerProduct(&$0, p + ".up", u, p + ".up.z", up, updatable: false) }
                let input = current
                nn.message(1) { l in                              // NeuralNetworkLayer
                    l.string(1, p + ".residual")                  // name = 1
                    l.string(2, input)                            // input = 2
                    l.string(2, p + ".up.z")
                    l.string(3, p + ".out")                       // output = 3
                    l.message(230) { _ in }                       // add = 230 (AddLayerParams, alpha 0)
                }
                current = p + ".out"
                adapterIndex += 1
            }
        }
        return current
    }

    /// The softmax, the update parameters and the class labels of the classifier.
    static func softmaxAndUpdate(_ nn: inout ProtobufWriter, _ network: ExportedNetwork, logits: String, updatable: Updatable?) {
        nn.message(1) { l in
            l.string(1, "softmax")
            l.string(2, logits)
            l.string(3, "probabilities_blob")
            l.message(175) { _ in }                               // softmax = 175
        }
        if let u = updatable {
            nn.message(10) { p in                                 // updateParams = 10 (NetworkUpdateParameters)
                p.message(1) { loss in                            // lossLayers = 1 (LossLayer)
                    loss.string(1, "loss")                        // name = 1
                    loss.message(10) { ce in                      // categoricalCrossEntropyLossLayer = 10
                        ce.string(1, "probabilities_blob")        // input = 1
                        ce.string(2, "classLabel")                // target = 2
                    }
                }
                p.message(2) { o in                               // optimizer = 2 (Optimizer)
                    o.message(10) { sgd in                        // sgdOptimizer = 10 (SGDOptimizer)
                        sgd.message(1) { lr in                    // learningRate = 1 (DoubleParameter)
                            lr.double(1, u.learningRate)          // defaultValue = 1
                            lr.message(10) { r in r.double(1, 0); r.double(2, max(1, u.learningRate)) }   // range = 10 (DoubleRange min = 1, max = 2)
                        }
                        sgd.message(2) { b in                     // miniBatchSize = 2 (Int64Parameter)
                            b.int(1, Int64(u.miniBatchSize))      // defaultValue = 1
                            b.message(10) { r in r.int(1, 1); r.int(2, Int64(max(u.miniBatchSize, 1024))) }  // range = 10 (Int64Range)
                        }
                        sgd.message(3) { m in                     // momentum = 3 (DoubleParameter)
                            m.double(1, 0)
                            m.message(10) { r in r.double(1, 0); r.double(2, 1) }
                        }
                    }
                }
                p.message(3) { e in                               // epochs = 3 (Int64Parameter)
                    e.int(1, Int64(u.epochs))
                    e.message(10) { r in r.int(1, 1); r.int(2, Int64(max(u.epochs, 1000))) }
                }
            }
        }
        let classes = network.head.classCount
        nn.message(101) { $0.packedInts(1, (0..<classes).map(Int64.init)) }   // int64ClassLabels = 101
        nn.string(200, "probabilities_blob")                      // labelProbabilityLayerName = 200
    }

    /// Binary output layer as two classes: Core ML weights are [outputs × inputs], so the
    /// toolkit's [inputs × 1] column becomes the second row after a zero row.
    static func binaryWeights(_ d: ExportedNetwork.Dense) -> [Float] {
        var w = [Float](repeating: 0, count: 2 * d.inputs)
        for k in 0..<d.inputs { w[k * 2 + 1] = d.weights[k] }        // kept in [inputs × outputs] here
        return w
    }

    static func binaryInt8(_ q: ExportedNetwork.Int8Weights, inputs: Int) -> ExportedNetwork.Int8Weights {
        var v = [Int8](repeating: 0, count: 2 * inputs)
        for k in 0..<inputs { v[k * 2 + 1] = q.values[k] }
        return ExportedNetwork.Int8Weights(values: v, scales: [1] + q.scales, perTensor: false)
    }

    /// NeuralNetworkLayer: name = 1, input = 2, output = 3, isUpdatable = 10, innerProduct = 140
    /// (InnerProductLayerParams: inputChannels = 1, outputChannels = 2, hasBias = 10,
    /// weights = 20, bias = 21; WeightParams: floatValue = 1, rawValue = 30, quantization = 40,
    /// isUpdatable = 50; QuantizationParams: numberOfBits = 1, linearQuantization = 101
    /// {scale = 1, bias = 2}). Weights are written [outputs × inputs] (Core ML's layout).
    static func innerProduct(_ l: inout ProtobufWriter, _ name: String, _ input: String, _ output: String,
                             _ d: ExportedNetwork.Dense, updatable: Bool) {
        l.string(1, name)
        l.string(2, input)
        l.string(3, output)
        if updatable { l.bool(10, true) }
        l.message(140) { ip in
            ip.int(1, Int64(d.inputs))
            ip.int(2, Int64(d.outputs))
            ip.bool(10, true)
            ip.message(20) { w in
                if let q = d.int8 {
                    var raw = [UInt8](repeating: 0, count: d.inputs * d.outputs)
                    for j in 0..<d.outputs {
                        for k in 0..<d.inputs { raw[j * d.inputs + k] = UInt8(Int(q.values[k * d.outputs + j]) + 128) }
                    }
                    w.data(30, raw)
                    w.message(40) { qp in
                        qp.int(1, 8)
                        qp.message(101) { lin in
                            lin.packedFloats(1, q.scales)
                            lin.packedFloats(2, q.scales.map { -128 * $0 })
                        }
                    }
                } else {
                    var t = [Float](repeating: 0, count: d.inputs * d.outputs)
                    for j in 0..<d.outputs {
                        for k in 0..<d.inputs { t[j * d.inputs + k] = d.weights[k * d.outputs + j] }
                    }
                    w.packedFloats(1, t)
                }
                if updatable { w.bool(50, true) }
            }
            ip.message(21) { b in
                b.packedFloats(1, d.bias)
                if updatable { b.bool(50, true) }
            }
        }
    }

    /// An activation layer (ActivationParams = 130: ReLU = 10, tanh = 30, sigmoid = 40); the
    /// identity adds none. Returns the blob that carries the result.
    static func activationLayer(_ nn: inout ProtobufWriter, _ act: Activation, _ name: String,
                                input: String, output: String) -> String {
        let field: Int
        switch act {
        case .identity: return input
        case .relu: field = 10
        case .tanh: field = 30
        case .sigmoid: field = 40
        }
        nn.message(1) { l in
            l.string(1, name)
            l.string(2, input)
            l.string(3, output)
            l.message(130) { $0.message(field) { _ in } }
        }
        return output
    }
}
