import ContinualCore

/// `"population"`: run the experiment for N simulated users, one model per user (the on-device
/// setting where every phone owns its model), and report metrics per user and aggregated.
///
/// Each user's behaviour parameters are drawn around the scenario's configured ones
/// (`PopulationScenario.user`, deviations scaled by `spread`), with their own data seed and
/// model seed, all derived from `seed` (default: the run's seed) and the user index, so results
/// do not depend on `jobs` or on the order users finish in.
public struct PopulationConfig: Codable, Sendable, Equatable {
    public var users: Int
    public var spread = 1.0
    public var seed: UInt64?
    /// Quantile levels of the aggregate (in 0…1).
    public var quantiles: [Double] = [0.05, 0.25, 0.5, 0.75, 0.95]
    /// Parallel workers; 0 = one per core.
    public var jobs = 0
    /// Also store every user's T×T accuracy matrix.
    public var storeMatrices = true
    /// Also store every user's final model (`population/final_parameters`, users × parameters),
    /// so `continual export --user NAME` can export one person's model.
    public var keepModels = true

    public init(users: Int) { self.users = users }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case users, spread, seed, quantiles, jobs, storeMatrices = "store_matrices", keepModels = "keep_models"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        users = try c.decode(Int.self, forKey: .users)
        spread = try c.decode(.spread, default: 1.0)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        quantiles = try c.decode(.quantiles, default: [0.05, 0.25, 0.5, 0.75, 0.95])
        jobs = try c.decode(.jobs, default: 0)
        storeMatrices = try c.decode(.storeMatrices, default: true)
        keepModels = try c.decode(.keepModels, default: true)
        // No upper bound here: the resource estimate refuses populations too large for the
        // machine, with the memory and work they would need (see Preflight).
        try c.require(users >= 1, .users, "must be ≥ 1, got \(users)")
        try c.require(spread >= 0 && spread <= 10, .spread, "must be in 0...10, got \(spread)")
        try c.require(quantiles.allSatisfy { (0...1).contains($0) }, .quantiles, "levels must be in 0...1, got \(quantiles)")
        try c.require(jobs >= 0, .jobs, "must be ≥ 0 (0 = all cores), got \(jobs)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(users, forKey: .users)
        try c.encode(spread, forKey: .spread)
        try c.encodeIfPresent(seed, forKey: .seed)
        try c.encode(quantiles, forKey: .quantiles)
        // jobs does not change the numbers: not part of the resolved config (nor the run id).
        try c.encode(storeMatrices, forKey: .storeMatrices)
        // Stored models change no number: written only when off, so the run ids of populations
        // written before the key existed stay the same.
        if !keepModels { try c.encode(keepModels, forKey: .keepModels) }
    }
}
