import Foundation
import ContinualCore

/// An experiment file: shared settings plus optional `variants`, expanded into resolved runs.
///
/// Top-level keys: `name`, `description`, `output`, `seed`, `scenario`, `model`, `optimizer`,
/// `training`, `strategy`, `variants`. Each variant is an object with a `name` and any of the run
/// keys; it is deep-merged over the shared settings (objects merge key by key, arrays and
/// scalars replace). Without variants the file is one run named after the experiment.
///
/// A `sweep` block (top level, or inside a variant to replace it for that variant) expands
/// each variant into one run per sweep point: variants × points, variant-major (see SweepSpec).
public struct ExperimentFile: Sendable {
    public var name: String
    public var description: String
    /// Where results go: the file's `output` resolved against the experiment file's directory, or
    /// `results/NAME.h5` relative to the working directory (see `FilePaths`).
    public var output: String
    /// The file's JSON as written (stored in the results for provenance).
    public var sourceText: String
    public var runs: [ResolvedRun]
    /// Path the file was read from ("" for in-memory text).
    public var path: String
    /// Every swept key path of any variant, in column order ([] without a sweep).
    public var sweptPaths: [String] = []
    /// The top-level sweep block as written (nil without one).
    public var sweepJSON: JSONValue? = nil
    /// Remarks about the expansion for `validate`/`sweep` to print (e.g. a random search that
    /// found fewer distinct points than its `samples`).
    public var notes: [String] = []

    /// Number of runs the file expands to (counted before expanding).
    public var totalRuns = 0
    /// Whether `runs` is a representative subset (see `parse(data:path:expansionLimit:)`).
    public var isSampled = false

    /// Variants whose hyperparameters are selected on validation data first (`"tune"`), with
    /// their configuration before any chosen value or sweep point is applied; see `TuneSpec`.
    public var tuneTargets: [TuneTarget] = []
    /// What the tuning chose, once `Tuner` ran (the runs then carry the chosen values); written
    /// to the results file's `/tuning` group.
    public var tuningRecords: [TuningRecord] = []

    /// Whether the file defines a sweep (top level or in a variant).
    public var isSweep: Bool { !sweptPaths.isEmpty }

    /// Threads each dense product of a run may use (`threads`, default 1; `--threads` overrides):
    /// for one wide run on a many-core machine. Results are bit-identical for any value
    /// (`Kernels.threads`), so it is an execution setting, not part of a run's configuration.
    public var threads = 1
    /// Largest accepted `threads`.
    public static let maximumThreads = 64

    static let experimentKeys: Set<String> = ["name", "description", "output", "variants", "sweep", "threads", "tune"]
    static let runKeys: Set<String> = Set(RunConfig.CodingKeys.allCases.map(\.stringValue))

    /// Reads and validates `path`. Errors name the file and the key path (or line and column).
    public static func load(path: String, expansionLimit: Int? = nil, chosen: [String: [SweepValue]] = [:]) throws -> ExperimentFile {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ConfigError(file: path, location: "", message: "no such file")
        }
        // A results or scenario file given by mistake: say so, not "line 1, column 1: expected a value".
        if FileKind.of(path) == .hdf5 {
            throw ConfigError(file: path, location: "", message: "an HDF5 file (a results or scenario file), not an experiment "
                + "JSON — to look at it: continual inspect \(path)")
        }
        try JSONBudget.checkFileSize(path)   // before reading a hostile gigabyte
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError(file: path, location: "", message: "cannot read the file")
        }
        return try parse(data: data, path: path, expansionLimit: expansionLimit, chosen: chosen)
    }

    /// Parses experiment JSON from memory.
    ///
    /// With `expansionLimit`, a sweep of more points is counted but not expanded: `runs` then holds
    /// its first `expansionLimit` points plus points taking every listed value of every parameter
    /// (`SweepSpec.extremePoints`), `totalRuns` the full count and `isSampled` is true.
    /// `chosen` holds, per variant, the values a tuning selected (`Tuner`): they are set before
    /// the sweep expands, so every sweep point of that variant runs with them.
    public static func parse(data: Data, path: String = "", expansionLimit: Int? = nil,
                             chosen: [String: [SweepValue]] = [:]) throws -> ExperimentFile {
        // Trailing commas, numbers beyond a Double, syntax errors: line, column and key path.
        if let problem = JSONLint.check(data, file: path) { throw problem }
        let root: JSONValue
        do {
            root = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw ConfigError(file: path, location: syntaxLocation(data), message: "not valid JSON")
        }
        if let key = JSONDuplicateKeys.firstDuplicate(in: data) {
            throw ConfigError(file: path, location: key, message: "this key appears more than once in its object (JSON readers "
                + "disagree on which value wins: Foundation keeps one, Python's json the last); keep one")
        }
        guard case .object(var top) = root else {
            throw ConfigError(file: path, location: "(top level)", message: "expected an object")
        }
        let allowed = experimentKeys.union(runKeys)
        for key in top.keys.sorted() where !allowed.contains(key) {
            throw ConfigError(file: path, location: "." + key,
                              message: "unknown key \"\(key)\"\(didYouMean(key, allowed)); allowed keys: \(allowed.sorted().joined(separator: ", "))")
        }
        let name = try string(top["name"], at: ".name", file: path) ?? "experiment"
        try checkName(name, at: ".name", file: path)
        let description = try string(top["description"], at: ".description", file: path) ?? ""
        // A written output is relative to the experiment file; the default to the working directory.
        let output = try string(top["output"], at: ".output", file: path).map { FilePaths.resolve($0, against: FilePaths.directory(of: path)) }
            ?? "results/\(name).h5"
        let threads = try threadCount(top["threads"], at: ".threads", file: path) ?? 1
        let sweepValue = top.removeValue(forKey: "sweep")
        let runKeySet = runKeys
        let topSweep = try sweepValue.map {
            try SweepSpec.parse($0, at: ".sweep", file: path, runKeys: runKeySet)
        }
        let variants = top.removeValue(forKey: "variants")
        let topTune = top["tune"]
        for key in experimentKeys { top.removeValue(forKey: key) }
        top["name"] = .string(name)
        let base = normalized(.object(top))

        // (variant name, merged JSON, sweep, location of the variant) in file order.
        var bases: [(name: String, json: JSONValue, sweep: SweepSpec?, at: String, tune: JSONValue?)] = []
        if let variants {
            guard case .array(let list) = variants, !list.isEmpty else {
                throw ConfigError(file: path, location: ".variants", message: "expected a non-empty array of objects")
            }
            var names = Set<String>()
            for (i, v) in list.enumerated() {
                guard case .object(var override) = v else {
                    throw ConfigError(file: path, location: ".variants[\(i)]", message: "expected an object")
                }
                let variantKeys = runKeys.union(["sweep", "tune"])
                for key in override.keys.sorted() where !variantKeys.contains(key) {
                    throw ConfigError(file: path, location: ".variants[\(i)].\(key)",
                                      message: "unknown key \"\(key)\"\(didYouMean(key, variantKeys)); allowed keys: \(variantKeys.sorted().joined(separator: ", "))")
                }
                let tune = TuneSpec.merged(top: topTune, variant: override.removeValue(forKey: "tune"))
                guard let vname = try string(override["name"], at: ".variants[\(i)].name", file: path) else {
                    throw ConfigError(file: path, location: ".variants[\(i)].name", message: "required key is missing")
                }
                try checkName(vname, at: ".variants[\(i)].name", file: path)
                guard names.insert(vname).inserted else {
                    throw ConfigError(file: path, location: ".variants[\(i)].name", message: "duplicate variant name \"\(vname)\"")
                }
                var sweep = topSweep
                if let own = override.removeValue(forKey: "sweep") {
                    sweep = own == .null ? nil
                        : try SweepSpec.parse(own, at: ".variants[\(i)].sweep", file: path, runKeys: runKeySet)
                }
                bases.append((vname, base.merging(normalized(.object(override))), sweep, ".variants[\(i)]", tune))
            }
        } else {
            bases.append((name, base, topSweep, "", topTune))
        }
        let tuneTargets = try tuneTargets(bases.map { ($0.name, $0.json, $0.sweep, $0.at, $0.tune) }, file: path, runKeys: runKeySet)
        bases = try bases.map { b in
            guard let values = chosen[b.name] else { return b }
            return (b.name, try applying(values, to: b.json, file: path, variant: b.name), b.sweep, b.at, b.tune)
        }

        var runs: [ResolvedRun] = []
        var sweptPaths: [String] = []
        for b in bases {
            for p in b.sweep?.parameters ?? [] where !sweptPaths.contains(p.path.text) { sweptPaths.append(p.path.text) }
        }
        var seen: [String: String] = [:]
        var totalRuns = 0
        var sampled = false
        for b in bases {
            totalRuns = totalRuns.addingReportingOverflow(b.sweep?.count ?? 1).overflow ? Int.max : totalRuns + (b.sweep?.count ?? 1)
        }
        if totalRuns > SweepSpec.maximumPoints {
            throw ConfigError(file: path, location: topSweep != nil ? ".sweep" : ".variants",
                              message: "the experiment expands to \(totalRuns == Int.max ? "more than \(Int.max)" : String(totalRuns)) runs; the limit is \(SweepSpec.maximumPoints)")
        }
        for b in bases {
            guard let sweep = b.sweep else {
                let context = variants == nil ? "" : "variant \"\(b.name)\""
                var run = try resolve(b.json, file: path, context: context)
                run.variant = b.name
                run.sweepIndex = runs.count
                runs.append(run)
                continue
            }
            let labels = Self.labels(for: sweep.parameters.map(\.path))
            let sweepAt = b.sweep == topSweep ? ".sweep" : b.at + ".sweep"
            var points: [[JSONValue]]
            if let limit = expansionLimit, sweep.count > limit {
                sampled = true
                var seenPoints = Set<String>()
                points = (sweep.points(limit: limit) + sweep.extremePoints()).filter {
                    seenPoints.insert(JSONValue.array($0).canonicalText()).inserted
                }
            } else {
                points = sweep.points()
            }
            for point in points {
                var json = b.json
                for (p, value) in zip(sweep.parameters, point) {
                    do { json = try p.path.setting(value, in: json) } catch {
                        throw ConfigError(file: path, location: "\(sweepAt).parameters[\"\(p.path.text)\"]",
                                          message: error.message + (variants == nil ? "" : " (variant \"\(b.name)\")"))
                    }
                }
                let parts = zip(labels, point).map { "\($0)=\(Self.nameText($1))" }
                let runName = ((variants == nil ? [] : [b.name]) + parts).joined(separator: "_")
                guard case .object(var o) = normalized(json) else { continue }
                o["name"] = .string(runName)
                var run = try resolve(.object(o), file: path,
                                      context: (variants == nil ? "" : "variant \"\(b.name)\", ") + "sweep point " + parts.joined(separator: ", "))
                run.variant = b.name
                run.sweepIndex = runs.count
                run.sweepValues = zip(sweep.parameters, point).map { SweepValue(path: $0.path.text, value: $1) }
                if let other = seen[run.runId] {
                    throw ConfigError(file: path, location: sweepAt,
                                      message: "runs \"\(other)\" and \"\(run.config.name)\" resolve to the same configuration (id \(run.runId)); remove the duplicate value")
                }
                seen[run.runId] = run.config.name
                runs.append(run)
            }
        }
        var file = ExperimentFile(name: name, description: description, output: output,
                                  sourceText: String(decoding: data, as: UTF8.self), runs: runs, path: path)
        file.sweptPaths = sweptPaths
        file.sweepJSON = sweepValue
        file.threads = threads
        file.totalRuns = totalRuns
        file.isSampled = sampled
        file.tuneTargets = tuneTargets
        var notes: [String] = []
        if sampled {
            notes.append("the sweep has \(totalRuns) runs: validate resolved and checked \(runs.count) of them (the first "
                + "\(expansionLimit ?? 0) and every listed value of every swept key); `sweep` and `run` check every run before starting")
        } else {
            for b in bases {
                for n in b.sweep?.notes ?? [] where !notes.contains(n) { notes.append(n) }
            }
        }
        file.notes = notes
        return file
    }
}
