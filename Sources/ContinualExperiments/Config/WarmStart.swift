import ContinualCore
import ContinualExport
import ContinualHDF5
import Foundation

/// `"model": {"init_from": {...}}`: start a run from another run's trained parameters instead of
/// random weights (personalisation starts from a global model and adapts it per user).
///
///     "init_from": {"results": "results/global.h5", "run": "joint_seed=1", "parts": "core"}
///     "init_from": {"onnx": "models/global.onnx", "parts": "core"}
///     "init_from": {"checkpoint": "checkpoints/global.ckpt.h5"}
///
/// Exactly one source:
/// - `results`: a results file written by this toolkit (relative to the experiment file), with
///   `run`: the run whose `final_parameters` are loaded, by run id or by name; it must have
///   completed, and the name must be unique in the file.
/// - `onnx`: a model written by `continual export --format onnx` (float32 or int8; int8 weights
///   load dequantised, q·scale). Its dense layers are read; adapter stages are not.
/// - `checkpoint`: a checkpoint written by `continual run --checkpoint` (the learner's current
///   parameters; its network is rebuilt from the config the checkpoint records).
/// - `parts`: `"all"` (default) loads every layer, so both networks must have the same layer
///   sizes and the same number of heads; `"core"` loads every layer but the output layer, which
///   keeps its own fresh initialisation (a new personal head; the output widths may differ).
///
/// The parameters are loaded after the model is built from the run's seed and before the
/// strategy's `prepare` (adapters and LoRA are added on top of the loaded network). The source is
/// recorded in the run's `config_json` and in the run's `init_from` attribute. Only the plain
/// network of the source is read: with `"core"`, adapter or LoRA parameters stored after it are
/// ignored; `"all"` needs a source without them.
public struct WarmStart: Codable, Sendable, Equatable {
    public enum Parts: String, Codable, Sendable, CaseIterable { case all, core }

    /// The results file ("" when the source is an ONNX model or a checkpoint).
    public var results: String
    /// The run of `results` ("" for the other sources).
    public var run: String
    /// An ONNX model written by `continual export` (nil otherwise).
    public var onnx: String? = nil
    /// A checkpoint file (nil otherwise).
    public var checkpoint: String? = nil
    public var parts: Parts = .all

    public init(results: String, run: String, parts: Parts = .all) {
        self.results = results
        self.run = run
        self.parts = parts
    }

    /// A warm start from an exported ONNX model.
    public init(onnx: String, parts: Parts = .all) {
        self.results = ""
        self.run = ""
        self.onnx = onnx
        self.parts = parts
    }

    /// A warm start from a checkpoint file.
    public init(checkpoint: String, parts: Parts = .all) {
        self.results = ""
        self.run = ""
        self.checkpoint = checkpoint
        self.parts = parts
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case results, run, onnx, checkpoint, parts }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        onnx = try c.decodeIfPresent(String.self, forKey: .onnx)
        checkpoint = try c.decodeIfPresent(String.self, forKey: .checkpoint)
        parts = try c.decodeChoice(.parts, default: .all)
        let given = [c.contains(.results) ? "results" : nil, onnx != nil ? "onnx" : nil, checkpoint != nil ? "checkpoint" : nil].compactMap { $0 }
        try c.require(given.count <= 1, CodingKeys(stringValue: given.last ?? "results")!,
                      "give one source: results (with run), onnx or checkpoint; found \(given.joined(separator: " and "))")
        if let onnx {
            results = ""
            run = ""
            try c.require(!onnx.isEmpty, .onnx, "the ONNX model path must not be empty")
            try c.require(!c.contains(.run), .run, "run goes with results; an ONNX model holds one network")
        } else if let checkpoint {
            results = ""
            run = ""
            try c.require(!checkpoint.isEmpty, .checkpoint, "the checkpoint path must not be empty")
            try c.require(!c.contains(.run), .run, "run goes with results; a checkpoint holds one learner")
        } else {
            results = try c.decode(String.self, forKey: .results)
            run = try c.decode(String.self, forKey: .run)
            try c.require(!results.isEmpty, .results, "the results file path must not be empty")
            try c.require(!run.isEmpty, .run, "the run id or name must not be empty")
        }
    }

    /// Only the keys of the source given, so the canonical JSON (and run ids) of results-file
    /// warm starts are unchanged.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if let onnx {
            try c.encode(onnx, forKey: .onnx)
        } else if let checkpoint {
            try c.encode(checkpoint, forKey: .checkpoint)
        } else {
            try c.encode(results, forKey: .results)
            try c.encode(run, forKey: .run)
        }
        try c.encode(parts, forKey: .parts)
    }

    /// A short description for results and messages: `results.h5#run (core)`, `model.onnx (all)`.
    public var label: String {
        if let onnx { return "\(onnx) (\(parts.rawValue))" }
        if let checkpoint { return "\(checkpoint) (\(parts.rawValue))" }
        return "\(results)#\(run) (\(parts.rawValue))"
    }

    /// The source as named in messages.
    var sourceName: String {
        if let onnx { return "ONNX model \(onnx)" }
        if let checkpoint { return "checkpoint \(checkpoint)" }
        return "run \"\(run)\" of \(results)"
    }

    /// The key (below `.model.init_from`) that names the source, for shape errors.
    var sourceKey: String { onnx != nil ? ".onnx" : checkpoint != nil ? ".checkpoint" : ".run" }

    /// Why a warm start cannot be applied; `key` is the key below `.model.init_from`.
    public struct Failure: Error, CustomStringConvertible {
        public var key: String
        public var message: String
        public var description: String { message }
    }

    /// The parameters to load into a model built from `spec`: the first `count` entries of its
    /// flat parameter vector (all of the plain network, or all but the output layer).
    public func parameters(for spec: MLPSpec) throws -> [Float] {
        let source = try readSource()
        let target = [spec.inputs] + spec.hidden + [spec.head.logitCount]
        func shape(_ sizes: [Int]) -> String { sizes.map(String.init).joined(separator: "→") }
        // The spec's own layout (MLPSpec.layers: the plain network first, layer by layer, the
        // output layer's head copies last); a config's spec has no adapters or LoRA yet.
        let outputLayerOffset = spec.layers()[spec.denseLayerCount - 1].offset
        switch parts {
        case .all:
            guard source.hasHead else {
                throw Failure(key: ".parts", message: "\(sourceName) was exported without its output layer (--parts core; "
                    + "\(shape(source.sizes))): load it with \"parts\": \"core\"")
            }
            let needed = spec.parameterCount
            guard source.sizes == target, source.parameters.count == needed else {
                throw Failure(key: sourceKey, message: "\(sourceName) has a \(shape(source.sizes)) network "
                    + "(\(source.parameters.count) parameters); this run's model is \(shape(target)) with \(spec.heads) head(s) "
                    + "(\(needed) parameters). \"all\" loads a plain network of the same shape and heads (no adapters); "
                    + "\"parts\": \"core\" loads all but the output layer")
            }
            return source.parameters
        case .core:
            let sourceCore = source.hasHead ? Array(source.sizes.dropLast()) : source.sizes, targetCore = Array(target.dropLast())
            guard sourceCore == targetCore, targetCore.count >= 2 else {
                throw Failure(key: sourceKey, message: "\(sourceName) has a \(shape(source.sizes)) network; "
                    + "this run's model is \(shape(target)): "
                    + (targetCore.count < 2 ? "it has no hidden layer, so there is no core to load"
                                            : "the layers before the output layer differ (\(shape(sourceCore)) vs \(shape(targetCore)))"))
            }
            let count = outputLayerOffset
            guard source.parameters.count >= count else {
                throw Failure(key: sourceKey, message: "\(sourceName) stores only \(source.parameters.count) parameters")
            }
            return Array(source.parameters.prefix(count))
        }
    }

    struct Source {
        var sizes: [Int]
        var parameters: [Float]
        /// False for an ONNX model exported without its output layer (`--parts core`).
        var hasHead = true
        /// The run's config JSON and the experiment file it came from (results files only).
        var configJSON = ""
        var experimentPath = ""
        /// The run's group id in the results file (results files only).
        var runId = ""
    }

    /// Reads the configured source (cached per file and modification time, see `sources`).
    func readSource() throws -> Source {
        if let onnx { return try Self.cached(onnx, key: ".onnx", what: "ONNX model") { try Self.readONNX(onnx) } }
        if let checkpoint {
            return try Self.cached(checkpoint, key: ".checkpoint", what: "checkpoint") { try Self.readCheckpoint(checkpoint) }
        }
        return try Self.read(results: results, run: run)
    }

    static func cached(_ path: String, key: String, what: String, _ read: () throws -> Source) throws -> Source {
        guard let info = try? FileManager.default.attributesOfItem(atPath: path) else {
            throw Failure(key: key, message: "no such \(what): \(path)")
        }
        let stamp = "\((info[.size] as? NSNumber)?.int64Value ?? -1)|\((info[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)"
        return try sources.value(key + "|" + path + "|" + stamp, read)
    }

    /// The dense layers of an ONNX model written by `ONNXExport`.
    static func readONNX(_ path: String) throws -> Source {
        let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
        // Weights beyond DataLimits.maxParameters float32 values cannot be a toolkit model.
        guard size <= Int64(DataLimits.maxParameters) * 8 + (1 << 20) else {
            throw Failure(key: ".onnx", message: "\(path) is \(size) bytes, larger than any model this toolkit can build")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Failure(key: ".onnx", message: "cannot read \(path)")
        }
        do {
            let weights = try ONNXWeights(onnx: [UInt8](data))
            return Source(sizes: weights.layerSizes, parameters: weights.parameters, hasHead: weights.includesHead)
        } catch {
            throw Failure(key: ".onnx", message: "\(path): \(error)")
        }
    }

    /// A checkpoint's parameters, with its network's sizes from the config it records.
    static func readCheckpoint(_ path: String) throws -> Source {
        do {
            let stored = try StoredModel.load(checkpoint: path)
            let spec = stored.model.spec
            return Source(sizes: [spec.inputs] + spec.hidden + [spec.head.logitCount], parameters: stored.model.parameters)
        } catch let f as StoredModel.Failure {
            throw Failure(key: ".checkpoint", message: f.description)
        }
    }

    /// Sources already read in this process, by file, run, size and modification time: validate
    /// and every run (every user of a population) load the same parameters, so the file is read
    /// once unless it changes.
    private static let sources = SourceCache()

    final class SourceCache: @unchecked Sendable {
        private let lock = NSLock()
        private var entries: [String: Source] = [:]
        func value(_ key: String, _ read: () throws -> Source) throws -> Source {
            lock.lock()
            defer { lock.unlock() }
            if let known = entries[key] { return known }
            let source = try read()
            entries[key] = source
            return source
        }
    }

    /// Reads `final_parameters` and its `layer_sizes` of one completed run (cached, see `sources`).
    static func read(results: String, run: String) throws -> Source {
        guard let info = try? FileManager.default.attributesOfItem(atPath: results) else {
            throw Failure(key: ".results", message: "no such results file: \(results)")
        }
        let stamp = "\((info[.size] as? NSNumber)?.int64Value ?? -1)|\((info[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)"
        return try sources.value(results + "|" + run + "|" + stamp) { try readFile(results: results, run: run) }
    }

    static func readFile(results: String, run: String) throws -> Source {
        do {
            return try HDF5Lock.withLock {
                let file = try HDF5File.open(path: results, mode: .readOnly)
                defer { try? file.close() }
                guard file.root.exists("runs") else {
                    throw Failure(key: ".results", message: "\(results) holds no runs (is it a ContinualKit results file?)")
                }
                let runs = try file.root.openGroup("runs")
                var matches: [String] = [], unreadable: [String] = []
                for id in try runs.childNames() {
                    if id == run { matches = [id]; break }
                    guard let group = try? runs.openGroup(id) else { unreadable.append(id); continue }
                    if let name = try? group.attributes.string("name"), name == run { matches.append(id) }
                }
                guard matches.count == 1 else {
                    if matches.isEmpty && !unreadable.isEmpty {
                        // A damaged (quarantined) run's name cannot be read: it may be the one asked for.
                        throw Failure(key: ".run", message: "\(results) has no readable run named \"\(run)\"; \(unreadable.count) run group(s) could not be read (damaged or quarantined: \(unreadable.prefix(4).joined(separator: ", "))): `continual inspect --verify \(results)` lists them, `continual repair` copies the readable runs")
                    }
                    if matches.isEmpty {
                        throw Failure(key: ".run", message: "\(results) has no run with id or name \"\(run)\"")
                    }
                    throw Failure(key: ".run", message: "\(matches.count) runs of \(results) are named \"\(run)\" (ids \(matches.prefix(4).joined(separator: ", "))): give a run id")
                }
                let g = try runs.openGroup(matches[0])
                let integrity = RunManifest.verify(g, id: matches[0], manifest: RunManifest.read(file.root))
                guard !integrity.isDamaged else {
                    throw Failure(key: ".run", message: "run \"\(run)\" of \(results) is \(integrity.description); it is not used as a warm start")
                }
                let status = try g.attributes.string("status") ?? ""
                guard status == "completed", g.exists("final_parameters") else {
                    throw Failure(key: ".run", message: "run \"\(run)\" of \(results) has no final parameters (status \(status.isEmpty ? "unknown" : status))")
                }
                let d = try g.openDataset("final_parameters")
                let parameters: [Float] = try d.read()
                // The values first: when both are damaged, the parameters are the fault that matters.
                guard parameters.allSatisfy(\.isFinite) else {
                    throw Failure(key: ".run", message: "run \"\(run)\" of \(results) has non-finite final parameters")
                }
                guard let sizes = try d.attributes.array("layer_sizes", as: Int64.self), sizes.count >= 2,
                      sizes.allSatisfy({ $0 >= 1 && $0 <= Int64(DataLimits.maxParameters) }) else {
                    throw Failure(key: ".run", message: "run \"\(run)\" of \(results) does not record its layer sizes")
                }
                return Source(sizes: sizes.map { Int($0) }, parameters: parameters,
                              configJSON: try g.attributes.string("config_json") ?? "",
                              experimentPath: try file.root.attributes.string("experiment_path") ?? "", runId: matches[0])
            }
        } catch let f as Failure {
            throw f
        } catch {
            throw Failure(key: ".results", message: "cannot read \(results): \(error)")
        }
    }
}
