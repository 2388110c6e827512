import Foundation

/// The CPU a benchmark ran on, read at run time (Linux: /proc/cpuinfo and sysfs), so every
/// figure `continual bench` prints carries the machine kind it was measured on: this project's
/// machines differ (AVX-512 or AVX2 only, 1 MiB or 512 kB of L2 per core; docs/benchmarks.md),
/// and a figure from one kind must never stand for another.
public struct MachineInfo: Sendable, Equatable, Codable {
    /// "model name" of the first processor ("unknown" where it cannot be read).
    public var model: String
    /// "cpu family" (x86: 23 Zen 1/2, 25 Zen 3/4, 6 most Intel cores), nil where not reported.
    public var family: Int?
    /// The vector-ISA flags present, in a fixed order: sse, sse2, ssse3, sse4_1, sse4_2, avx,
    /// avx2, fma and every avx512* flag the CPU reports (arm64: asimd, fphp, asimdhp, sve).
    public var flags: [String]
    /// Caches of cpu0 from /sys/devices/system/cpu/cpu0/cache/index*: "L1d", "L1i", "L2", "L3"
    /// → bytes. Empty where sysfs has no cache directory.
    public var caches: [String: Int]
    /// Logical processors the process may run on.
    public var processors: Int

    /// Flags worth printing, in this order; avx512* flags are added as found.
    static let vectorFlags = ["sse", "sse2", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "fma",
                              "asimd", "fphp", "asimdhp", "sve"]

    /// Reads the running machine.
    public static func current() -> MachineInfo {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        return MachineInfo(cpuinfo: cpuinfo, cacheRoot: "/sys/devices/system/cpu/cpu0/cache",
                           processors: ProcessInfo.processInfo.activeProcessorCount)
    }

    /// Parses the text of /proc/cpuinfo (the first processor's block) and the cache directories
    /// under `cacheRoot`.
    public init(cpuinfo: String, cacheRoot: String, processors: Int) {
        var fields: [String: String] = [:]
        for line in cpuinfo.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).isEmpty, !fields.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = line[..<colon].trimmingCharacters(in: .whitespaces)
            if fields[key] == nil { fields[key] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces) }
        }
        model = fields["model name"] ?? fields["Model"] ?? "unknown"
        family = fields["cpu family"].flatMap { Int($0) }
        let present = Set((fields["flags"] ?? fields["Features"] ?? "").split(separator: " ").map(String.init))
        flags = Self.vectorFlags.filter { present.contains($0) } + present.filter { $0.hasPrefix("avx512") }.sorted()
        caches = Self.readCaches(cacheRoot)
        self.processors = processors
    }

    /// "L1d", "L1i", "L2", "L3" → bytes, from sysfs's index*/level, type and size ("32K", "1024K", "32M").
    static func readCaches(_ root: String) -> [String: Int] {
        var result: [String: Int] = [:]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        for entry in entries where entry.hasPrefix("index") {
            func read(_ name: String) -> String? {
                (try? String(contentsOfFile: root + "/" + entry + "/" + name, encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard let level = read("level"), let type = read("type"), let size = read("size").flatMap(Self.bytes) else { continue }
            let name = "L" + level + (type == "Data" ? "d" : type == "Instruction" ? "i" : "")
            result[name] = size
        }
        return result
    }

    /// "32K" → 32768, "1024K" → 1 MiB, "32M" → 32 MiB, "512" → 512; nil otherwise.
    static func bytes(_ text: String) -> Int? {
        let scale: Int
        var digits = Substring(text)
        switch text.last {
        case "K": scale = 1 << 10; digits = digits.dropLast()
        case "M": scale = 1 << 20; digits = digits.dropLast()
        case "G": scale = 1 << 30; digits = digits.dropLast()
        default: scale = 1
        }
        return Int(digits).map { $0 * scale }
    }

    /// One line for humans: "AMD EPYC, family 25, 2 processors; sse … fma; L1d 32 KiB, L2 512 KiB, L3 32 MiB".
    public var summary: String {
        let family = family.map { ", family \($0)" } ?? ""
        let caches = ["L1d", "L1i", "L2", "L3"].compactMap { name in self.caches[name].map { "\(name) \(Self.size($0))" } }
        return "\(model)\(family), \(processors) processors; \(flags.joined(separator: " ")); \(caches.joined(separator: ", "))"
    }

    static func size(_ bytes: Int) -> String {
        bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes >> 10) KiB"
    }

    /// The JSON fields `continual bench --hidden` prints.
    public var json: [String: Any] {
        ["cpu_model": model, "cpu_family": family.map { $0 as Any } ?? NSNull(), "cpu_flags": flags, "cpu_caches": caches,
         "processors": processors]
    }
}
