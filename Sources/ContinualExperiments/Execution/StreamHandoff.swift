import ContinualCore
import Foundation

/// Streams that preflight has already generated, handed on to the runs that need exactly the
/// same stream (same scenario config, same data file, same seed), so a small `continual run`
/// does not generate its data twice (≈ 15 ms of the quickstart's 0.3 s).
///
/// Bounded on purpose: at most `capacity` streams of at most `maxBytes` of features each are
/// kept, for the life of the process; anything else is generated again by the run, as before.
/// Generation is deterministic, so a handed-on stream is bit-identical to a regenerated one.
final class StreamHandoff: @unchecked Sendable {
    static let shared = StreamHandoff()
    static let capacity = 4
    static let maxBytes = 8 << 20

    private let lock = NSLock()
    private var streams: [String: ExperienceStream] = [:]

    /// The key of a run's stream: the scenario's canonical JSON, the resolved data file and the seed.
    static func key(_ run: ResolvedRun) -> String? {
        guard case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: Data(run.canonicalJSON.utf8)) else {
            return nil
        }
        return key(scenario: o["scenario"], dataPath: Preflight.dataPath(run.config), seed: run.config.seed)
    }

    /// The same key from parts a caller has already decoded (preflight has them at hand).
    static func key(scenario: JSONValue?, dataPath: String?, seed: UInt64) -> String {
        (scenario ?? .null).canonicalText() + "|" + (dataPath ?? "") + "|" + String(seed)
    }

    func offer(_ stream: ExperienceStream, key: String) {
        let floats = stream.experiences.reduce(0) { $0 + ($1.train.count + $1.test.count) * stream.dimension }
        guard floats * 4 <= Self.maxBytes else { return }
        lock.lock()
        defer { lock.unlock() }
        if streams.count < Self.capacity { streams[key] = stream }
    }

    func stream(for key: String) -> ExperienceStream? {
        lock.lock()
        defer { lock.unlock() }
        return streams[key]
    }
}
