import ContinualCore
import Foundation

/// The finished selection runs of a tuning stage, appended one line each as they finish, so that
/// a sweep killed during tuning resumes it where it stopped (`--resume`, `--resume-or-start`)
/// instead of rerunning every selection run.
///
/// File `RESULTS.h5.tuning`, beside the results file it tunes for. Line 1 is a header naming the
/// format, the toolkit version and the numerics version; every other line is one selection run:
/// `run_id score_bits flops wall_seconds_bits` (the Doubles as their IEEE-754 bit patterns in hex,
/// so a resumed tuning makes exactly the records an uninterrupted one makes). A selection run is
/// keyed by its run id, the digest of its whole resolved configuration (grid point, seed and
/// validation split included), so an entry is reused only for the very same run.
///
/// Trust: the journal is as trusted as the results file it sits beside (a resumed sweep also keeps
/// that file's runs); it is read only when resuming, and a fresh start or `--overwrite` removes it.
/// A journal written by another toolkit or numerics version, or a line that does not parse, is
/// not used (the lines before a torn last line are).
public struct TuningJournal: Sendable {
    /// One finished selection run.
    public struct Entry: Sendable, Equatable {
        public var score: Double
        public var flops: Int
        public var wallSeconds: Double
        public init(score: Double, flops: Int, wallSeconds: Double) {
            self.score = score
            self.flops = flops
            self.wallSeconds = wallSeconds
        }
    }

    public let path: String

    /// The journal of results file `results`.
    public init(results: String) { path = results + ".tuning" }

    /// Line 1: what wrote the journal. A journal from another version is not reused.
    public static var header: String {
        "continualkit-tuning-journal 1 toolkit=\(ResultsSchema.toolkitVersion) numerics=\(Kernels.numericsVersion)"
    }

    public var exists: Bool { FileManager.default.fileExists(atPath: path) }

    /// The entries it holds, by run id (empty when missing, unreadable or of another version).
    public func entries() -> [String: Entry] {
        guard let data = FileManager.default.contents(atPath: path) else { return [:] }
        return Self.parse(String(decoding: data, as: UTF8.self))
    }

    /// Parses a journal's text: nothing unless its header is this version's; only whole lines
    /// (ended by a newline) count, and one that does not parse is skipped.
    public static func parse(_ text: String) -> [String: Entry] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.first, first == header else { return [:] }
        lines.removeFirst()
        lines.removeLast()   // after the last newline: empty, or a line a kill tore (never used)
        var out: [String: Entry] = [:]
        for line in lines {
            let f = line.split(separator: " ")
            guard f.count == 4, f[0].count == 16, f[0].allSatisfy(\.isHexDigit),
                  let score = UInt64(f[1], radix: 16), let flops = Int(f[2]), flops >= 0,
                  let wall = UInt64(f[3], radix: 16) else { continue }
            out[String(f[0])] = Entry(score: Double(bitPattern: score), flops: flops,
                                      wallSeconds: Double(bitPattern: wall))
        }
        return out
    }

    /// The line of one finished selection run.
    public static func line(runId: String, _ e: Entry) -> String {
        "\(runId) \(String(e.score.bitPattern, radix: 16)) \(e.flops) \(String(e.wallSeconds.bitPattern, radix: 16))\n"
    }

    /// Writes the journal anew with `entries` (none: header only), replacing what was there
    /// atomically; a resumed tuning rewrites it so that no torn line precedes the new ones.
    public func start(with entries: [String: Entry] = [:]) throws {
        let lines = entries.keys.sorted().map { Self.line(runId: $0, entries[$0]!) }.joined()
        try Data((Self.header + "\n" + lines).utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Appends one finished selection run and flushes it to disk (a kill loses at most the line
    /// being written, which `parse` then ignores).
    public func append(runId: String, _ entry: Entry) throws {
        let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { throw JournalError(description: "cannot append to \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(Self.line(runId: runId, entry).utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard n == bytes.count else { throw JournalError(description: "cannot append to \(path): \(String(cString: strerror(errno)))") }
        _ = fsync(fd)
    }

    /// Removes the journal (its choices are in the results file, or it is being replaced).
    public func remove() { try? FileManager.default.removeItem(atPath: path) }

    public struct JournalError: Error, CustomStringConvertible {
        public var description: String
    }
}
