import ContinualCore

/// `"few_shot"`: meta-learn an initialisation over a population's training users, then measure how
/// well k plain SGD steps on a *held-out* user's first samples personalise it (issue 32 item 4;
/// docs/few-shot.md). Needs `"population"`: users `0 ..< users − held_out_users` are the training
/// users, the last `held_out_users` are never seen in meta-training.
///
/// A task is one user in one experience (a phase of their behaviour). `method` says where the
/// held-out users start from:
/// - `reptile` / `fomaml`: `meta_steps` outer steps, each over `meta_batch` tasks drawn uniformly
///   (training user, then experience); the inner loop takes `inner_steps` full-batch SGD steps of
///   `inner_lr` on the task's `support` samples, FOMAML's outer gradient is taken on `query` other
///   samples of the same task (see `MetaInitialisation`). Reptile ignores the query samples, but
///   both draw them, so the two methods see the same task sequence for the same seed.
/// - `fedavg`: as many rounds of `meta_batch` training users each, `inner_steps` local SGD steps of
///   `inner_lr` on mini-batches of `support` samples drawn from the user's whole training data,
///   then the plain average (server rate 1, equal weights): the same gradient rows as Reptile.
/// - `scratch`: the run's initial model (its seed's initialisation, or `model.init_from`).
///
/// Evaluation: for every held-out user and experience, the first `support` training samples (the
/// user's first events of that phase) personalise the initialisation with k full-batch SGD steps
/// of `adapt_lr` for every k in `k`; accuracy is measured on that experience's test set.
public struct FewShotConfig: Codable, Sendable, Equatable {
    public enum Method: String, Codable, CaseIterable, Sendable {
        case reptile, fomaml, fedavg, scratch
    }

    public var method: Method
    public var heldOutUsers: Int
    public var metaSteps = 200
    public var metaBatch = 5
    public var innerSteps = 5
    public var innerLR = 0.05
    /// Reptile's ε or FOMAML's β (unused by fedavg and scratch).
    public var outerLR = 1.0
    public var support = 10
    public var query = 10
    public var k: [Int] = [0, 1, 5, 20]
    /// The held-out users' personalisation rate (default: `inner_lr`).
    public var adaptLR: Double

    public init(method: Method, heldOutUsers: Int) {
        self.method = method
        self.heldOutUsers = heldOutUsers
        adaptLR = innerLR
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case method, heldOutUsers = "held_out_users", metaSteps = "meta_steps", metaBatch = "meta_batch"
        case innerSteps = "inner_steps", innerLR = "inner_lr", outerLR = "outer_lr", support, query, k
        case adaptLR = "adapt_lr"
    }

    /// Largest accepted k, support, query, inner steps and meta batch; meta steps up to 10⁶.
    static let maximumSmall = 10_000

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        guard c.contains(.method) else {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath + [CodingKeys.method],
                debugDescription: "required key is missing; allowed values: \(Method.allCases.map(\.rawValue).joined(separator: ", "))"))
        }
        method = try c.decodeChoice(.method, default: .scratch)
        heldOutUsers = try c.decode(Int.self, forKey: .heldOutUsers)
        metaSteps = try c.decode(.metaSteps, default: 200)
        metaBatch = try c.decode(.metaBatch, default: 5)
        innerSteps = try c.decode(.innerSteps, default: 5)
        innerLR = try c.decode(.innerLR, default: 0.05)
        outerLR = try c.decode(.outerLR, default: 1.0)
        support = try c.decode(.support, default: 10)
        query = try c.decode(.query, default: 10)
        k = try c.decode(.k, default: [0, 1, 5, 20])
        adaptLR = try c.decode(.adaptLR, default: innerLR)
        try c.require(heldOutUsers >= 1, .heldOutUsers, "must be ≥ 1, got \(heldOutUsers)")
        try c.require((0...1_000_000).contains(metaSteps), .metaSteps, "must be in 0...1000000, got \(metaSteps)")
        try c.require((1...Self.maximumSmall).contains(metaBatch), .metaBatch, "must be in 1...\(Self.maximumSmall), got \(metaBatch)")
        try c.require((1...Self.maximumSmall).contains(innerSteps), .innerSteps, "must be in 1...\(Self.maximumSmall), got \(innerSteps)")
        try c.require((1...Self.maximumSmall).contains(support), .support, "must be in 1...\(Self.maximumSmall), got \(support)")
        try c.require((1...Self.maximumSmall).contains(query), .query, "must be in 1...\(Self.maximumSmall), got \(query)")
        for (key, v) in [(CodingKeys.innerLR, innerLR), (.outerLR, outerLR), (.adaptLR, adaptLR)] {
            try c.require(v.isFinite && v >= 0 && v <= 100, key, "must be a finite rate in 0...100, got \(v)")
        }
        try c.require(!k.isEmpty, .k, "needs at least one step count, e.g. [0, 1, 5, 20]")
        try c.require(k.allSatisfy { (0...Self.maximumSmall).contains($0) }, .k, "step counts must be in 0...\(Self.maximumSmall), got \(k)")
        try c.require(zip(k, k.dropFirst()).allSatisfy { $0 < $1 }, .k, "step counts must be strictly increasing, got \(k)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(method.rawValue, forKey: .method)
        try c.encode(heldOutUsers, forKey: .heldOutUsers)
        try c.encode(metaSteps, forKey: .metaSteps)
        try c.encode(metaBatch, forKey: .metaBatch)
        try c.encode(innerSteps, forKey: .innerSteps)
        try c.encode(innerLR, forKey: .innerLR)
        try c.encode(outerLR, forKey: .outerLR)
        try c.encode(support, forKey: .support)
        try c.encode(query, forKey: .query)
        try c.encode(k, forKey: .k)
        try c.encode(adaptLR, forKey: .adaptLR)
    }
}
