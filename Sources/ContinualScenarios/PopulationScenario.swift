import ContinualCore

/// A generator that can simulate many different users: `user(_:spread:rng:)` returns the
/// options of one user, whose behaviour parameters are drawn from the population distribution
/// around the configured ones (`spread` scales every deviation; 0 = identical users with their
/// own random days). Each user also gets their own data seed.
public protocol PopulationScenario: ScenarioOptions {
    func user(_ index: Int, spread: Double, rng: inout RandomSource) -> Self
    /// Why these options cannot run as a population of several users (the option key and the
    /// reason), or nil: every user must get the same number of experiences.
    func populationProblem() -> (key: String, message: String)?
    /// The options ready to give a population of `users` members from `seed` (a data file reads
    /// its users and picks them here; generators need nothing). Throws when the population cannot
    /// be formed, e.g. more members than the file has users.
    func forPopulation(users: Int, seed: UInt64) throws -> Self
}

extension PopulationScenario {
    public func populationProblem() -> (key: String, message: String)? { nil }
    public func forPopulation(users: Int, seed: UInt64) throws -> Self { self }
}

extension ParameterConcept {
    /// The same per-user deviations applied to every phase: a user's traits persist through the
    /// phases. Each parameter moves by spread·N(0,1)·max(10% of its size, 0.2), clamped to its range.
    static func perturbed(_ phases: [ParameterConcept], spread: Double, rng: inout RandomSource) -> [ParameterConcept] {
        var offsets: [Schema.Key: Double] = [:]
        for k in Schema.Key.allCases { offsets[k] = spread * rng.normal() }
        return phases.map { phase in
            var p = phase
            for k in Schema.Key.allCases {
                let v = phase[k]
                let range = Schema.ranges[k] ?? -1e6...1e6
                p[k] = min(max(v + offsets[k]! * max(0.1 * abs(v), 0.2), range.lowerBound), range.upperBound)
            }
            return p
        }
    }
}

/// The user's own data seed: independent of every other user's.
func userSeed(_ index: Int, rng: inout RandomSource) -> UInt64 {
    var child = rng.derived("user.\(index)")
    return child.next()
}

extension HabitDriftScenario: PopulationScenario {
    /// Per user: activity and good hour shift together (±1.5 h·spread), weights scale by
    /// exp(0.3·spread·N), bias moves by 0.5·spread·N, rates by 0.1·spread·N (clamped to 0…1).
    public func user(_ index: Int, spread: Double, rng: inout RandomSource) -> HabitDriftScenario {
        var o = self
        o.seed = userSeed(index, rng: &rng)
        let shift = 1.5 * spread * rng.normal()
        var scale: [Double] = []
        for _ in 0..<7 { scale.append(_exp(0.3 * spread * rng.normal())) }
        let bias = 0.5 * spread * rng.normal()
        let rates = (0..<3).map { _ in 0.1 * spread * rng.normal() }
        let launch = _exp(0.3 * spread * rng.normal())
        func wrap(_ h: Double) -> Double { let r = h.truncatingRemainder(dividingBy: 24); return r < 0 ? r + 24 : r }
        func clamp(_ x: Double) -> Double { min(max(x, 0), 1) }
        o.phases = phases.map { p in
            var q = p
            q.activityHour = wrap(p.activityHour + shift)
            q.goodHour = wrap(p.goodHour + shift)
            q.hourWeight *= scale[0]
            q.streakWeight *= scale[1]
            q.rateWeight *= scale[2]
            q.reminderWeight *= scale[3]
            q.openedWeight *= scale[4]
            q.weekendWeight *= scale[5]
            q.launchWeight *= scale[6]
            q.bias += bias
            q.reminderRate = clamp(p.reminderRate + rates[0])
            q.openRate = clamp(p.openRate + rates[1])
            q.irregularDays = clamp(p.irregularDays + rates[2])
            q.launchRate *= launch
            return q
        }
        return o
    }
}

extension NotificationEngagementScenario: PopulationScenario {
    /// Reminders per day are random (Poisson, and per user), so calendar cuts give users
    /// different numbers of experiences, whose accuracy matrices cannot be averaged.
    public func populationProblem() -> (key: String, message: String)? {
        guard cut == .week || cut == .month else { return nil }
        return ("cut", "a population needs the same number of experiences for every user, but with \"cut\": "
            + "\"\(cut == .week ? "week" : "month")\" it depends on each user's random reminders per day; "
            + "use \"drift_points\" or a fixed number of samples per experience")
    }

    public func user(_ index: Int, spread: Double, rng: inout RandomSource) -> NotificationEngagementScenario {
        var o = self
        o.seed = userSeed(index, rng: &rng)
        o.phases = NotificationPhase.perturbed(phases, spread: spread, rng: &rng)
        return o
    }
}

extension AppUsageScenario: PopulationScenario {
    /// Besides the parameters, every user has their own taste profile (drawn from their seed).
    public func user(_ index: Int, spread: Double, rng: inout RandomSource) -> AppUsageScenario {
        var o = self
        o.seed = userSeed(index, rng: &rng)
        // The number of categories (the class-incremental schedule) is the same for everyone.
        o.phases = zip(AppUsagePhase.perturbed(phases, spread: spread, rng: &rng), phases).map { p, original in
            var q = p
            q[.categories] = original[.categories]
            return q
        }
        return o
    }
}

extension HealthBaselineScenario: PopulationScenario {
    /// Baseline and reference move together, so "anomalous" stays relative to the user's own normal.
    public func user(_ index: Int, spread: Double, rng: inout RandomSource) -> HealthBaselineScenario {
        var o = self
        o.seed = userSeed(index, rng: &rng)
        var moved = HealthPhase.perturbed(phases, spread: spread, rng: &rng)
        for i in moved.indices {
            moved[i][.referenceHR] = moved[i][.restingHR]
            moved[i][.referenceHRV] = moved[i][.hrv]
            moved[i][.referenceSteps] = moved[i][.steps]
            moved[i][.referenceResp] = moved[i][.respRate]
            moved[i][.threshold] = phases[i][.threshold]
        }
        o.phases = moved
        return o
    }
}
