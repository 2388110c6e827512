import ContinualCore

/// `"federation.partition"`: the clients are a split of the scenario's labelled stream (split
/// digits, an imported HDF5/CSV dataset, any scenario) instead of a population generator's users.
/// Client i's stream has the scenario's experiences, each holding client i's share of that
/// experience's training and test samples; its test share follows the same label proportions as
/// its training share (personal accuracy is measured on the client's own distribution).
///
/// - `"dirichlet"` (label-distribution skew; Hsu et al. 2019, the split of NIID-Bench, Li et al.
///   2022): for every label c, proportions p_c ~ Dir(α, …, α) over the N clients; each
///   experience's samples of label c (train and test separately, each shuffled) go to the clients
///   in consecutive blocks of sizes ⌊cumulative p_c · n⌋. Small α: each client sees few labels;
///   α → ∞: IID. Client sizes are drawn with the proportions.
/// - `"classes"` (pathological non-IID, McMahan et al. 2017): each client holds
///   `classes_per_client` distinct labels (a seeded draw); each label's samples are split evenly
///   among the clients holding it; samples of a label no client holds are not used.
///
/// A draw is accepted only if every client has at least one training sample and `min_test` test
/// samples in every experience (the accuracy matrix needs them); otherwise it is redrawn from the
/// next stream of the partition seed, up to 1,000 times, then the run is refused, naming the
/// option to change. The partition depends only on `seed` (default: the run's seed) and the
/// stream, never on threads or ranks; the per-client, per-label and per-experience counts are
/// written to the results (`federation/partition_*`).
public struct PartitionConfig: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, CaseIterable, Sendable { case dirichlet, classes }
    public var type: Kind
    /// Dirichlet concentration α > 0.
    public var alpha = 0.5
    /// Labels per client of the `classes` split.
    public var classesPerClient = 2
    /// Fewest test samples a client needs in each experience.
    public var minTest = 1
    public var seed: UInt64?

    public init(type: Kind) { self.type = type }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case type, alpha, classesPerClient = "classes_per_client", minTest = "min_test", seed
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        type = try c.decodeChoice(.type, default: .dirichlet)
        alpha = try c.decode(.alpha, default: 0.5)
        classesPerClient = try c.decode(.classesPerClient, default: 2)
        minTest = try c.decode(.minTest, default: 1)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        try c.require(alpha > 0 && alpha.isFinite && alpha <= 1e6, .alpha, "must be in (0, 1e6], got \(alpha)")
        try c.require(!c.contains(.alpha) || type == .dirichlet, .alpha, "only with \"type\": \"dirichlet\"")
        try c.require(!c.contains(.classesPerClient) || type == .classes, .classesPerClient, "only with \"type\": \"classes\"")
        try c.require(classesPerClient >= 1, .classesPerClient, "must be ≥ 1, got \(classesPerClient)")
        try c.require(minTest >= 1, .minTest, "must be ≥ 1 (every client's accuracy needs a test sample), got \(minTest)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        if type == .dirichlet { try c.encode(alpha, forKey: .alpha) }
        if type == .classes { try c.encode(classesPerClient, forKey: .classesPerClient) }
        try c.encode(minTest, forKey: .minTest)
        try c.encodeIfPresent(seed, forKey: .seed)
    }
}
