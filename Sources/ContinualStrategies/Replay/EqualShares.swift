/// Splits a capacity into equal shares over groups that may hold fewer items than their share
/// (water-filling: small groups keep everything, the rest is split evenly among the others).
public enum EqualShares {
    /// Shares for groups with `available` items each; Σ shares = min(total, Σ available), every
    /// share ≤ its availability, and uncapped shares differ by at most one (earlier groups get the
    /// remainder first).
    public static func split(_ total: Int, available: [Int]) -> [Int] {
        var shares = [Int](repeating: 0, count: available.count)
        let order = available.indices.sorted { (available[$0], $0) < (available[$1], $1) }
        var remaining = max(total, 0)
        for (position, g) in order.enumerated() {
            let left = order.count - position
            let level = remaining / left
            if available[g] <= level {
                shares[g] = available[g]
                remaining -= available[g]
                continue
            }
            // Every group from here on has more than `level` items: split evenly.
            let rest = order[position...].sorted()
            var extra = remaining - level * left
            for h in rest {
                shares[h] = level + (extra > 0 ? 1 : 0)
                if extra > 0 { extra -= 1 }
            }
            break
        }
        return shares
    }
}
