import ContinualCore

/// Greedy k-center core-set (Sener & Savarese 2018; Gonzalez 1985) per experience, at its end.
///
/// Each experience gets an equal share of the capacity, whatever its labels. Within it the first
/// center is drawn uniformly (from the plugin's random stream) and every next one is the sample
/// farthest from the centers chosen so far (Euclidean, in the chosen feature space). The
/// covering radius is at most twice the optimum; old experiences keep a prefix of their order.
public struct KCenterPolicy: BufferPolicy {
    public var supportsStreaming: Bool { false }
    public var usesEmbedding: Bool { true }

    public init() {}

    public mutating func select(_ candidates: SelectionCandidates, memory: inout ReplayMemory, rng: inout RandomSource) {
        var generator = rng
        CoresetRebalancer.update(memory: &memory, candidates: candidates, byClass: false) { members, k in
            guard !members.isEmpty else { return [] }
            let first = generator.uniformInt(below: members.count)
            return KCenterPolicy.greedy(candidates.embedding, dimension: candidates.embeddingDimension,
                                        members: members, count: k, first: first)
        }
        rng = generator
    }

    /// Up to `count` of `members` (row indices into `points`) in greedy farthest-first order,
    /// starting with `members[first]`. Ties go to the earliest member.
    public static func greedy(_ points: [Float], dimension d: Int, members: [Int], count: Int, first: Int) -> [Int] {
        let m = min(count, members.count)
        guard m > 0 else { return [] }
        var nearest = [Double](repeating: .infinity, count: members.count)
        var picks: [Int] = []
        picks.reserveCapacity(m)
        var next = first
        while true {
            let c = members[next]
            picks.append(c)
            nearest[next] = -1   // chosen
            if picks.count == m { break }
            var best = -1
            var bestDistance = -Double.infinity
            for (j, i) in members.enumerated() where nearest[j] >= 0 {
                var dist = 0.0
                for f in 0..<d {
                    let diff = Double(points[i &* d &+ f]) - Double(points[c &* d &+ f])
                    dist += diff * diff
                }
                if dist < nearest[j] { nearest[j] = dist }
                if nearest[j] > bestDistance {
                    bestDistance = nearest[j]
                    best = j
                }
            }
            next = best
        }
        return picks
    }
}
