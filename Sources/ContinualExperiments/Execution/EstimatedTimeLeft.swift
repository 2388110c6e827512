/// The time left in a sweep, weighted by each remaining run's expected cost (`RunCostEstimate`)
/// and calibrated on the runs already finished.
///
/// Model: a sweep's elapsed time is a per-run serial part (results writing, scheduling: the same
/// for every run) plus the runs' own work shared by the jobs in flight,
///   elapsed ≈ α · done + (1 / jobs) · Σ_done wallᵢ,
/// with wallᵢ each finished run's own time. α is solved from the sweep so far. A run's own time is
/// a fixed part (building its scenario, setting up; the mean of wall − compute so far) plus its
/// compute (training and evaluation seconds), predicted for a remaining run j as
/// costⱼ × rate(family j). The family's rate (it carries the strategy overheads the analytic
/// estimate leaves out) is its Σ compute / Σ cost shrunk towards the rate of all finished runs
/// by one typical run of the family (the median cost of its remaining runs):
///   rate_f = (Σ_f compute + W_f · rate_all) / (Σ_f cost + W_f),
/// so a family judged only on a few cheap runs, whose per-batch overheads exaggerate it, does not
/// decide the price of its expensive runs; once it has run work of its own size, its own rate wins. Keeping the fixed part out of the rate matters: cheap runs early in a sweep
/// are mostly fixed part, and charging it per unit of cost would inflate every expensive run
/// after them. The answer,
///   α · left + (1 / jobs) · Σ_left predicted wallⱼ,
/// is never less than the longest single prediction (the tail of a sweep runs on fewer cores).
/// Runs in flight count with the time they have run so far (`inFlight`): it is part of the jobs'
/// shared work in the model above, and it is taken off their own predictions. Without it, the
/// first runs of a sweep of long runs would charge the time the others had already run to α, and
/// the ETA would be up to twice the truth (a sweep of 15-minute runs on 2 jobs read 12 h 36 min
/// at its first run and 6 h 13 min at its second).
public struct EstimatedTimeLeft: Sendable {
    public var costs: [Double]
    public var families: [String]
    public var jobs: Int
    private var remaining: Set<Int>
    private var familyWall: [String: Double] = [:]
    private var familyCost: [String: Double] = [:]
    private var wallSum = 0.0
    private var fixedSum = 0.0
    private var computeSum = 0.0
    private var costSum = 0.0
    private var done = 0

    /// `costs` and `families` per run still to do (e.g. from `RunCostEstimate`).
    public init(costs: [Double], families: [String], jobs: Int) {
        precondition(costs.count == families.count)
        self.costs = costs
        self.families = families
        self.jobs = max(1, jobs)
        remaining = Set(costs.indices)
    }

    /// Records that run `index` finished after `wallSeconds` of its own time, `computeSeconds` of
    /// them training and evaluating (nil: all of it).
    public mutating func finished(_ index: Int, wallSeconds: Double, computeSeconds: Double? = nil) {
        guard remaining.remove(index) != nil else { return }
        let wall = wallSeconds.isFinite ? max(0, wallSeconds) : 0
        let compute = min(wall, computeSeconds.map { $0.isFinite ? max(0, $0) : wall } ?? wall)
        familyWall[families[index], default: 0] += compute
        familyCost[families[index], default: 0] += costs[index]
        wallSum += wall
        computeSum += compute
        fixedSum += wall - compute
        costSum += costs[index]
        done += 1
    }

    /// Seconds left, given the sweep's `elapsedSeconds` so far and `inFlight`, the seconds each
    /// run now running (by index) has run; NaN before any run finished.
    public func secondsLeft(elapsedSeconds: Double, inFlight: [Int: Double] = [:]) -> Double {
        guard done > 0 else { return .nan }
        if remaining.isEmpty { return 0 }
        let share = 1 / Double(jobs)
        let running = inFlight.filter { remaining.contains($0.key) }.mapValues { $0.isFinite ? max(0, $0) : 0 }
        let fallback = computeSum / max(costSum, .leastNormalMagnitude)
        let fixed = fixedSum / Double(done)
        var left: [String: [Double]] = [:]
        for j in remaining { left[families[j], default: []].append(costs[j]) }
        var rates: [String: Double] = [:]
        for (family, cs) in left {
            let typical = cs.sorted()[cs.count / 2]
            rates[family] = ((familyWall[family] ?? 0) + typical * fallback) / ((familyCost[family] ?? 0) + typical)
        }
        var work = 0.0, longest = 0.0
        for j in remaining {
            let rate = rates[families[j]] ?? fallback
            let t = max(0, fixed + costs[j] * rate - (running[j] ?? 0))
            work += t
            longest = max(longest, t)
        }
        let serial = max(0, (elapsedSeconds - share * (wallSum + running.values.reduce(0, +))) / Double(done))
        return max(serial * Double(remaining.count) + share * work, longest)
    }
}
