import ContinualCore

/// The end-of-experience bookkeeping shared by core-set policies: equal shares over all groups,
/// shrinking old groups to the prefix of their selection order, and filling new groups.
///
/// A group's priorities are its selection ranks 0, 1, 2, …; herding and greedy k-center both
/// produce orders whose every prefix is itself the method's selection of that size, so
/// shrinking a group keeps exactly what the method would have picked with the smaller share
/// (iCaRL's "reduce exemplar set").
public enum CoresetRebalancer {
    /// Rebalances `memory` for the new groups in `candidates`; `rank(members, k)` returns up to k
    /// member indices (into `candidates`) in selection order.
    public static func update(memory: inout ReplayMemory, candidates: SelectionCandidates, byClass: Bool,
                              rank: (_ members: [Int], _ k: Int) -> [Int]) {
        var newMembers: [CoresetGroup: [Int]] = [:]
        for i in 0..<candidates.count {
            let key = CoresetGroup(experience: candidates.origins[i].experience,
                                   label: byClass ? candidates.samples.labels[i] : -1)
            newMembers[key, default: []].append(i)
        }
        var existing: [CoresetGroup: Int] = [:]
        for s in 0..<memory.count { existing[group(of: s, in: memory, byClass: byClass), default: 0] += 1 }
        // A group that already exists (the same experience selected twice) is replaced.
        for key in newMembers.keys { existing[key] = nil }

        let keys = (Array(existing.keys) + Array(newMembers.keys)).sorted()
        let available = keys.map { existing[$0] ?? newMembers[$0]!.count }
        let shares = EqualShares.split(memory.capacity, available: available)
        var share: [CoresetGroup: Int] = [:]
        for (k, s) in zip(keys, shares) { share[k] = s }

        let snapshot = memory
        memory.retain { slot in
            let key = group(of: slot, in: snapshot, byClass: byClass)
            return existing[key] != nil && snapshot.priorities[slot] < share[key]!
        }
        for key in keys where newMembers[key] != nil {
            let picks = rank(newMembers[key]!, share[key]!)
            for (r, i) in picks.enumerated() {
                memory.append(features: candidates.samples.row(i), label: candidates.samples.labels[i],
                              route: candidates.routes[i], origin: candidates.origins[i], priority: r)
            }
        }
    }

    static func group(of slot: Int, in memory: ReplayMemory, byClass: Bool) -> CoresetGroup {
        CoresetGroup(experience: memory.origins[slot].experience, label: byClass ? memory.labels[slot] : -1)
    }
}
