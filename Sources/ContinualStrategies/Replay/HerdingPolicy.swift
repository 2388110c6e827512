import ContinualCore

/// iCaRL herding (Rebuffi et al. 2017) per class of each experience, at the experience's end.
///
/// Each (experience, class) group gets an equal share of the capacity; within a group the k-th
/// exemplar is the sample that brings the mean of the first k closest to the group's mean in
/// the chosen feature space (inputs or penultimate activations, not normalised). Old groups are
/// shrunk to a prefix of their herding order when new groups arrive.
public struct HerdingPolicy: BufferPolicy {
    public var supportsStreaming: Bool { false }
    public var usesEmbedding: Bool { true }

    public init() {}

    public mutating func select(_ candidates: SelectionCandidates, memory: inout ReplayMemory, rng: inout RandomSource) {
        CoresetRebalancer.update(memory: &memory, candidates: candidates, byClass: true) { members, k in
            HerdingPolicy.herd(candidates.embedding, dimension: candidates.embeddingDimension, members: members, count: k)
        }
    }

    /// Up to `count` of `members` (row indices into `points`, [n × dimension]) in herding order.
    public static func herd(_ points: [Float], dimension d: Int, members: [Int], count: Int) -> [Int] {
        let m = min(count, members.count)
        guard m > 0 else { return [] }
        var mean = [Double](repeating: 0, count: d)
        for i in members { for f in 0..<d { mean[f] += Double(points[i &* d &+ f]) } }
        for f in 0..<d { mean[f] /= Double(members.count) }
        var sum = [Double](repeating: 0, count: d)
        var chosen = [Bool](repeating: false, count: members.count)
        var picks: [Int] = []
        picks.reserveCapacity(m)
        for k in 1...m {
            let inv = 1 / Double(k)
            var best = -1
            var bestDistance = Double.infinity
            for (j, i) in members.enumerated() where !chosen[j] {
                var dist = 0.0
                let base = i &* d
                for f in 0..<d {
                    let diff = mean[f] - (sum[f] + Double(points[base &+ f])) * inv
                    dist += diff * diff
                }
                if dist < bestDistance {
                    bestDistance = dist
                    best = j
                }
            }
            chosen[best] = true
            let i = members[best]
            for f in 0..<d { sum[f] += Double(points[i &* d &+ f]) }
            picks.append(i)
        }
        return picks
    }
}
