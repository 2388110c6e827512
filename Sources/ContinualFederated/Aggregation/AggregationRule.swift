import ContinualCore

/// How the server combines the clients' updates of one round into one update.
///
/// Every rule is a pure function of the updates *in the order given* (the server orders them by
/// client id), accumulating in `Double` and rounding to `Float` once per coordinate, so the result
/// does not depend on threads or on how clients were split across MPI ranks.
///
/// - `mean`: FedAvg (McMahan et al. 2017), Σ nₖ Δₖ / Σ nₖ, weighted by each client's samples.
/// - `uniformMean`: the unweighted mean (what DP-FedAvg sums before noise; McMahan et al. 2018
///   weight clients equally so one client's influence is bounded by the clipping norm alone).
/// - `median`: coordinate-wise median (Yin et al. 2018); with an even count the mean of the two
///   middle values. Unweighted: a robust rule must not let a client buy influence with a large
///   sample count.
/// - `trimmedMean(fraction:)`: coordinate-wise β-trimmed mean (Yin et al. 2018): per coordinate,
///   drop the ⌊β·n⌋ largest and ⌊β·n⌋ smallest values and average the rest; needs ⌊β·n⌋ < n/2.
/// - `krum(byzantine:selected:)`: Krum (Blanchard et al. 2017). Each update's score is the sum of
///   squared distances to its n − f − 2 nearest other updates; Krum returns the update with the
///   lowest score (ties: the lower index), Multi-Krum (`selected` m > 1) the unweighted mean of
///   the m lowest-scoring. Needs n > 2f + 2, the paper's condition.
/// - `bulyan(byzantine:)`: Bulyan (El Mhamdi et al. 2018) over Krum. Selection: θ = n − 2f
///   updates, chosen one at a time by Krum among those not yet chosen (each Krum score over the
///   remaining set R sums the max(0, |R| − f − 2) nearest, so the last picks stay defined);
///   then per coordinate the mean of the β = θ − 2f selected values closest to the selected
///   values' median (ties: the lower value first). Needs n ≥ 4f + 3, the paper's condition.
/// - `normalized`: FedNova (Wang et al. 2020), the normalised average for clients that ran
///   different numbers of local steps: with pᵢ = nᵢ / Σn and aᵢ = `ClientUpdate.steps`,
///   Δ = (Σ pᵢ aᵢ) · Σ pᵢ Δᵢ / aᵢ. With equal aᵢ it is FedAvg; a client that ran more steps no
///   longer pulls the model further towards its own optimum (the objective inconsistency the
///   paper removes). Updates with aᵢ = 0 (no step) are left out.
/// - `qFair(q:lipschitz:)`: q-FedAvg (Li et al. 2020, "Fair Resource Allocation in Federated
///   Learning", Algorithm 2). With Fₖ = `ClientUpdate.loss` (the client's loss at the global
///   model, before its local round), L the Lipschitz estimate and Δwₖ = L·(w − w̄ₖ) = −L·δₖ:
///   Δₖ = Fₖ^q·Δwₖ, hₖ = q·Fₖ^(q−1)·‖Δwₖ‖² + L·Fₖ^q, and the new model w − ΣΔₖ/Σhₖ, i.e. the
///   update Σₖ Fₖ^q·L·δₖ / Σₖ hₖ. Clients with larger loss weigh more (q → ∞: the worst
///   client). As in the paper (and Flower's `QFedAvg`), clients are averaged without sample
///   weights, so q = 0 is the *unweighted* FedAvg (`uniformMean`), to rounding; Fₖ gets 1e-10
///   added (Flower's guard) so Fₖ^(q−1) stays finite at a zero loss.
public enum AggregationRule: Sendable, Equatable, Hashable {
    case mean
    case uniformMean
    case median
    case trimmedMean(fraction: Double)
    case krum(byzantine: Int, selected: Int = 1)
    case bulyan(byzantine: Int)
    case normalized
    case qFair(q: Double, lipschitz: Double)

    /// The rule's name as written in results and in the experiment JSON.
    public var name: String {
        switch self {
        case .mean: return "fedavg"
        case .uniformMean: return "uniform_mean"
        case .median: return "median"
        case .trimmedMean: return "trimmed_mean"
        case .krum(_, let m): return m == 1 ? "krum" : "multi_krum"
        case .bulyan: return "bulyan"
        case .normalized: return "fednova"
        case .qFair: return "qfedavg"
        }
    }

    /// Combines `updates` into one update of the same length.
    ///
    /// Throws `AggregationError` for an empty set, mismatched lengths, a NaN/∞ entry, negative
    /// sample counts, zero total weight (`mean`), or too few clients for the rule.
    public func aggregate(_ updates: [ClientUpdate]) throws(AggregationError) -> [Float] {
        try Self.check(updates)
        switch self {
        case .mean: return try Self.weightedMean(updates)
        case .uniformMean: return Self.mean(of: updates, indices: Array(updates.indices))
        case .median: return Self.coordinateWise(updates) { Self.median(sorted: $0[...]) }
        case .trimmedMean(let beta):
            let n = updates.count
            guard beta >= 0, beta < 0.5 else {
                throw .invalidRule("trimmed_mean fraction must be in [0, 0.5), got \(beta)")
            }
            let k = Int((beta * Double(n)).rounded(.down))
            guard 2 * k < n else { throw .tooFewClients(rule: "trimmed_mean(fraction: \(beta))", clients: n, needed: 2 * k + 1) }
            return Self.coordinateWise(updates) { sorted in
                var s = 0.0
                for v in sorted[k..<(n - k)] { s += Double(v) }
                return s / Double(n - 2 * k)
            }
        case let .krum(f, m):
            let n = updates.count
            guard f >= 0, m >= 1 else {
                throw .invalidRule("krum needs byzantine ≥ 0 and selected ≥ 1, got \(f) and \(m)")
            }
            guard n > 2 * f + 2, m <= n - f else {
                throw .tooFewClients(rule: "krum(byzantine: \(f), selected: \(m))", clients: n, needed: max(2 * f + 3, m + f))
            }
            let scores = Self.krumScores(updates, byzantine: f)
            let order = scores.indices.sorted { (scores[$0], $0) < (scores[$1], $1) }
            return Self.mean(of: updates, indices: Array(order.prefix(m)).sorted())
        case .bulyan(let f):
            let n = updates.count
            guard f >= 0 else { throw .invalidRule("bulyan needs byzantine ≥ 0, got \(f)") }
            guard n >= 4 * f + 3 else {
                throw .tooFewClients(rule: "bulyan(byzantine: \(f))", clients: n, needed: 4 * f + 3)
            }
            return Self.bulyanMean(updates, selected: Self.bulyanSelection(updates, byzantine: f), byzantine: f)
        case .normalized:
            return try Self.normalizedMean(updates)
        case let .qFair(q, lipschitz):
            guard q >= 0, q.isFinite, lipschitz > 0, lipschitz.isFinite else {
                throw .invalidRule("qfedavg needs q ≥ 0 and a Lipschitz estimate L > 0, got q = \(q), L = \(lipschitz)")
            }
            if let c = updates.firstIndex(where: { !($0.loss >= 0 && $0.loss.isFinite) }) {
                throw .invalidRule("qfedavg needs each client's loss ≥ 0 and finite; client \(c) reports \(updates[c].loss)")
            }
            return Self.qFairMean(updates, q: q, lipschitz: lipschitz)
        }
    }

    /// Bulyan's second stage: per coordinate, the mean of the β = θ − 2f `selected` values
    /// closest to their median (ties: the lower value first).
    private static func bulyanMean(_ updates: [ClientUpdate], selected: [Int], byzantine f: Int) -> [Float] {
        let beta = selected.count - 2 * f
        let d = updates[0].delta.count
        var out = [Float](repeating: 0, count: d)
        var column = [Float](repeating: 0, count: selected.count)
        for j in 0..<d {
            for (k, i) in selected.enumerated() { column[k] = updates[i].delta[j] }
            column.sort()
            let med = Self.median(sorted: column[...])
            let closest = column.sorted { (abs(Double($0) - med), $0) < (abs(Double($1) - med), $1) }
            var s = 0.0
            for v in closest.prefix(beta) { s += Double(v) }
            out[j] = Float(s / Double(beta))
        }
        return out
    }

    /// FedNova: (Σ pᵢ aᵢ) · Σ pᵢ Δᵢ / aᵢ over the updates with at least one local step.
    private static func normalizedMean(_ updates: [ClientUpdate]) throws(AggregationError) -> [Float] {
        let used = updates.indices.filter { updates[$0].steps > 0 }
        guard !used.isEmpty else { throw .tooFewClients(rule: "fednova (updates with ≥ 1 local step)", clients: 0, needed: 1) }
        let total = used.reduce(0.0) { $0 + Double(updates[$1].samples) }
        guard total > 0 else { throw .zeroTotalWeight }
        var tauEff = 0.0
        var acc = [Double](repeating: 0, count: updates[0].delta.count)
        for i in used {
            let p = Double(updates[i].samples) / total, a = updates[i].steps
            tauEff += p * a
            for (j, v) in updates[i].delta.enumerated() { acc[j] += p * Double(v) / a }
        }
        return acc.map { Float(tauEff * $0) }
    }

    /// q-FedAvg's update Σₖ Fₖ^q·L·δₖ / Σₖ hₖ (the rule's checks done).
    private static func qFairMean(_ updates: [ClientUpdate], q: Double, lipschitz: Double) -> [Float] {
        var acc = [Double](repeating: 0, count: updates[0].delta.count)
        var h = 0.0
        for u in updates {
            let f = u.loss + 1e-10
            let fq = _exp(q * _log(f))   // f^q (f > 0); exactly 1 at q = 0
            let norm = u.l2Norm * lipschitz
            h += q * (fq / f) * norm * norm + lipschitz * fq
            let w = fq * lipschitz
            for (j, v) in u.delta.enumerated() { acc[j] += w * Double(v) }
        }
        return acc.map { Float($0 / h) }
    }

    /// Bulyan's selection: the indices (in the order picked) of θ = n − 2f updates, each the
    /// Krum choice among the updates not yet picked.
    public static func bulyanSelection(_ updates: [ClientUpdate], byzantine f: Int) -> [Int] {
        var remaining = Array(updates.indices)
        var picked: [Int] = []
        while picked.count < updates.count - 2 * f {
            let subset = remaining.map { updates[$0] }
            let scores = krumScores(subset, byzantine: f)
            let best = scores.indices.min { (scores[$0], $0) < (scores[$1], $1) }!
            picked.append(remaining.remove(at: best))
        }
        return picked
    }

    /// Krum's score of every update: Σ of squared L2 distances to its n − f − 2 nearest others.
    public static func krumScores(_ updates: [ClientUpdate], byzantine f: Int) -> [Double] {
        let n = updates.count
        var dist = [Double](repeating: 0, count: n * n)
        for i in 0..<n {
            for j in (i + 1)..<max(i + 1, n) {
                var s = 0.0
                let a = updates[i].delta, b = updates[j].delta
                for k in a.indices { let d = Double(a[k]) - Double(b[k]); s += d * d }
                dist[i * n + j] = s
                dist[j * n + i] = s
            }
        }
        let neighbours = max(0, n - f - 2)
        return (0..<n).map { i in
            var others = (0..<n).filter { $0 != i }.map { dist[i * n + $0] }
            others.sort()
            return others.prefix(neighbours).reduce(0, +)
        }
    }

    // MARK: - Implementation

    private static func check(_ updates: [ClientUpdate]) throws(AggregationError) {
        try checkDeltas(updates)
        for (c, u) in updates.enumerated() where u.samples < 0 { throw .negativeSamples(client: c, samples: u.samples) }
    }

    /// The checks every server step needs: at least one update, equal lengths, finite entries
    /// (the first problem in client order is reported).
    static func checkDeltas(_ updates: [ClientUpdate]) throws(AggregationError) {
        guard let first = updates.first else { throw .empty }
        for (c, u) in updates.enumerated() {
            guard u.delta.count == first.delta.count else {
                throw .lengthMismatch(client: c, count: u.delta.count, expected: first.delta.count)
            }
            if let j = u.delta.firstIndex(where: { !$0.isFinite }) { throw .nonFinite(client: c, coordinate: j) }
        }
    }

    private static func weightedMean(_ updates: [ClientUpdate]) throws(AggregationError) -> [Float] {
        let total = updates.reduce(0.0) { $0 + Double($1.samples) }
        guard total > 0 else { throw .zeroTotalWeight }
        var acc = [Double](repeating: 0, count: updates[0].delta.count)
        for u in updates {
            let w = Double(u.samples)
            for (j, v) in u.delta.enumerated() { acc[j] += w * Double(v) }
        }
        return acc.map { Float($0 / total) }
    }

    private static func mean(of updates: [ClientUpdate], indices: [Int]) -> [Float] {
        var acc = [Double](repeating: 0, count: updates[0].delta.count)
        for i in indices {
            for (j, v) in updates[i].delta.enumerated() { acc[j] += Double(v) }
        }
        let n = Double(indices.count)
        return acc.map { Float($0 / n) }
    }

    /// Applies `reduce` to each coordinate's values, sorted ascending.
    private static func coordinateWise(_ updates: [ClientUpdate], _ reduce: ([Float]) -> Double) -> [Float] {
        let d = updates[0].delta.count
        var column = [Float](repeating: 0, count: updates.count)
        var out = [Float](repeating: 0, count: d)
        for j in 0..<d {
            for (i, u) in updates.enumerated() { column[i] = u.delta[j] }
            column.sort()
            out[j] = Float(reduce(column))
        }
        return out
    }

    static func median(sorted v: ArraySlice<Float>) -> Double {
        let n = v.count, lo = v.startIndex
        return n % 2 == 1 ? Double(v[lo + n / 2]) : (Double(v[lo + n / 2 - 1]) + Double(v[lo + n / 2])) / 2
    }
}
