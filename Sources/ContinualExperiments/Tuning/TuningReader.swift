import ContinualCore
import ContinualHDF5
import ContinualScenarios
import Foundation

/// Reads a results file's `/tuning` back into `TuningRecord`s (`TuningWriter`'s inverse), so the
/// shards of a sweep can take one tuning's choices (`continual sweep --tuning-from FILE`) instead
/// of each repeating it.
public enum TuningReader {
    /// The records of `path`, in variant-name order. Throws if the file has no `/tuning` group or
    /// a record cannot be read back whole.
    public static func read(path: String) throws -> [TuningRecord] {
        let file = try HDF5File.open(path: path)
        defer { try? file.close() }
        guard file.root.exists("tuning") else { throw TuningFileError(path: path, message: "has no /tuning group (no tuned variant was run into it)") }
        return try records(in: file.root.openGroup("tuning"), path: path)
    }

    /// The records of an open `/tuning` group `g` of the file at `path` (named in errors), in
    /// variant-name order: what `read(path:)` returns and `continual inspect` prints.
    static func records(in g: HDF5Group, path: String) throws -> [TuningRecord] {
        try g.childNames().sorted().map { name in
            let v = try g.openGroup(name)
            guard let text = try v.attributes.string("record_json"),
                  case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)),
                  case .array(let parameters)? = o["parameters"], case .array(let points)? = o["points"],
                  case .array(let seeds)? = o["seeds"], let fraction = o["validation_fraction"]?.numberValue,
                  case .int(let splitSeed)? = o["split_seed"], let tune = o["tune"] else {
                throw TuningFileError(path: path, message: "/tuning/\(name): record_json is missing or incomplete")
            }
            let s = seeds.count, p = points.count
            /// A point-major [p × s] dataset as rows of seeds.
            func byPoint<T>(_ flat: [T]) -> [[T]] { (0..<p).map { Array(flat[$0 * s..<($0 + 1) * s]) } }
            let scores: [Double] = try v.openDataset("scores").read()
            let flops: [Int64] = try v.openDataset("training_flops").read()
            guard scores.count == p * s, flops.count == p * s else {
                throw TuningFileError(path: path, message: "/tuning/\(name): scores or training_flops do not hold \(p) points × \(s) seeds")
            }
            if case .int(let c)? = o["chosen_index"], !(0..<Int64(p)).contains(c) {
                throw TuningFileError(path: path, message: "/tuning/\(name): chosen_index \(c) is not one of its \(p) points")
            }
            guard points.allSatisfy({ if case .array(let a) = $0 { return a.count == parameters.count } else { return parameters.count == 1 } }) else {
                throw TuningFileError(path: path, message: "/tuning/\(name): a point does not hold one value per parameter")
            }
            var (ids, seconds): ([[String]], [[Double]]) = ([], [])
            if v.exists("run_ids") && v.exists("run_wall_seconds") {
                let flat = try v.openDataset("run_ids").readStrings(), wall: [Double] = try v.openDataset("run_wall_seconds").read()
                guard flat.count == p * s, wall.count == p * s else {
                    throw TuningFileError(path: path, message: "/tuning/\(name): run_ids or run_wall_seconds do not hold \(p) points × \(s) seeds")
                }
                (ids, seconds) = (byPoint(flat), byPoint(wall))
            }
            var split = ValidationSplit(fraction: fraction, seed: UInt64(splitSeed))
            if case .int(let k)? = o["experiences"] { split.experiences = Int(k) }
            return TuningRecord(
                variant: name,
                parameters: parameters.compactMap { if case .string(let t) = $0 { return t } else { return nil } },
                points: points.map { if case .array(let a) = $0 { return a } else { return [$0] } },
                seeds: seeds.compactMap { if case .int(let n) = $0 { return UInt64(n) } else if case .uint(let n) = $0 { return n } else { return nil } },
                split: split,
                scores: byPoint(scores),
                flops: byPoint(flops.map(Int.init)),
                chosen: { if case .int(let c)? = o["chosen_index"] { return Int(c) } else { return nil } }(),
                wallSeconds: try v.attributes.scalar("wall_seconds", as: Double.self) ?? 0,
                json: tune, runIds: ids, runSeconds: seconds)
        }
    }

    /// `records` checked against `experiment`'s tuned variants: the same variants, each with the
    /// same merged tune block and a choice, so the choices are the ones this file would make.
    public static func check(_ records: [TuningRecord], against experiment: ExperimentFile, from path: String) throws {
        let byName = Dictionary(records.map { ($0.variant, $0) }, uniquingKeysWith: { a, _ in a })
        for target in experiment.tuneTargets {
            guard let r = byName[target.variant] else {
                throw TuningFileError(path: path, message: "has no tuning of variant \"\(target.variant)\" (it holds \(records.map(\.variant).joined(separator: ", ")))")
            }
            guard r.json.canonicalText() == target.spec.json.canonicalText() else {
                throw TuningFileError(path: path, message: "tuned variant \"\(target.variant)\" with another tune block than \(experiment.path) now has: "
                    + "\(r.json.canonicalText()) against \(target.spec.json.canonicalText())")
            }
            guard r.chosen != nil, r.points.count >= target.spec.grid.count else {
                throw TuningFileError(path: path, message: "variant \"\(target.variant)\": its tuning did not finish with a choice")
            }
        }
    }
}

/// A `--tuning-from` file that cannot supply the choices.
public struct TuningFileError: Error, CustomStringConvertible {
    public var path: String
    public var message: String
    public var description: String { "\(path): \(message)" }
}
