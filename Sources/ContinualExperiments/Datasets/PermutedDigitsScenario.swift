import ContinualCore

/// `"permuted_digits"`: every experience is the whole digits set with its 64 pixels shuffled by a
/// fixed, seeded permutation (the first experience unpermuted unless `permute_first`); labels
/// stay the digits (10-way, domain-incremental). The 8×8 analogue of permuted MNIST.
public struct PermutedDigitsScenario: ScenarioOptions {
    public static let typeName = "permuted_digits"
    public static let summary = "8x8 digits under a fixed seeded pixel permutation per experience (10-way)"

    public var path = DigitsData.defaultPath
    public var experiences = 5
    public var permuteFirst = false
    /// Seed of the permutations; nil = the run's seed.
    public var seed: UInt64?

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case path, experiences, permuteFirst = "permute_first", seed
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
        path = try c.decode(.path, default: DigitsData.defaultPath)
        experiences = try c.decode(.experiences, default: 5)
        permuteFirst = try c.decode(.permuteFirst, default: false)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        try c.require((1...1000).contains(experiences), .experiences, "must be in 1...1000, got \(experiences)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(experiences, forKey: .experiences)
        try c.encode(permuteFirst, forKey: .permuteFirst)
        try c.encodeIfPresent(seed, forKey: .seed)
    }

    /// Permutation of experience `e` (identity for e = 0 unless `permuteFirst`).
    public func permutation(_ e: Int, dimension: Int, seed runSeed: UInt64) -> [Int] {
        var p = Array(0..<dimension)
        if e > 0 || permuteFirst {
            var rng = RandomSource(seed: seed ?? runSeed, stream: "permuted_digits.\(e)")
            rng.shuffle(&p)
        }
        return p
    }

    public func makeStream(seed runSeed: UInt64) throws -> ExperienceStream {
        let data = try DigitsData.load(path)
        let d = data.train.dimension
        func permuted(_ s: Samples, _ p: [Int]) -> Samples {
            var f = [Float](repeating: 0, count: s.features.count)
            for i in 0..<s.count {
                for j in 0..<d { f[i * d + j] = s.features[i * d + p[j]] }
            }
            return Samples(dimension: d, features: f, labels: s.labels)
        }
        let list = (0..<experiences).map { e in
            let p = permutation(e, dimension: d, seed: runSeed)
            return Experience(index: e, name: "permutation_\(e)", train: permuted(data.train, p), test: permuted(data.test, p),
                              metadata: ["permuted": e > 0 || permuteFirst ? "yes" : "no",
                                         "drift": e == 0 ? "none" : "sudden", "drift_kind": "virtual+real (input permutation)"])
        }
        return ExperienceStream(name: Self.typeName, featureNames: data.featureNames.indices.map { "input_\($0)" },
                                head: .multiclass(classes: 10), experiences: list,
                                metadata: ["source": path, "seed": "\(seed ?? runSeed)"])
    }
}
