import Foundation
import ContinualCore

/// A `"sweep"` block: which config values vary (by key path) and how they combine.
///
/// ```json
/// "sweep": {"mode": "grid", "parameters": {"optimizer.lr": [0.01, 0.1], "seed": {"range": [0, 4]}}}
/// ```
/// Modes: `grid` (cartesian product, last parameter fastest), `zip` (lists of equal length, taken
/// together), `random` (`samples` distinct points, each value drawn independently, seeded by
/// `seed`; duplicate draws are skipped, fewer points when the space is smaller — see `notes`).
/// Parameters are ordered by key path, except that `seed` always comes last (varies fastest).
public struct SweepSpec: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable { case grid, zip, random }

    /// Where a parameter's values come from.
    public enum Domain: Sendable, Equatable {
        /// An explicit list (also what `{"range": [a, b], "step": s}` expands to).
        case values([JSONValue])
        /// Uniform on [low, high) (random mode only).
        case uniform(Double, Double)
        /// Log-uniform on [low, high), low > 0 (random mode only).
        case logUniform(Double, Double)

        var count: Int? { if case .values(let v) = self { return v.count } else { return nil } }
    }

    public struct Parameter: Sendable, Equatable {
        public var path: JSONKeyPath
        public var domain: Domain
    }

    public var mode: Mode
    public var parameters: [Parameter]
    /// Number of random points (random mode).
    public var samples: Int
    /// Seed of the random draws (random mode).
    public var seed: UInt64
    /// The block as written (stored in results files).
    public var json: JSONValue
    /// For a list of blocks (`"sweep": [{…}, {…}]`): the blocks, combined as a cartesian product
    /// (e.g. a random search × every seed). `parameters` then lists all of theirs, in order.
    public var parts: [SweepSpec] = []

    static let keys: Set<String> = ["mode", "parameters", "samples", "seed"]
    /// Grids larger than this are refused (almost certainly a mistake).
    public static let maximumPoints = 1_000_000

    /// Parses the block at `location` (e.g. `.sweep`); `runKeys` are the keys a path may start with.
    public static func parse(_ value: JSONValue, at location: String, file: String, runKeys: Set<String>) throws -> SweepSpec {
        if case .array(let blocks) = value {
            guard !blocks.isEmpty else { throw ConfigError(file: file, location: location, message: "expected a sweep block or a non-empty list of blocks") }
            let parts = try blocks.enumerated().map { try parse($1, at: "\(location)[\($0)]", file: file, runKeys: runKeys) }
            var seen = Set<String>()
            var total = 1
            for (i, part) in parts.enumerated() {
                for p in part.parameters where !seen.insert(p.path.text).inserted {
                    throw ConfigError(file: file, location: "\(location)[\(i)].parameters[\"\(p.path.text)\"]", message: "swept in two blocks of the list")
                }
                // Counted, not expanded (a random block of a million samples is not drawn here).
                total = saturatingProduct(total, part.count)
                if total > maximumPoints { throw ConfigError(file: file, location: location, message: "the sweep has more than \(maximumPoints) points") }
            }
            return SweepSpec(mode: .grid, parameters: parts.flatMap(\.parameters), samples: 0, seed: 0, json: value, parts: parts)
        }
        func fail(_ where_: String, _ message: String) -> ConfigError {
            ConfigError(file: file, location: location + where_, message: message)
        }
        guard case .object(let o) = value else { throw fail("", "expected an object with \"parameters\" (and optionally \"mode\", \"samples\", \"seed\")") }
        for key in o.keys.sorted() where !keys.contains(key) {
            throw fail("." + key, "unknown key \"\(key)\"\(didYouMean(key, keys)); allowed keys: \(keys.sorted().joined(separator: ", ")) (swept key paths go inside \"parameters\")")
        }
        var mode = Mode.grid
        if let m = o["mode"] {
            guard case .string(let s) = m, let parsed = Mode(rawValue: s) else {
                throw fail(".mode", "expected one of \(Mode.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
            }
            mode = parsed
        }
        var samples = 0
        if let s = o["samples"] {
            guard mode == .random else { throw fail(".samples", "only used with \"mode\": \"random\"") }
            guard case .int(let n) = s, n >= 1, n <= maximumPoints else { throw fail(".samples", "expected an integer from 1 to \(maximumPoints)") }
            samples = Int(n)
        } else if mode == .random {
            throw fail(".samples", "required key is missing (number of random points)")
        }
        var seed: UInt64 = 0
        if let s = o["seed"] {
            guard mode == .random else { throw fail(".seed", "only used with \"mode\": \"random\" (sweep run seeds with \"parameters\": {\"seed\": …})") }
            guard case .int(let n) = s, n >= 0 else { throw fail(".seed", "expected a non-negative integer") }
            seed = UInt64(n)
        }
        guard case .object(let params)? = o["parameters"], !params.isEmpty else {
            throw fail(".parameters", "expected a non-empty object of key path → values, e.g. {\"optimizer.lr\": [0.01, 0.1]}")
        }
        var parameters: [Parameter] = []
        for (text, domainValue) in params {
            let at = ".parameters[\"\(text)\"]"
            let path: JSONKeyPath
            do { path = try JSONKeyPath(text) } catch { throw fail(at, error.message) }
            guard runKeys.contains(path.head), path.head != "name" else {
                throw fail(at, "\"\(path.head)\" is not a run setting\(didYouMean(path.head, runKeys.subtracting(["name"]))); key paths start with one of \(runKeys.subtracting(["name"]).sorted().joined(separator: ", "))")
            }
            parameters.append(Parameter(path: path, domain: try domain(domainValue, mode: mode, fail: { fail(at, $0) })))
        }
        parameters.sort { a, b in
            let ka = (a.path.text == "seed" ? 1 : 0, a.path.text), kb = (b.path.text == "seed" ? 1 : 0, b.path.text)
            return ka < kb
        }
        switch mode {
        case .grid:
            var total = 1
            for p in parameters {
                total = saturatingProduct(total, p.domain.count ?? 0)
                if total > maximumPoints { throw fail(".parameters", "the grid has more than \(maximumPoints) points") }
            }
        case .zip:
            let counts = Set(parameters.map { $0.domain.count ?? 0 })
            guard counts.count == 1 else {
                throw fail(".parameters", "zip needs lists of equal length; got " + parameters.map { "\($0.path.text): \($0.domain.count ?? 0)" }.joined(separator: ", "))
            }
        case .random: break
        }
        return SweepSpec(mode: mode, parameters: parameters, samples: samples, seed: seed, json: value)
    }

    private static func domain(_ v: JSONValue, mode: Mode, fail: (String) -> ConfigError) throws -> Domain {
        let usage = "expected a list of values, {\"range\": [from, to]} (integers, \"to\" excluded; optional \"step\")"
            + ", {\"uniform\": [low, high]} or {\"log_uniform\": [low, high]}"
        switch v {
        case .array(let items):
            guard !items.isEmpty else { throw fail("the list of values is empty") }
            return .values(items)
        case .object(let o):
            if let r = o["range"] {
                for k in o.keys where k != "range" && k != "step" { throw fail("unknown key \"\(k)\" in a range; allowed: range, step") }
                guard case .array(let ends) = r, ends.count == 2, case .int(let a) = ends[0], case .int(let b) = ends[1] else {
                    throw fail("\"range\" expects [from, to] with integers (to excluded)")
                }
                var step: Int64 = 1
                if let s = o["step"] {
                    guard case .int(let n) = s, n > 0 else { throw fail("\"step\" must be a positive integer") }
                    step = n
                }
                guard a < b else { throw fail("\"range\": [\(a), \(b)] is empty (to is excluded)") }
                // b − a overflows Int64 for ranges wider than Int64.max: such a range is too long anyway.
                let (width, overflow) = b.subtractingReportingOverflow(a)
                // (width − 1) / step + 1 values: a range of exactly `maximumPoints` values is allowed.
                guard !overflow, (width - 1) / step < Int64(maximumPoints) else { throw fail("the range has more than \(maximumPoints) values") }
                return .values(stride(from: a, to: b, by: Int(step)).map { JSONValue.int($0) })
            }
            for key in ["uniform", "log_uniform"] {
                guard let r = o[key] else { continue }
                guard o.count == 1 else { throw fail("\"\(key)\" takes no other keys") }
                guard mode == .random else { throw fail("\"\(key)\" ranges need \"mode\": \"random\" (use a list or \"range\" for grid and zip)") }
                guard case .array(let ends) = r, ends.count == 2, let lo = ends[0].numberValue, let hi = ends[1].numberValue,
                      lo.isFinite, hi.isFinite, lo < hi else {
                    throw fail("\"\(key)\" expects [low, high] with low < high")
                }
                if key == "log_uniform" {
                    guard lo > 0 else { throw fail("\"log_uniform\" needs low > 0") }
                    return .logUniform(lo, hi)
                }
                return .uniform(lo, hi)
            }
            throw fail(usage)
        default:
            throw fail(usage)
        }
    }

    /// Number of points, counted without expanding (a random search counts its `samples`, capped
    /// by the size of its space when every parameter is a list; duplicates may leave fewer).
    public var count: Int {
        if !parts.isEmpty { return parts.reduce(1) { saturatingProduct($0, $1.count) } }
        switch mode {
        case .grid: return parameters.reduce(1) { saturatingProduct($0, $1.domain.count ?? 0) }
        case .zip: return parameters.first?.domain.count ?? 0
        case .random:
            var space: Int? = 1
            for p in parameters {
                guard let n = p.domain.count, let s = space else { space = nil; break }
                space = saturatingProduct(s, n)
            }
            return min(samples, space ?? Int.max)
        }
    }

    /// The first `limit` points in expansion order, without expanding the rest.
    public func points(limit: Int) -> [[JSONValue]] {
        guard limit < count else { return points() }
        if !parts.isEmpty {
            // Mixed radix over the parts, last part fastest: every digit of an index < limit is < limit.
            let lists = parts.map { $0.points(limit: limit) }
            let radix = parts.map(\.count)
            return (0..<limit).map { i in
                var rest = i, digits = [Int](repeating: 0, count: lists.count)
                for j in lists.indices.reversed() { digits[j] = rest % max(radix[j], 1); rest /= max(radix[j], 1) }
                return lists.indices.flatMap { lists[$0][min(digits[$0], lists[$0].count - 1)] }
            }
        }
        switch mode {
        case .grid:
            let lists = parameters.map { p -> [JSONValue] in if case .values(let v) = p.domain { return v } else { return [] } }
            return (0..<limit).map { i in
                var rest = i, point = [JSONValue](repeating: .null, count: lists.count)
                for j in lists.indices.reversed() { point[j] = lists[j][rest % lists[j].count]; rest /= lists[j].count }
                return point
            }
        case .zip:
            let lists = parameters.map { p -> [JSONValue] in if case .values(let v) = p.domain { return v } else { return [] } }
            return (0..<limit).map { i in lists.map { $0[i] } }
        case .random:
            var capped = self
            capped.samples = limit
            return capped.randomPoints().points
        }
    }

    /// A few points that between them take every listed value of every parameter (up to
    /// `perParameter` values each) and both ends of continuous ranges, with the other parameters
    /// at their first point: what `validate` checks of a sweep too large to resolve run by run.
    public func extremePoints(perParameter: Int = 64) -> [[JSONValue]] {
        guard let first = points(limit: 1).first, !parameters.isEmpty else { return [] }
        var out: [[JSONValue]] = []
        for (j, p) in parameters.enumerated() {
            let values: [JSONValue]
            switch p.domain {
            case .values(let v): values = v.count <= perParameter ? v : Array(v.prefix(perParameter / 2) + v.suffix(perParameter / 2))
            case .uniform(let lo, let hi), .logUniform(let lo, let hi): values = [.double(lo), .double(hi.nextDown)]
            }
            for v in values {
                var point = first
                point[j] = v
                out.append(point)
            }
        }
        return out
    }

    /// The sweep's points: each is one value per parameter, in `parameters` order.
    public func points() -> [[JSONValue]] {
        if !parts.isEmpty {
            return parts.reduce([[]]) { acc, part in
                let points = part.points()
                return acc.flatMap { prefix in points.map { prefix + $0 } }
            }
        }
        switch mode {
        case .grid:
            var out: [[JSONValue]] = [[]]
            for p in parameters {
                guard case .values(let values) = p.domain else { return [] }
                out = out.flatMap { prefix in values.map { prefix + [$0] } }
            }
            return out
        case .zip:
            let lists = parameters.map { p -> [JSONValue] in if case .values(let v) = p.domain { return v } else { return [] } }
            let n = lists.first?.count ?? 0
            return (0..<n).map { i in lists.map { $0[i] } }
        case .random:
            return randomPoints().points
        }
    }

    /// Most draws made for a random search, per requested sample, before giving up on finding
    /// more distinct points (a small categorical space is exhausted long before that).
    static let drawsPerSample = 100

    /// The random search's distinct points, in draw order: duplicates (likely when most
    /// parameters are lists) are dropped and drawing continues until `samples` distinct points,
    /// the whole space, or `drawsPerSample`·`samples` draws. `note` says when fewer were found.
    public func randomPoints() -> (points: [[JSONValue]], note: String?) {
        var rng = RandomSource(seed: seed, stream: "sweep")
        // Size of the space when every parameter is a list (continuous domains: unbounded).
        var space: Int? = 1
        for p in parameters {
            guard let n = p.domain.count, let s = space else { space = nil; break }
            let (m, overflow) = s.multipliedReportingOverflow(by: n)
            space = overflow ? nil : m
        }
        let limit = samples.multipliedReportingOverflow(by: Self.drawsPerSample).partialValue
        var seen = Set<String>()
        var out: [[JSONValue]] = []
        var draws = 0
        while out.count < samples && draws < limit && (space.map { out.count < $0 } ?? true) {
            draws += 1
            let point = parameters.map { p -> JSONValue in
                switch p.domain {
                case .values(let v): return v[rng.uniformInt(below: v.count)]
                case .uniform(let lo, let hi): return .double(Self.roundedBelow(rng.uniform(lo, hi), lo, hi))
                case .logUniform(let lo, let hi):
                    return .double(Self.roundedBelow(Foundation.exp(rng.uniform(Foundation.log(lo), Foundation.log(hi))), lo, hi))
                }
            }
            if seen.insert(JSONValue.array(point).canonicalText()).inserted { out.append(point) }
        }
        guard out.count < samples else { return (out, nil) }
        let why = space.map { out.count == $0 ? "the space has only \($0) distinct point(s)" : "\(draws) draws found no more" }
            ?? "\(draws) draws found no more"
        return (out, "random search asked for \(samples) samples but \(why); using the \(out.count) distinct point(s)")
    }

    /// A draw `x` in [lo, hi) rounded to 6 significant digits, kept inside [lo, hi): rounding can
    /// reach `hi` itself (or fall below `lo`), and [low, high) excludes `high`.
    static func roundedBelow(_ x: Double, _ lo: Double, _ hi: Double) -> Double {
        let r = rounded(x)
        if r >= hi { return x < hi ? x : hi.nextDown }
        if r < lo { return x >= lo ? x : lo }
        return r
    }

    /// Notes about the expansion (a random search with fewer distinct points than `samples`).
    public var notes: [String] {
        if !parts.isEmpty { return parts.flatMap(\.notes) }
        guard mode == .random, let note = randomPoints().note else { return [] }
        return [note]
    }

    /// Random draws are kept to 6 significant digits, so run names and configs stay readable.
    static func rounded(_ x: Double) -> Double {
        Double(String(format: "%.6g", x)) ?? x
    }
}

/// `a·b` for counts ≥ 0, Int.max when it overflows.
func saturatingProduct(_ a: Int, _ b: Int) -> Int {
    let (m, overflow) = a.multipliedReportingOverflow(by: b)
    return overflow || m < 0 ? Int.max : m
}

extension JSONValue {
    /// The value as a Double if it is a number.
    var numberValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .uint(let u): return Double(u)
        case .double(let d): return d
        default: return nil
        }
    }
}
