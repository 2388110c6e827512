import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 15: the config fuzzer. Mutates the shipped experiments (wrong types, unknown keys,
/// missing keys, extreme numbers, long and odd strings, bad sweep paths and blocks, invalid
/// syntax) with a fixed seed and puts every mutant through `continual validate`'s own entry point
/// (`ExperimentValidation.validate`, in process). No mutant may crash the process or take long,
/// every rejection must name a key path (or line and column for syntax), and every accepted mutant
/// either runs (those small enough to run here) or is refused for its resource estimate under the
/// test's work budget.
@Suite(.serialized) struct ConfigFuzzTests {
    enum Kind: String, CaseIterable {
        case wrongType = "wrong type", unknownKey = "unknown key", missingKey = "missing key"
        case extremeNumber = "extreme number", oddString = "long/odd string", badSweep = "bad sweep"
        case invalidSyntax = "invalid syntax"
    }

    /// SplitMix64: deterministic, independent of the toolkit's own generators.
    struct RNG {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
    }

    enum Step: CustomStringConvertible {
        case key(String), index(Int)
        var description: String { switch self { case .key(let k): return "." + k; case .index(let i): return "[\(i)]" } }
    }

    /// Every node of `v` with its path.
    static func nodes(_ v: JSONValue, _ path: [Step] = []) -> [([Step], JSONValue)] {
        var out: [([Step], JSONValue)] = [(path, v)]
        switch v {
        case .object(let o): for k in o.keys.sorted() { out += nodes(o[k]!, path + [.key(k)]) }
        case .array(let a): for (i, x) in a.enumerated() { out += nodes(x, path + [.index(i)]) }
        default: break
        }
        return out
    }

    static func setting(_ root: JSONValue, _ path: ArraySlice<Step>, _ new: JSONValue?) -> JSONValue {
        guard let first = path.first else { return new ?? .null }
        switch (first, root) {
        case (.key(let k), .object(var o)):
            if path.count == 1, new == nil { o[k] = nil } else { o[k] = setting(o[k] ?? .null, path.dropFirst(), new) }
            return .object(o)
        case (.index(let i), .array(var a)) where a.indices.contains(i):
            if path.count == 1, new == nil { a.remove(at: i) } else { a[i] = setting(a[i], path.dropFirst(), new) }
            return .array(a)
        default: return root
        }
    }

    /// 1e-320, a subnormal Double (as a literal the compiler warns that it underflows).
    static let subnormal = Double("1e-320")!
    static let extremes: [JSONValue] = [
        .int(-1), .int(0), .int(1), .int(-2_147_483_648), .int(2_147_483_648), .int(1 << 53), .int(Int64.max), .int(Int64.min),
        .int(1_000_000_000_000), .int(1_000_000_000), .int(1_000_000), .uint(UInt64.max), .double(1e308), .double(-1e308),
        .double(subnormal), .double(0.5), .double(-0.5), .double(3.5e38), .double(1e19), .double(1e12),
    ]
    static let oddStrings: [String] = [
        "", " ", String(repeating: "x", count: 10_000), "../../../../etc/passwd", "/dev/zero", "datasets/digits.h5",
        "naïve 🧠 名前", "a\u{0}b", "\\", "\"", "NaN", "1e400", "results/", "-", String(repeating: "é", count: 300),
    ]
    static let sweepPaths = [
        "optimizer..lr", "model.hidden[99]", "nope.x", "seed[0]", "", "strategy[0].lambda", "training", "model.hidden[0]",
        "scenario.train_per_experience", "population.users", "name", "strategy[7]", "training.epochs.x", "a b",
    ]

    /// Trims a shipped experiment to its first two variants (so the fuzz stays fast).
    static func trimmed(_ v: JSONValue) -> JSONValue {
        guard case .object(var o) = v else { return v }
        if case .array(let variants)? = o["variants"] { o["variants"] = .array(Array(variants.prefix(2))) }
        return .object(o)
    }

    static func mutate(_ base: JSONValue, kind: Kind, rng: inout RNG) -> Data {
        let all = nodes(base)
        func encode(_ v: JSONValue) -> Data { (try? JSONEncoder().encode(v)) ?? Data() }
        switch kind {
        case .wrongType:
            let (path, old) = rng.pick(Array(all.dropFirst()))
            var choices: [JSONValue] = [.string("x"), .int(3), .double(0.25), .bool(true), .null, .array([.int(1)]), .object(["a": .int(1)]), .array([])]
            choices.removeAll { $0.kindName == old.kindName }
            return encode(setting(base, path[...], rng.pick(choices)))
        case .unknownKey:
            let objects = all.filter { if case .object = $0.1 { return true } else { return false } }
            let (path, node) = rng.pick(objects)
            var key = rng.pick(["zzz", "epoch", "lr_", "Seed", "hiden", "strategies", "sweeps", "type ", "x.y"])
            if case .object(let o) = node, let existing = o.keys.sorted().randomElement(using: &rng) {
                // A typo of a key that is there: drop, double or swap a letter.
                var chars = Array(existing)
                switch rng.below(3) {
                case 0 where chars.count > 1: chars.remove(at: rng.below(chars.count))
                case 1: chars.insert(chars[rng.below(chars.count)], at: rng.below(chars.count))
                default: chars.append("s")
                }
                if rng.below(2) == 0 { key = String(chars) }
            }
            guard case .object(var o) = node else { return encode(base) }
            o[key] = .int(1)
            return encode(setting(base, path[...], .object(o)))
        case .missingKey:
            let keyed = all.filter { if case .key = $0.0.last { return true } else { return false } }
            let (path, _) = rng.pick(keyed)
            return encode(setting(base, path[...], nil))
        case .extremeNumber:
            let numbers = all.filter { $0.1.numberValue != nil }
            let (path, _) = numbers.isEmpty ? rng.pick(all) : rng.pick(numbers)
            var v = base
            v = setting(v, path[...], rng.pick(extremes))
            // Sometimes two at once, or a size key the shipped file does not set.
            if rng.below(3) == 0 {
                let extra: [[Step]] = [[.key("model"), .key("hidden")], [.key("population")], [.key("training"), .key("epochs")],
                                       [.key("scenario"), .key("train_per_experience")], [.key("training"), .key("batch_size")]]
                let p = rng.pick(extra)
                let value: JSONValue = p.last.map { "\($0)" } == ".hidden" ? .array([rng.pick(extremes)])
                    : p.last.map { "\($0)" } == ".population" ? .object(["users": rng.pick(extremes)]) : rng.pick(extremes)
                v = setting(v, p[...], value)
            }
            return encode(v)
        case .oddString:
            let strings = all.filter { if case .string = $0.1 { return true } else { return false } }
            let (path, _) = rng.pick(strings)
            return encode(setting(base, path[...], .string(rng.pick(oddStrings))))
        case .badSweep:
            let blocks: [JSONValue] = [
                .object(["parameters": .object([rng.pick(sweepPaths): .array([.int(1), .int(2)])])]),
                .object(["mode": .string("random"), "parameters": .object(["optimizer.lr": .object(["log_uniform": .array([.double(1e-4), .double(1)])])])]),
                .object(["mode": .string("random"), "samples": .int(1_000_000),
                         "parameters": .object(["optimizer.lr": .object(["uniform": .array([.double(0.01), .double(0.1)])]),
                                                "seed": .object(["range": .array([.int(0), .int(999_999)])])])]),
                .object(["parameters": .object(["seed": .object(["range": .array([.int(Int64.min), .int(Int64.max)])])])]),
                .object(["parameters": .object(["seed": .object(["range": .array([.int(0), .int(10_000)])]),
                                                "training.epochs": .object(["range": .array([.int(1), .int(10_000)])])])]),
                .object(["mode": .string("zip"), "parameters": .object(["seed": .array([.int(1)]), "optimizer.lr": .array([.double(0.1), .double(0.2)])])]),
                .object(["mode": .string("random"), "samples": .int(0), "parameters": .object(["seed": .array([.int(1)])])]),
                .object(["parameters": .object(["optimizer.lr": .object(["uniform": .array([.double(1), .double(0)])])])]),
                .object(["parameters": .object(["model.hidden": .array([.array([.int(1_000_000_000_000)]), .array([.int(8)])])])]),
                .object(["parameters": .object(["optimizer.lr": .array([.double(0.1), .double(0.1)])])]),
                .array([]),
                .array([.object(["parameters": .object(["seed": .array([.int(1), .int(2)])])]),
                        .object(["parameters": .object(["seed": .array([.int(3)])])])]),
                .string("grid"),
                .object(["parameters": .object([:])]),
                .object(["parameters": .object(["seed": .object(["range": .array([.int(0), .int(3)]), "step": .int(0)])])]),
            ]
            guard case .object(var o) = base else { return encode(base) }
            o["sweep"] = rng.pick(blocks)
            return encode(.object(o))
        case .invalidSyntax:
            var text = Array(String(decoding: encode(base), as: UTF8.self))
            switch rng.below(7) {
            case 0: text.remove(at: rng.below(text.count))
            case 1: text = Array(text.prefix(rng.below(text.count)))
            case 2:
                if let i = text.indices.filter({ text[$0] == "}" || text[$0] == "]" }).randomElement(using: &rng) { text.insert(",", at: i) }
            case 3:
                if let i = text.indices.filter({ text[$0] == ":" }).randomElement(using: &rng) { text.insert(contentsOf: " NaN,", at: i + 1) }
            case 4: text.insert(rng.pick(["{", "[", "\"", ":", ",", "\u{7}"]), at: rng.below(text.count))
            case 5:
                if let i = text.indices.filter({ text[$0] == ":" }).randomElement(using: &rng) { text.insert(contentsOf: " 1e400,", at: i + 1) }
            default: text = Array(String(repeating: "[", count: 100_000))
            }
            return Data(String(text).utf8)
        }
    }

    enum Verdict { case accepted, keyPath, lineColumn, noLocation }

    @Test("1,050 mutated configs: no crash, no hang, every rejection located, accepted ones run or are refused by estimate")
    func fuzz() throws {
        let dir = packageRoot.appendingPathComponent("Experiments")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }.sorted().map { dir.appendingPathComponent($0).path }
            + (try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("sweeps").path)).filter { $0.hasSuffix(".json") }.sorted()
                .map { dir.appendingPathComponent("sweeps/" + $0).path }
        let bases = try files.map { path -> (String, JSONValue) in
            (path, Self.trimmed(try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: URL(fileURLWithPath: path)))))
        }
        #expect(bases.count >= 10)
        var rng = RNG(state: 20_261_122)
        let perKind = 150
        // A work budget for running accepted mutants here; anything bigger must be refused by it.
        let budget = ResourceLimits(memoryBytes: 256 * 1024 * 1024, work: 100_000, flops: 1e8)
        let maxRuns = 15
        var counts: [Kind: [Verdict: Int]] = [:]
        var executed = 0, refusedByEstimate = 0, smallNotRun = 0, slowest = 0.0, slowestRun = 0.0, ranStatus: [String: Int] = [:]
        var problems: [String] = []
        var slow: [String] = []
        let start = Date()
        for kind in Kind.allCases {
            FileHandle.standardError.write(Data("config fuzz: \(kind.rawValue) (\(String(format: "%.1f", Date().timeIntervalSince(start))) s, \(executed) runs so far)\n".utf8))
            for n in 0..<perKind {
                let (path, base) = bases[(n * 7 + Kind.allCases.firstIndex(of: kind)!) % bases.count]
                let data = Self.mutate(base, kind: kind, rng: &rng)
                if let dump = ProcessInfo.processInfo.environment["CONFIG_FUZZ_DUMP"] {
                    // Debugging aid: write every mutant to DIR/KIND-N.json.
                    try? data.write(to: URL(fileURLWithPath: "\(dump)/\(kind.rawValue.replacingOccurrences(of: "/", with: "-"))-\(n).json"))
                }
                let t0 = Date(), cpu0 = Self.threadCPUSeconds()
                var verdict = Verdict.accepted
                var accepted: (ExperimentFile, Preflight.Report)? = nil
                do {
                    accepted = try ExperimentValidation.validate(data: data, path: path)
                } catch let e as ConfigError {
                    if e.location.hasPrefix(".") || e.location.hasPrefix("[") || e.location == "(top level)" { verdict = .keyPath }
                    else if e.location.hasPrefix("line ") { verdict = .lineColumn }
                    else {
                        verdict = .noLocation
                        problems.append("\(kind.rawValue) #\(n) from \(URL(fileURLWithPath: path).lastPathComponent): no location: \(e)")
                    }
                    if e.description.count > 2100 { problems.append("\(kind.rawValue) #\(n): message of \(e.description.count) characters") }
                } catch {
                    verdict = .noLocation
                    problems.append("\(kind.rawValue) #\(n): not a ConfigError: \(error)")
                }
                let seconds = Date().timeIntervalSince(t0)
                slowest = max(slowest, seconds)
                if seconds > 1 { slow.append("\(kind.rawValue) #\(n) \(URL(fileURLWithPath: path).lastPathComponent) \(String(format: "%.1f", seconds)) s \(verdict)") }
                // A hang guard, not a speed test: the CPU time of this thread (wall time grows with
                // whatever else the machine runs; CPU time does not).
                let cpu = Self.threadCPUSeconds() - cpu0
                if cpu > 20 { problems.append("\(kind.rawValue) #\(n): validate used \(cpu) s of CPU") }
                counts[kind, default: [:]][verdict, default: 0] += 1
                guard let (file, report) = accepted, let run = file.runs.first else { continue }
                // Accepted: run the first run when it is small (within the budget) …
                if executed < maxRuns, (try? Preflight.check(run, file: path, limits: budget)) != nil,
                   report.estimates.first.map({ $0.work <= budget.work && $0.flops <= budget.flops }) == true {
                    let r0 = Date()
                    let result = RunExecutor.execute(run)
                    slowestRun = max(slowestRun, Date().timeIntervalSince(r0))
                    executed += 1
                    ranStatus[result.status.rawValue, default: 0] += 1
                    if result.status == .failed { problems.append("\(kind.rawValue) #\(n): accepted but the run failed: \(result.message)") }
                } else {
                    // … or show that validate refuses it for its estimate under the budget (the
                    // estimates do not depend on the limits: the report's are the ones it would use).
                    if let e = report.estimates.lazy.compactMap({ $0.problem(budget, file: path) }).first {
                        if e.message.contains("estimated") { refusedByEstimate += 1 }
                    } else if executed < maxRuns {
                        let why = (try? Preflight.check(run, file: path, limits: budget)).map { "\($0)" } ?? "check failed"
                        problems.append("\(kind.rawValue) #\(n): accepted, small, but not run: \(why) / \(report.estimates.first.map { "\($0)" } ?? "-")")
                    } else {
                        smallNotRun += 1
                    }
                }
            }
        }
        let total = counts.values.reduce(0) { $0 + $1.values.reduce(0, +) }
        var lines = ["config fuzz: \(total) mutants in \(String(format: "%.1f", Date().timeIntervalSince(start))) s (slowest validate \(String(format: "%.2f", slowest)) s)"]
        for kind in Kind.allCases {
            let c = counts[kind] ?? [:]
            lines.append("  \(kind.rawValue): accepted \(c[.accepted] ?? 0), rejected with key path \(c[.keyPath] ?? 0), "
                + "with line/column \(c[.lineColumn] ?? 0), without location \(c[.noLocation] ?? 0)")
        }
        lines.append("  accepted and run: \(executed) (\(ranStatus.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", "))); "
            + "accepted but refused by the test's budget for their estimate: \(refusedByEstimate); small but not run (cap reached): \(smallNotRun); slowest run \(String(format: "%.2f", slowestRun)) s")
        if !slow.isEmpty { lines.append("  validations over 1 s: \(slow.count): " + slow.prefix(12).joined(separator: "; ")) }
        print(lines.joined(separator: "\n"))
        #expect(total >= 1000)
        #expect(problems.isEmpty, "\(problems.prefix(20).joined(separator: "\n"))")
    }
}

extension Array {
    func randomElement(using rng: inout ConfigFuzzTests.RNG) -> Element? { isEmpty ? nil : self[rng.below(count)] }
}

extension ConfigFuzzTests {
    /// CPU seconds this thread has used (CLOCK_THREAD_CPUTIME_ID).
    static func threadCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
    }
}
