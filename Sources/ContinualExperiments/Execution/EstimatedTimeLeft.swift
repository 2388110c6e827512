/// The time left in a sweep, weighted by each remaining run's expected cost (`RunCostEstimate`)
/// and corrected by what the finished runs took.
///
/// After each finished run i, its seconds per unit of estimated cost, rᵢ = wallᵢ / costᵢ, is
/// recorded under its family. A remaining run j is predicted to take costⱼ × r̃, r̃ being the
/// median r of its family (strategy overheads that the analytic estimate leaves out), or of all
/// finished runs while its family has none. The runs in flight share the machine, so the sum of
/// the predictions is divided by the parallelism observed so far, Σ wallᵢ / elapsed, clamped to
/// [1, jobs]; and the answer is never less than the longest single remaining prediction (the
/// tail of a sweep runs on fewer cores). Runs in flight are counted as not started (a slight
/// overestimate early in a run, none at its end).
public struct EstimatedTimeLeft: Sendable {
    public var costs: [Double]
    public var families: [String]
    public var jobs: Int
    private var remaining: Set<Int>
    private var ratios: [String: [Double]] = [:]
    private var allRatios: [Double] = []
    private var wallSum = 0.0

    /// `costs` and `families` per run still to do (e.g. from `RunCostEstimate`).
    public init(costs: [Double], families: [String], jobs: Int) {
        precondition(costs.count == families.count)
        self.costs = costs
        self.families = families
        self.jobs = max(1, jobs)
        remaining = Set(costs.indices)
    }

    /// Records that run `index` finished after `wallSeconds`.
    public mutating func finished(_ index: Int, wallSeconds: Double) {
        guard remaining.remove(index) != nil else { return }
        let wall = wallSeconds.isFinite ? max(0, wallSeconds) : 0
        let r = wall / max(costs[index], .leastNormalMagnitude)
        ratios[families[index], default: []].append(r)
        allRatios.append(r)
        wallSum += wall
    }

    /// Seconds left, given the sweep's `elapsedSeconds` so far; NaN before any run finished.
    public func secondsLeft(elapsedSeconds: Double) -> Double {
        guard !allRatios.isEmpty else { return .nan }
        if remaining.isEmpty { return 0 }
        let fallback = Self.median(allRatios)
        var medians: [String: Double] = [:]
        var total = 0.0, longest = 0.0
        for j in remaining {
            let family = families[j]
            let r: Double
            if let m = medians[family] { r = m } else if let rs = ratios[family] {
                r = Self.median(rs); medians[family] = r
            } else { r = fallback }
            let t = costs[j] * r
            total += t
            longest = max(longest, t)
        }
        let parallel = elapsedSeconds > 0 ? min(Double(jobs), max(1, wallSum / elapsedSeconds)) : 1
        return max(total / parallel, longest)
    }

    static func median(_ xs: [Double]) -> Double {
        let s = xs.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }
}
