/// Which samples a loss-based defence drops: the `count` largest losses, ties broken by the lower
/// index first (so the choice is deterministic), returned in ascending index order.
public enum LossRanking {
    public static func largest(_ count: Int, of losses: [Double]) -> [Int] {
        guard count > 0 else { return [] }
        let order = losses.indices.sorted { a, b in
            // NaN losses rank highest: a sample the model cannot score is the first to drop.
            let la = losses[a].isNaN ? .infinity : losses[a], lb = losses[b].isNaN ? .infinity : losses[b]
            return la != lb ? la > lb : a < b
        }
        return Array(order.prefix(count)).sorted()
    }

    /// ⌊q·n⌋: how many of n samples a fraction q drops (never all of them unless q = 1).
    public static func dropCount(_ q: Double, of n: Int) -> Int {
        min(n, Int((q * Double(n)).rounded(.down)))
    }

    /// The one key both loss-based defences take: `fraction` (default 0.1), in 0..<1 so some
    /// samples always train. `unit` names what the fraction is of, for the error message.
    static func decodeFraction(from decoder: any Decoder, of unit: String) throws -> Double {
        let c = try decoder.strictContainer(keyedBy: FractionKey.self, alsoAllowed: ["type"])
        let fraction = try c.decode(.fraction, default: 0.1)
        try c.require(fraction >= 0 && fraction < 1, .fraction, "must be in 0..<1 (the fraction of \(unit) dropped), got \(fraction)")
        return fraction
    }

    static func encode(fraction: Double, to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: FractionKey.self)
        try c.encode(fraction, forKey: .fraction)
    }

    enum FractionKey: String, CodingKey, CaseIterable { case fraction }
}
