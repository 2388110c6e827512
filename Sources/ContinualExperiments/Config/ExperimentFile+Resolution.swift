import Foundation
import ContinualCore

extension ExperimentFile {
    /// Short labels of swept paths for run names: the last key (`lr`), or the whole path with
    /// dots (`strategy.0.lambda`) where two paths share a last key.
    static func labels(for paths: [JSONKeyPath]) -> [String] {
        let last = paths.map(\.lastKey)
        return paths.map { p in last.filter { $0 == p.lastKey }.count > 1 ? p.flatText : p.lastKey }
    }

    /// A value as it appears in a run name (characters outside the name alphabet become `-`).
    static func nameText(_ v: JSONValue) -> String {
        let raw: String
        switch v {
        case .double(let d): raw = d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        default: raw = v.shortDescription
        }
        return String(raw.unicodeScalars.map { s -> Character in
            CharacterSet.alphanumerics.contains(s) || "-.+".unicodeScalars.contains(s) ? Character(s) : "-"
        })
    }

    /// Decodes one merged run object strictly.
    static func resolve(_ value: JSONValue, file: String, context: String) throws -> ResolvedRun {
        let data = try JSONEncoder().encode(value)
        do {
            let config = try JSONDecoder().decode(RunConfig.self, from: data)
            // The id and canonical JSON keep the paths as written; execution uses them resolved.
            var run = ResolvedRun(config: config)
            run.config = config.resolvingFiles(against: FilePaths.directory(of: file))
            return run
        } catch let error as DecodingError {
            if case .dataCorrupted(let c) = error, c.codingPath.isEmpty,
               let located = locateNumberError(value, file: file, context: context) {
                throw located
            }
            throw ConfigError.from(error, file: file, context: context)
        }
    }

    /// Foundation reports a fractional or out-of-range number for an integer field, a negative one
    /// for an unsigned field, and one beyond a Float for a Float field only as "not valid JSON",
    /// with no key path (an open swift-foundation bug). Find the culprit by replacing suspect
    /// numbers (cumulatively) with harmless ones and decoding again: the one whose replacement
    /// makes the path-less error go away is it; whether 0.5 would also do tells an integer setting
    /// from a number setting, for the message.
    static func locateNumberError(_ value: JSONValue, file: String, context: String) -> ConfigError? {
        var suspects: [(path: [JSONPathStep], value: JSONValue, replacement: Int64)] = []
        func walk(_ v: JSONValue, _ path: [JSONPathStep]) {
            switch v {
            case .double(let d) where d != d.rounded() || abs(d) >= 9.2e18 || abs(d) > 3.4e38 || (d != 0 && abs(d) < 1.2e-38):
                let small = d.isFinite && abs(d) < 1e6 ? max(1, Int64(d.rounded())) : 1
                suspects.append((path, v, small))
            case .int(let i) where i < 0: suspects.append((path, v, 1))
            case .uint: suspects.append((path, v, 1))
            case .array(let items): for (i, item) in items.enumerated() { walk(item, path + [.index(i)]) }
            case .object(let o): for k in o.keys.sorted() { walk(o[k]!, path + [.key(k)]) }
            default: break
            }
        }
        walk(value, [])
        enum Outcome: Equatable { case pathLess, ok, located(String) }
        func outcome(_ v: JSONValue) -> Outcome {
            guard let data = try? JSONEncoder().encode(v) else { return .ok }
            do { _ = try JSONDecoder().decode(RunConfig.self, from: data) } catch let DecodingError.dataCorrupted(c) where c.codingPath.isEmpty {
                return .pathLess
            } catch let error as DecodingError {
                return .located(ConfigError.from(error, file: file).location)
            } catch {}
            return .ok
        }
        func text(_ path: [JSONPathStep]) -> String {
            path.map { step -> String in
                switch step {
                case .key(let k): return "." + k
                case .index(let i): return "[\(i)]"
                }
            }.joined()
        }
        var patched = value
        for suspect in suspects {
            let location = text(suspect.path)
            // A replacement that is itself invalid there (momentum 1) says nothing: try another.
            var result: Outcome? = nil
            for replacement in [JSONValue.int(suspect.replacement), .double(0.5), .int(0)] {
                let trial = replacing(patched, at: suspect.path[...], with: replacement)
                let o = outcome(trial)
                if o == .located(location) { continue }
                patched = trial
                result = o
                break
            }
            guard let result, result != .pathLess else { continue }  // not (only) this number
            let fraction = outcome(replacing(patched, at: suspect.path[...], with: .double(0.5)))
            let acceptsFractions = fraction != .pathLess && fraction != .located(location)
            let shown = ConfigError.shortened(suspect.value.shortDescription)
            let message: String
            switch suspect.value {
            case .int(let i) where i < 0:
                message = "expected a non-negative integer, found \(i)"
            case .double(let d) where acceptsFractions && abs(d) > 3.4e38:
                message = "number \(shown) is out of range (a 32-bit float: magnitude at most 3.4e38)"
            case .double(let d) where acceptsFractions && d != 0 && abs(d) < 1.2e-38:
                message = "number \(shown) is too small for a 32-bit float (use 0 or a magnitude of at least 1.2e-38)"
            case .double(let d) where d == d.rounded() || !d.isFinite:
                message = "expected an integer in range, found \(shown)"
            case .uint:
                message = "expected an integer in range, found \(shown)"
            default:
                message = acceptsFractions ? "number \(shown) is out of range for this setting" : "expected an integer, found \(shown)"
            }
            let suffix = context.isEmpty ? "" : " (\(context))"
            return ConfigError(file: file, location: location, message: message + suffix)
        }
        return nil
    }

    enum JSONPathStep { case key(String), index(Int) }

    static func replacing(_ value: JSONValue, at path: ArraySlice<JSONPathStep>, with new: JSONValue) -> JSONValue {
        guard let first = path.first else { return new }
        switch (first, value) {
        case (.key(let k), .object(var o)):
            o[k] = replacing(o[k] ?? .null, at: path.dropFirst(), with: new)
            return .object(o)
        case (.index(let i), .array(var a)) where a.indices.contains(i):
            a[i] = replacing(a[i], at: path.dropFirst(), with: new)
            return .array(a)
        default:
            return value
        }
    }

    /// Shorthands: `"strategy": "naive"`, `["ewc", {...}]` and `"scenario": "habit_drift"`
    /// become objects with a `"type"`.
    static func normalized(_ value: JSONValue) -> JSONValue {
        guard case .object(var o) = value else { return value }
        if let s = o["strategy"] {
            switch s {
            case .string(let t): o["strategy"] = .array([.object(["type": .string(t)])])
            case .array(let items):
                o["strategy"] = .array(items.map { item in
                    if case .string(let t) = item { return .object(["type": .string(t)]) }
                    return item
                })
            default: break
            }
        }
        if case .string(let t)? = o["scenario"] { o["scenario"] = .object(["type": .string(t)]) }
        return .object(o)
    }
}
