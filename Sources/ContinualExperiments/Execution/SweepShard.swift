import Foundation

/// One of N disjoint, deterministic slices of a sweep: run i belongs to shard i mod N.
/// Every machine expands the same file to the same ordered runs, so shards never overlap.
public struct SweepShard: Sendable, Equatable, CustomStringConvertible {
    public var index: Int
    public var count: Int

    public init(index: Int, count: Int) throws(ShardError) {
        guard count >= 1 else { throw ShardError("the shard count must be ≥ 1, got \(count)") }
        guard (0..<count).contains(index) else { throw ShardError("shard \(index) is outside 0..<\(count)") }
        self.index = index
        self.count = count
    }

    public var description: String { "\(index)/\(count)" }

    /// Parses `K/N` (0-based K) or `slurm` (from `SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN`
    /// and `SLURM_ARRAY_TASK_COUNT`; the array must be a contiguous range with step 1).
    public static func parse(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ShardError) -> SweepShard {
        if text == "slurm" {
            guard let id = environment["SLURM_ARRAY_TASK_ID"].flatMap({ Int($0) }),
                  let count = environment["SLURM_ARRAY_TASK_COUNT"].flatMap({ Int($0) }) else {
                throw ShardError("--shard slurm needs SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (run it inside an sbatch --array job)")
            }
            let minimum = environment["SLURM_ARRAY_TASK_MIN"].flatMap { Int($0) } ?? 0
            return try SweepShard(index: id - minimum, count: count)
        }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]) else {
            throw ShardError("expected --shard K/N (e.g. 0/4, K counts from 0) or --shard slurm, got \"\(text)\"")
        }
        return try SweepShard(index: k, count: n)
    }

    /// The runs of this shard, in sweep order.
    public func select(_ runs: [ResolvedRun]) -> [ResolvedRun] {
        runs.filter { $0.sweepIndex % count == index }
    }
}

public struct ShardError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
