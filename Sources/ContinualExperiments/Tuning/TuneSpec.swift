import Foundation
import ContinualCore
import ContinualScenarios

/// A `"tune"` block: which hyperparameters are selected, on which validation data, before a
/// variant's reported runs start (docs/tuning.md).
///
/// ```json
/// "tune": {"parameters": {"optimizer.lr": [0.0001, 0.001, 0.01]},
///          "extend": {"optimizer.lr": [0.00003, 0.03]},
///          "validation_fraction": 0.2, "experiences": 2, "seeds": [1001], "split_seed": 0}
/// ```
/// At the top level it applies to every variant; a variant's own `"tune"` object is deep-merged
/// over it (its `"parameters"` add to the shared grid, a path in both takes the variant's
/// values), and `"tune": null` in a variant turns tuning off for it (e.g. a row run with a
/// paper's values). The grid is the cartesian product of `parameters` (key paths as in a sweep).
/// Each grid point trains once per selection seed on the variant's configuration with
/// `"validation_split"` set (`ValidationSplit`: a stratified share of each experience's training
/// data, optionally the first `experiences` only) and is scored by its final ACC on that
/// validation data. The point with the highest mean score wins (ties: the first in grid order).
/// `"extend"` (`GridExtension`) adds values beyond a numeric grid's edge while the choice sits there.
/// Test sets are never read. Sweep points are not applied to selection runs: the chosen values
/// hold for every sweep point of the variant, and a path may not be both swept and tuned.
public struct TuneSpec: Sendable, Equatable {
    public var grid: SweepSpec
    public var split: ValidationSplit
    /// Seeds of the selection runs (default [1000]); kept apart from reported seeds by convention.
    public var seeds: [UInt64]
    /// Values to try beyond a parameter's grid while the choice sits at its edge, by key path.
    public var extensions: [String: GridExtension] = [:]
    /// The block as merged for this variant (stored with the record).
    public var json: JSONValue

    /// Selection runs this block makes in its first round: grid points × seeds (counted, not resolved).
    public var trialCount: Int { grid.count * seeds.count }

    /// The grid with every extension value added to its parameter's list: every point a tuning
    /// of this block could train.
    public var fullGrid: SweepSpec {
        var full = grid
        for j in full.parameters.indices {
            guard case .values(let v) = full.parameters[j].domain, let e = extensions[full.parameters[j].path.text] else { continue }
            full.parameters[j].domain = .values(v + e.all)
        }
        return full
    }

    /// Selection runs if every extension value were taken: the full grid's points × seeds.
    public var maximumTrialCount: Int { saturatingProduct(fullGrid.count, seeds.count) }

    /// Whether `value` of the tuned `path` comes from `"extend"` (not from the grid as written).
    func isExtension(_ path: JSONKeyPath, _ value: JSONValue) -> Bool {
        extensions[path.text]?.all.contains(value) == true
    }

    static let keys: Set<String> = ["parameters", "extend", "validation_fraction", "experiences", "seeds", "split_seed"]
    public static let defaultSeeds: [UInt64] = [1000]
    /// Largest number of selection runs one variant may ask for (grid points × seeds).
    public static let maximumTrials = 10_000

    /// The top-level block merged with a variant's (`nil` when the variant has `"tune": null` or
    /// neither has one).
    static func merged(top: JSONValue?, variant: JSONValue?) -> JSONValue? {
        switch (top, variant) {
        case (_, .null?): return nil
        case (nil, let v): return v
        case (let t?, nil): return t
        case (let t?, let v?): return t.merging(v)
        }
    }

    /// Parses a merged block at `location` (e.g. `.tune` or `.variants[3].tune`).
    static func parse(_ value: JSONValue, at location: String, file: String, runKeys: Set<String>) throws -> TuneSpec {
        func fail(_ where_: String, _ message: String) -> ConfigError {
            ConfigError(file: file, location: location + where_, message: message)
        }
        guard case .object(let o) = value else {
            throw fail("", "expected an object with \"parameters\" (and optionally \(keys.subtracting(["parameters"]).sorted().joined(separator: ", ")))")
        }
        for key in o.keys.sorted() where !keys.contains(key) {
            throw fail("." + key, "unknown key \"\(key)\"\(didYouMean(key, keys)); allowed keys: \(keys.sorted().joined(separator: ", "))")
        }
        guard let parameters = o["parameters"] else { throw fail(".parameters", "required key is missing (key path → candidate values)") }
        let grid = try SweepSpec.parse(.object(["parameters": parameters]), at: location, file: file, runKeys: runKeys)
        for p in grid.parameters where ["seed", "validation_split"].contains(p.path.head) {
            throw fail(".parameters[\"\(p.path.text)\"]", p.path.head == "seed"
                       ? "selection seeds go in \"seeds\", not in the grid" : "the validation split is set by the tune block itself")
        }
        var split = ValidationSplit()
        if let f = o["validation_fraction"] {
            guard let v = f.numberValue, v > 0, v < 1 else { throw fail(".validation_fraction", "expected a number in (0, 1)") }
            split.fraction = v
        }
        if let e = o["experiences"], e != .null {
            guard case .int(let k) = e, k >= 1 else { throw fail(".experiences", "expected an integer ≥ 1 (tune on the first k experiences)") }
            split.experiences = Int(k)
        }
        if let s = o["split_seed"] {
            guard case .int(let n) = s, n >= 0 else { throw fail(".split_seed", "expected a non-negative integer") }
            split.seed = UInt64(n)
        }
        var seeds = defaultSeeds
        if let s = o["seeds"] {
            guard case .array(let items) = s, !items.isEmpty else { throw fail(".seeds", "expected a non-empty list of non-negative integers") }
            seeds = try items.map {
                guard case .int(let n) = $0, n >= 0 else { throw fail(".seeds", "expected a non-empty list of non-negative integers") }
                return UInt64(n)
            }
            guard Set(seeds).count == seeds.count else { throw fail(".seeds", "lists a seed twice") }
        }
        var spec = TuneSpec(grid: grid, split: split, seeds: seeds, json: value)
        if let e = o["extend"], e != .null {
            // A variant's block is the top-level one merged with its own: say so where a path may be inherited.
            let merged = location.hasPrefix(".variants[") ? " (this variant's tune block: the top-level \"tune\" merged with its own; "
                + "set the path to null in the variant to not extend it)" : ""
            spec.extensions = try GridExtension.parse(e, grid: grid) { fail(".extend" + $0, $1 + merged) }
        }
        guard spec.maximumTrialCount <= maximumTrials else {
            throw fail("", "\(spec.maximumTrialCount) selection runs (grid points\(spec.extensions.isEmpty ? "" : " with every extension value") × \(seeds.count) seeds); the limit is \(maximumTrials)")
        }
        return spec
    }
}

/// A variant to tune: its name, its configuration before chosen values and sweep points, and
/// its merged `"tune"` block.
public struct TuneTarget: Sendable {
    public var variant: String
    public var json: JSONValue
    public var spec: TuneSpec
    /// Where the variant's tune block sits (`.tune` or `.variants[i].tune`), for error messages.
    public var location: String
}

extension ExperimentFile {
    static func tuneTargets(_ bases: [(name: String, json: JSONValue, sweep: SweepSpec?, at: String, tune: JSONValue?)],
                            file: String, runKeys: Set<String>) throws -> [TuneTarget] {
        try bases.compactMap { b in
            guard let tune = b.tune else { return nil }
            let at = b.at.isEmpty ? ".tune" : b.at + ".tune"
            let spec = try TuneSpec.parse(tune, at: at, file: file, runKeys: runKeys)
            if let swept = b.sweep?.parameters.first(where: { s in spec.grid.parameters.contains { $0.path.text == s.path.text } }) {
                throw ConfigError(file: file, location: at + ".parameters[\"\(swept.path.text)\"]",
                                  message: "is also swept (variant \"\(b.name)\"): a value is either selected on validation data or swept, not both")
            }
            return TuneTarget(variant: b.name, json: b.json, spec: spec, location: at)
        }
    }

    /// `json` with each chosen value set at its key path.
    static func applying(_ values: [SweepValue], to json: JSONValue, file: String, variant: String) throws -> JSONValue {
        var out = json
        for v in values {
            do { out = try JSONKeyPath(v.path).setting(v.value, in: out) } catch {
                throw ConfigError(file: file, location: ".tune.parameters[\"\(v.path)\"]", message: error.message + " (variant \"\(variant)\")")
            }
        }
        return out
    }
}
