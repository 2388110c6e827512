import ArgumentParser
import ContinualCore
import ContinualExperiments
import ContinualExport
import Foundation

/// `continual export RESULTS.h5 --run NAME --format onnx|coreml|tflite --output FILE`.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a run's trained model as ONNX, LiteRT (.tflite) or a Core ML spec.",
        discussion: """
        The model is rebuilt from the run's config and final_parameters (or from a checkpoint with \
        --checkpoint). ONNX: inference graph with outputs logits and probabilities; LoRA updates are \
        merged into their weights, adapters exported as their own nodes. LiteRT (tflite): the same \
        graph in builtin operators (signature serving_default). Core ML: a neural-network \
        classifier (outputs classLabel, probabilities); for last_layer and bitfit runs the layers \
        they train are marked updatable (categorical cross-entropy, SGD) unless --no-updatable. \
        --int8 writes int8 weights with their scales (plain dense models). A model with one copy \
        per task or context is exported one route at a time (--route). See docs/export.md.
        """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable { case onnx, coreml, tflite }

    @Argument(help: "Results file (.h5) written by `continual run` (omit with --checkpoint).")
    var results: String?

    @Option(name: .customLong("run"), help: "The run to export, by name or run id (required with a results file that has several runs).")
    var runName: String?

    @Option(help: "Export a checkpoint file (written by `continual run --checkpoint`) instead of a results file's run.")
    var checkpoint: String?

    @Option(help: "For a population run: the person whose final model to export (their name in the data file's user column, or their user id).")
    var user: String?

    @Option(help: "onnx, coreml or tflite (LiteRT).")
    var format: Format

    @Option(name: [.short, .long], help: "File to write (.onnx, .mlmodel or .tflite).")
    var output: String

    @Option(help: "Route (task or context index) whose heads/adapters/LoRA copies are exported; default: the last experience's.")
    var route: Int?

    @Option(help: "all: the whole network; core: without the output layer (output `embedding`, the last hidden activations), for an app that trains its own head.")
    var parts: Parts = .all

    enum Parts: String, ExpressibleByArgument, CaseIterable { case all, core }

    @Flag(help: "Quantise the dense weights to int8 as the toolkit's int8 evaluation does (scales per channel, or the run's quantization.granularity).")
    var int8 = false

    @Flag(inversion: .prefixedNo, help: "Core ML: mark the layers the run's strategy trains on device (last_layer, bitfit) as updatable (default: yes for those strategies). LiteRT: add a train signature for a last_layer or bitfit run (SGD or Adam; default: no).")
    var updatable: Bool? = nil

    @Option(help: "Also write the toolkit's own outputs (features, labels, logits, probabilities) on every test set through the exported route, as JSON, to compare runtimes against.")
    var reference: String?

    func run() throws {
        let stored = try load()
        let sourceName = sourceName(stored)
        let route = self.route ?? stored.lastRoute
        if let e = stored.model.routeError(route) { throw CLIFailure.badInput("--route: \(e)") }
        let form = try exportForm(stored, route: route, sourceName: sourceName)
        let model = form.model
        let granularity: QuantizedMLP.Granularity? = int8 ? (stored.config.quantization?.granularity ?? .perChannel) : nil
        let network: ExportedNetwork
        do {
            let whole = try ExportedNetwork(model: model, route: route, int8: granularity)
            network = parts == .core ? try whole.core() : whole
        } catch {
            throw CLIFailure.badInput("cannot export \(sourceName): \(error)")
        }
        let metadata: [(String, String)] = [
            ("continualkit.source", sourceName),
            ("continualkit.strategy", stored.config.strategyLabel),
            ("continualkit.features", stored.stream.featureNames.joined(separator: ",")),
            ("continualkit.precision", granularity.map { "int8 (\($0.rawValue))" } ?? "float32"),
        ]
        let bytes: [UInt8]
        switch format {
        case .onnx:
            if updatable == true { throw CLIFailure.badInput("--updatable applies to --format coreml only") }
            bytes = ONNXExport.modelProto(network, producerVersion: ResultsSchema.toolkitVersion, metadata: metadata)
        case .tflite:
            bytes = try tfliteBytes(stored, network: network, route: route, sourceName: sourceName, metadata: metadata)
        case .coreml:
            bytes = try coreMLBytes(stored, network: network, sourceName: sourceName, metadata: metadata)
        }
        try Self.writeWhole(Data(bytes), to: output)
        printWritten(stored, model: model, network: network, granularity: granularity, route: route, byteCount: bytes.count)
        if let task = form.task { print("task \(task)'s unit gates are folded into the weights (the mask the run evaluated it with)") }
        if let reference {
            try writeReference(stored, exported: model, gates: form.gates, network: network, granularity: granularity, route: route,
                               to: reference)
        }
    }

    /// The network that predicts what the run evaluated through `route` (gates folded in), or a
    /// refusal (also of --parts core when the last hidden layer's gates live in the output layer).
    private func exportForm(_ stored: StoredModel, route: Int, sourceName: String) throws -> (model: MLP, gates: UnitGates?, task: Int?) {
        let form: (model: MLP, gates: UnitGates?, task: Int?)
        do { form = try stored.exportedNetwork(route: route) } catch {
            throw CLIFailure.badInput("cannot export \(sourceName): \(error)")
        }
        if form.gates != nil && parts == .core {
            throw CLIFailure.badInput("cannot export \(sourceName) with --parts core: its last hidden layer's task gates are folded into "
                + "the output layer, so the core alone would not give the evaluated features")
        }
        return form
    }

    /// The `.tflite` bytes: inference only, or (opt-in, --updatable) with a `train` signature for
    /// what the strategy trains on device.
    private func tfliteBytes(_ stored: StoredModel, network: ExportedNetwork, route: Int, sourceName: String,
                             metadata: [(String, String)]) throws -> [UInt8] {
        let description = "ContinualKit \(stored.config.strategyLabel) model (\(sourceName)), route \(route)"
        let tfliteMetadata = metadata + [("continualkit.version", ResultsSchema.toolkitVersion)]
        guard updatable == true else {
            return TFLiteExport.model(network, description: description, metadata: tfliteMetadata)
        }
        // Opt-in: a `train` signature for what the strategy trains on device (plain SGD):
        // the output layer (last_layer) or every bias (bitfit on a single-head model).
        let names = stored.config.strategy.map(\.typeName)
        let trainable: TFLiteTraining.Trainable
        if names.contains("last_layer"), stored.onDeviceTrainableLayers == [stored.model.spec.denseLayerCount - 1] {
            trainable = .outputLayer
        } else if names.contains("bitfit"), stored.model.spec.heads == 1 {
            trainable = .biases
        } else {
            throw CLIFailure.badInput("--updatable with --format tflite: strategy \(stored.config.strategyLabel) does not train "
                + "a fixed set of layers on device; LiteRT training signatures are exported for last_layer and (single-head) bitfit runs")
        }
        if let reason = TFLiteTraining.unsupportedReason(network, optimizer: stored.config.optimizer.spec, trainable: trainable) {
            throw CLIFailure.badInput("--updatable with --format tflite: \(reason)")
        }
        do {
            return try TFLiteTraining.model(network, trainable: trainable, optimizer: stored.config.optimizer.spec,
                                            description: description, metadata: tfliteMetadata)
        } catch {
            throw CLIFailure.badInput("cannot export \(sourceName) to LiteRT: \(error)")
        }
    }

    /// The Core ML spec bytes; the layers a last_layer or bitfit run trains are updatable unless
    /// --no-updatable (or --int8 without --updatable).
    private func coreMLBytes(_ stored: StoredModel, network: ExportedNetwork, sourceName: String,
                             metadata: [(String, String)]) throws -> [UInt8] {
        var update: CoreMLExport.Updatable? = nil
        let trainable = stored.onDeviceTrainableLayers
        if updatable == true && parts == .core {
            throw CLIFailure.badInput("--updatable: a core-only model (--parts core) has no output layer or loss to train")
        }
        if updatable == true && trainable == nil {
            throw CLIFailure.badInput("--updatable: strategy \(stored.config.strategyLabel) does not train a fixed set of dense layers on device; "
                + "Core ML updatable models are exported for last_layer and bitfit runs")
        }
        if updatable != false, parts == .all, let layers = trainable, !(int8 && updatable == nil) {
            update = CoreMLExport.Updatable(denseLayers: layers, learningRate: Double(stored.config.optimizer.learningRate),
                                            miniBatchSize: stored.config.training.options.batchSize,
                                            epochs: max(stored.config.training.options.epochs, 1))
        }
        do {
            return try CoreMLExport.modelSpec(network, updatable: update, version: ResultsSchema.toolkitVersion,
                                              shortDescription: "ContinualKit \(stored.config.strategyLabel) model (\(sourceName))",
                                              metadata: metadata + [("continualkit.updatable_layers", update.map { $0.denseLayers.map(String.init).joined(separator: ",") } ?? "")])
        } catch {
            throw CLIFailure.badInput("cannot export \(sourceName) to Core ML: \(error)")
        }
    }

    /// "wrote FILE: format, route, stages, precision, size" (and a LiteRT training model's signatures).
    private func printWritten(_ stored: StoredModel, model: MLP, network: ExportedNetwork, granularity: QuantizedMLP.Granularity?,
                              route: Int, byteCount: Int) {
        let kinds = network.stages.map { stage -> String in
            switch stage {
            case .adapter: return "adapter"
            case .dense(let d) where d.factors != nil: return "dense, rank-\(d.factors!.rank) factors"
            case .dense: return "dense"
            }
        }
        // LoRA updates are merged into W; `low_rank` factors (W exactly 0) are kept as factors in
        // ONNX and written as their product U·V in Core ML and LiteRT.
        let factorised = network.stages.contains { if case .dense(let d) = $0 { return d.factors != nil } else { return false } }
        let lowRankNote = model.spec.lowRank.isEmpty ? "" : factorised
            ? (format == .onnx ? "" : ", low-rank factors written as their product U·V") : ", LoRA merged"
        print("wrote \(output): \(format.rawValue), route \(route), \(kinds.count) stages (\(kinds.joined(separator: ", "))), "
              + "\(granularity.map { "int8 " + $0.rawValue } ?? "float32")\(lowRankNote)"
              + "\(parts == .core ? ", core only (output embedding)" : ""), \(byteCount) bytes")
        if format == .tflite && updatable == true {
            let adam: Bool = { if case .adam = stored.config.optimizer.spec { return true } else { return false } }()
            print("signatures: serving_default, train (one \(adam ? "Adam" : "SGD") step), parameters, restore"
                  + (adam ? ", begin_session" : ""))
        }
    }

    /// The exported model's source, as named in messages and metadata.
    func sourceName(_ stored: StoredModel) -> String {
        if let checkpoint { return "checkpoint \(checkpoint)" }
        return (stored.user.map { "user \"\($0)\" of " } ?? "") + "run \"\(stored.run)\" of \(results ?? "")"
    }

    func load() throws -> StoredModel {
        if let checkpoint {
            guard results == nil, runName == nil, user == nil else {
                throw CLIFailure.badInput("give either a results file with --run (and --user), or --checkpoint, not both")
            }
            do { return try StoredModel.load(checkpoint: checkpoint) } catch { throw CLIFailure.badInput("\(error)") }
        }
        guard let results else { throw CLIFailure.badInput("give a results file (.h5) and --run, or --checkpoint FILE") }
        guard FileManager.default.fileExists(atPath: results) else { throw CLIFailure.badInput("\(results): no such file") }
        var name = runName
        if name == nil {
            let runs = (try? ResultsReader.read(path: results))?.runs ?? []
            guard runs.count == 1 else {
                throw CLIFailure.badInput("\(results) has \(runs.count) runs; choose one with --run (names: "
                    + runs.prefix(8).map(\.name).joined(separator: ", ") + (runs.count > 8 ? ", …" : "") + ")")
            }
            name = runs[0].runId
        }
        do {
            if let user { return try StoredModel.load(results: results, run: name!, user: user) }
            return try StoredModel.load(results: results, run: name!)
        } catch { throw CLIFailure.badInput("\(error)") }
    }

    /// The toolkit's outputs through `route` on every test set: the float model's own forward
    /// pass (LoRA unmerged, adapters as trained) or, with int8, `QuantizedMLP`. Core only: the
    /// forward pass's activations entering the output layer (int8: the exported graph's). With
    /// `gates` (HAT), the float outputs are the run's gated forward pass, as evaluated.
    func writeReference(_ stored: StoredModel, exported: MLP, gates: UnitGates?, network: ExportedNetwork,
                        granularity: QuantizedMLP.Granularity?, route: Int, to path: String) throws {
        // Gated runs: the run's own network through its gates; otherwise the exported network
        // (the stored one, or its replaced output layer for SLDA).
        let model = gates == nil ? exported : stored.model
        let ws = model.makeWorkspace(capacity: 1)
        let q = granularity.map { QuantizedMLP(exported, granularity: $0) }
        var experiences: [[String: Any]] = []
        for e in stored.stream.experiences {
            var features: [[Double]] = [], logits: [[Double]] = [], probabilities: [[Double]] = []
            var embeddings: [[Double]] = []
            for i in 0..<e.test.count {
                let x = Array(e.test.row(i))
                if !network.includesHead {
                    features.append(x.map(Double.init))
                    if q != nil {
                        embeddings.append(network.logits(x).map(Double.init))
                    } else {
                        x.withUnsafeBufferPointer { model.forward($0.baseAddress!, count: 1, route: route, workspace: ws) }
                        // The output of layer L−2 (the last hidden layer, or its adapter) enters the output layer.
                        let h = model.layers.count - 2
                        embeddings.append(UnsafeBufferPointer(start: ws.hiddenActivations(h), count: model.layers[h].outputs).map(Double.init))
                    }
                    continue
                }
                var z: [Float]
                if let q {
                    z = q.logits(x, route: route)
                } else {
                    x.withUnsafeBufferPointer { model.forward($0.baseAddress!, count: 1, route: route, workspace: ws, gates: gates) }
                    z = Array(UnsafeBufferPointer(start: ws.logits, count: model.logitCount))
                }
                features.append(x.map(Double.init))
                logits.append(z.map(Double.init))
                probabilities.append(z.withUnsafeBufferPointer { Loss.probabilities(head: model.spec.head, logits: $0.baseAddress!) })
            }
            var entry: [String: Any] = ["name": e.name, "index": e.index, "features": features, "labels": e.test.labels.map(Int.init)]
            if network.includesHead {
                entry["logits"] = logits
                entry["probabilities"] = probabilities
            } else {
                entry["embedding"] = embeddings
            }
            experiences.append(entry)
        }
        let object: [String: Any] = ["route": route, "precision": granularity?.rawValue ?? "float32", "parts": parts.rawValue,
                                     "strategy": stored.config.strategyLabel, "experiences": experiences]
        do {
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            try Self.writeWhole(data, to: path)
        } catch let e as CLIFailure {
            throw e
        } catch {
            throw CLIFailure.badInput("cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// Writes `data` whole or not at all: free space checked first, then a temporary file renamed
    /// into place, so a full disk never leaves a 0-byte or truncated model behind.
    static func writeWhole(_ data: Data, to path: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        do {
            try DiskSpace.require(data.count + (64 << 10), toWrite: path)
            guard FileManager.default.createFile(atPath: temporary, contents: data) else {
                throw CLIFailure.badInput("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            guard rename(temporary, path) == 0 else {
                throw CLIFailure.badInput("cannot move \(temporary) to \(path): \(String(cString: strerror(errno)))")
            }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            if let e = error as? CLIFailure { throw e }
            throw CLIFailure.badInput("\(error)")
        }
    }
}
