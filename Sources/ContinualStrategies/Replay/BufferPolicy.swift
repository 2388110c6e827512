import ContinualCore

/// Decides which samples a replay buffer keeps. A new policy is one new file implementing this
/// protocol, plus one case in `BufferPolicyKind`.
///
/// Streaming policies implement `offer` (called for every sample of the stream, in training
/// order, in the first epoch); `select` then defaults to offering an experience's samples in
/// order. Core-set policies set `supportsStreaming = false` and implement `select`, called once
/// at the end of each experience. Every random draw comes from the `rng` passed in.
public protocol BufferPolicy: Sendable {
    /// Whether `offer` is implemented (the plugin rejects `"update": "stream"` otherwise).
    var supportsStreaming: Bool { get }
    /// Whether `select` measures distances in `candidates.embedding` (the plugin computes
    /// penultimate features only for such policies).
    var usesEmbedding: Bool { get }
    /// Sees one sample of the stream; may store it (append or replace).
    mutating func offer(_ sample: BufferSample, memory: inout ReplayMemory, rng: inout RandomSource)
    /// Sees a whole experience at its end; may rearrange the memory freely within capacity.
    mutating func select(_ candidates: SelectionCandidates, memory: inout ReplayMemory, rng: inout RandomSource)
    /// The policy's own counters for checkpoints (memory contents are saved separately);
    /// stateless policies keep the default `[]`.
    func checkpointCounters() -> [Int64]
    /// Restores `checkpointCounters()`.
    mutating func restoreCounters(_ counters: [Int64]) throws
}

public extension BufferPolicy {
    var supportsStreaming: Bool { true }
    var usesEmbedding: Bool { false }
    func checkpointCounters() -> [Int64] { [] }
    mutating func restoreCounters(_ counters: [Int64]) throws {}

    mutating func offer(_ sample: BufferSample, memory: inout ReplayMemory, rng: inout RandomSource) {
        preconditionFailure("\(Self.self) selects at the end of an experience only")
    }

    mutating func select(_ candidates: SelectionCandidates, memory: inout ReplayMemory, rng: inout RandomSource) {
        for i in 0..<candidates.count { offer(candidates.sample(i), memory: &memory, rng: &rng) }
    }
}
