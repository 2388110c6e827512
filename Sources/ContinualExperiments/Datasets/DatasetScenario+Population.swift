import ContinualCore
import ContinualScenarios

/// A data file with a `user_column` is a population of its users: member i is the i-th user
/// taking part, with the user's own rows (the same results layout and population metrics as the
/// generators'). `spread` does not apply: real people differ as they do.
extension DatasetScenario: PopulationScenario {
    public func populationProblem() -> (key: String, message: String)? {
        guard userColumn == nil else {
            return user == nil ? nil : ("user", "a population runs every user taking part; \"user\" picks one, so leave it out")
        }
        return ("user_column", "a population from a data file needs \"user_column\": the column (CSV) or per-split "
            + "dataset (HDF5) naming each row's user")
    }

    /// Members: every user taking part when `users` equals their number; fewer: a sample of that
    /// many drawn without replacement from `seed` (stream "population.sample"), kept in file
    /// order; more: an error naming `.population.users`. With `equalise_users`, every member's
    /// experiences are truncated to the smallest member's train and test sizes.
    public func forPopulation(users count: Int, seed: UInt64) throws -> DatasetScenario {
        guard userColumn != nil else { return self }
        var all = self
        all.user = nil
        let (stream, keys) = try all.readFile()
        let taking = try participants(keys)
        guard count <= taking.count else {
            throw ScenarioError(".population.users: \(count) users asked for, but \(path) has \(taking.count) users taking part "
                + "(\(Self.preview(taking))); use at most \(taking.count)")
        }
        var o = self
        if count == taking.count {
            o.members = taking
        } else {
            var rng = RandomSource(seed: seed, stream: "population.sample")
            var positions = Array(taking.indices)
            rng.shuffle(&positions)
            o.members = positions.prefix(count).sorted().map { taking[$0] }
        }
        if equaliseUsers {
            var caps = stream.experiences.map { _ in SplitCap(train: .max, test: .max) }
            for member in o.members {
                var one = all
                one.user = member
                let s = try one.selectRows(stream, keys: keys)
                for (i, e) in s.experiences.enumerated() {
                    caps[i].train = min(caps[i].train, e.train.count)
                    caps[i].test = min(caps[i].test, e.test.count)
                }
            }
            o.caps = caps
        }
        return o
    }

    public func user(_ index: Int, spread: Double, rng: inout RandomSource) -> DatasetScenario {
        guard userColumn != nil else { return self }
        var o = self
        // Without `forPopulation` there are no members: the run fails naming why, never pools everyone.
        o.user = members.indices.contains(index) ? members[index] : "(member \(index): forPopulation was not called)"
        return o
    }

    /// The population's member ids (after `forPopulation`).
    public var memberIds: [String] { members }
}
