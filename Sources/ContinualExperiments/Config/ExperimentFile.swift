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

    /// `$schema`: where an editor finds the JSON Schema (`continual schema -o FILE`); a string,
    /// read by editors, ignored here.
    static let experimentKeys: Set<String> = ["name", "description", "output", "variants", "sweep", "threads", "tune", "$schema"]
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
        var top = try topLevelObject(data, file: path)
        let name = try string(top["name"], at: ".name", file: path) ?? "experiment"
        try checkName(name, at: ".name", file: path)
        let description = try string(top["description"], at: ".description", file: path) ?? ""
        _ = try string(top["$schema"], at: ".$schema", file: path)
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
        var bases: [VariantBase] = try variants.map {
            try variantBases($0, over: base, sweep: topSweep, tune: topTune, file: path)
        } ?? [(name, base, topSweep, "", topTune)]
        let tuneTargets = try tuneTargets(bases.map { ($0.name, $0.json, $0.sweep, $0.at, $0.tune) }, file: path, runKeys: runKeySet)
        bases = try bases.map { b in
            guard let values = chosen[b.name] else { return b }
            return (b.name, try applying(values, to: b.json, file: path, variant: b.name), b.sweep, b.at, b.tune)
        }

        var sweptPaths: [String] = []
        for b in bases {
            for p in b.sweep?.parameters ?? [] where !sweptPaths.contains(p.path.text) { sweptPaths.append(p.path.text) }
        }
        let totalRuns = try runCount(bases, file: path, at: topSweep != nil ? ".sweep" : ".variants")
        var expansion = RunExpansion(file: path, hasVariants: variants != nil, topSweep: topSweep, expansionLimit: expansionLimit)
        for b in bases { try expansion.add(b) }
        let runs = expansion.runs
        var file = ExperimentFile(name: name, description: description, output: output,
                                  sourceText: String(decoding: data, as: UTF8.self), runs: runs, path: path)
        file.sweptPaths = sweptPaths
        file.sweepJSON = sweepValue
        file.threads = threads
        file.totalRuns = totalRuns
        file.isSampled = expansion.sampled
        file.tuneTargets = tuneTargets
        var notes: [String] = []
        if expansion.sampled {
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

    /// A variant before its sweep expands: its name, its JSON merged over the shared settings,
    /// its sweep (its own or the file's), its location (`.variants[i]`, "" without variants) and
    /// its tuning block.
    typealias VariantBase = (name: String, json: JSONValue, sweep: SweepSpec?, at: String, tune: JSONValue?)

    /// The file's top-level object once the text is valid JSON without duplicate keys and every
    /// key is an experiment or run key: each check's error names the line or key path at fault.
    private static func topLevelObject(_ data: Data, file path: String) throws -> [String: JSONValue] {
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
        guard case .object(let top) = root else {
            throw ConfigError(file: path, location: "(top level)", message: "expected an object")
        }
        let allowed = experimentKeys.union(runKeys)
        for key in top.keys.sorted() where !allowed.contains(key) {
            throw ConfigError(file: path, location: "." + key,
                              message: "unknown key \"\(key)\"\(didYouMean(key, allowed)); allowed keys: \(allowed.sorted().joined(separator: ", "))")
        }
        return top
    }

    /// The `variants` array as bases in file order: each an object of run keys (plus `sweep` and
    /// `tune`) with a unique valid name, merged over `base`; a variant's `sweep` replaces the
    /// file's (`null` removes it).
    private static func variantBases(_ variants: JSONValue, over base: JSONValue, sweep topSweep: SweepSpec?,
                                     tune topTune: JSONValue?, file path: String) throws -> [VariantBase] {
        guard case .array(let list) = variants, !list.isEmpty else {
            throw ConfigError(file: path, location: ".variants", message: "expected a non-empty array of objects")
        }
        let runKeySet = runKeys
        var bases: [VariantBase] = []
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
        return bases
    }

    /// The number of runs the bases expand to (`Int.max` on overflow), counted before expanding:
    /// more than `SweepSpec.maximumPoints` is refused at `location`.
    private static func runCount(_ bases: [VariantBase], file path: String, at location: String) throws -> Int {
        var totalRuns = 0
        for b in bases {
            totalRuns = totalRuns.addingReportingOverflow(b.sweep?.count ?? 1).overflow ? Int.max : totalRuns + (b.sweep?.count ?? 1)
        }
        if totalRuns > SweepSpec.maximumPoints {
            throw ConfigError(file: path, location: location,
                              message: "the experiment expands to \(totalRuns == Int.max ? "more than \(Int.max)" : String(totalRuns)) runs; the limit is \(SweepSpec.maximumPoints)")
        }
        return totalRuns
    }
}

/// The resolved runs of an experiment, added one variant at a time in file order: a variant
/// without a sweep is one run, one with a sweep one run per point (all of them, or with
/// `expansionLimit` a sample), named after the swept values; no two runs may share a run id.
private struct RunExpansion {
    let file: String
    /// Whether the file has `variants` (run names and messages then name the variant).
    let hasVariants: Bool
    /// The file's sweep: a variant using it reports errors at `.sweep`, not at its own location.
    let topSweep: SweepSpec?
    let expansionLimit: Int?
    var runs: [ResolvedRun] = []
    /// Name of the run with each run id so far, over every variant.
    var seen: [String: String] = [:]
    /// Whether a sweep was sampled rather than expanded whole.
    var sampled = false

    /// Adds the runs of `b`, numbering them after the runs already added.
    mutating func add(_ b: ExperimentFile.VariantBase) throws {
        guard let sweep = b.sweep else {
            let context = !hasVariants ? "" : "variant \"\(b.name)\""
            var run = try ExperimentFile.resolve(b.json, file: file, context: context)
            run.variant = b.name
            run.sweepIndex = runs.count
            runs.append(run)
            return
        }
        let labels = ExperimentFile.labels(for: sweep.parameters.map(\.path))
        let sweepAt = b.sweep == topSweep ? ".sweep" : b.at + ".sweep"
        for point in points(of: sweep) {
            try add(point, of: sweep, base: b, labels: labels, at: sweepAt)
        }
    }

    /// The sweep's points: all of them, or past `expansionLimit` the first ones and the extreme
    /// ones (`SweepSpec.extremePoints`) without repeats.
    private mutating func points(of sweep: SweepSpec) -> [[JSONValue]] {
        guard let limit = expansionLimit, sweep.count > limit else { return sweep.points() }
        sampled = true
        var seenPoints = Set<String>()
        return (sweep.points(limit: limit) + sweep.extremePoints()).filter {
            seenPoints.insert(JSONValue.array($0).canonicalText()).inserted
        }
    }

    /// Adds the run of one sweep point: its values set into the variant's JSON, the run named
    /// `variant_label=value_…`, resolved and checked against the runs before it.
    private mutating func add(_ point: [JSONValue], of sweep: SweepSpec, base b: ExperimentFile.VariantBase,
                              labels: [String], at sweepAt: String) throws {
        var json = b.json
        for (p, value) in zip(sweep.parameters, point) {
            do { json = try p.path.setting(value, in: json) } catch {
                throw ConfigError(file: file, location: "\(sweepAt).parameters[\"\(p.path.text)\"]",
                                  message: error.message + (!hasVariants ? "" : " (variant \"\(b.name)\")"))
            }
        }
        let parts = zip(labels, point).map { "\($0)=\(ExperimentFile.nameText($1))" }
        let runName = ((!hasVariants ? [] : [b.name]) + parts).joined(separator: "_")
        guard case .object(var o) = ExperimentFile.normalized(json) else { return }
        o["name"] = .string(runName)
        var run = try ExperimentFile.resolve(.object(o), file: file,
                                             context: (!hasVariants ? "" : "variant \"\(b.name)\", ") + "sweep point " + parts.joined(separator: ", "))
        run.variant = b.name
        run.sweepIndex = runs.count
        run.sweepValues = zip(sweep.parameters, point).map { SweepValue(path: $0.path.text, value: $1) }
        if let other = seen[run.runId] {
            throw ConfigError(file: file, location: sweepAt,
                              message: "runs \"\(other)\" and \"\(run.config.name)\" resolve to the same configuration (id \(run.runId)); remove the duplicate value")
        }
        seen[run.runId] = run.config.name
        runs.append(run)
    }
}
