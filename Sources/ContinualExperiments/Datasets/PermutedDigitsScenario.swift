import ContinualCore

/// `"permuted_digits"`: every experience is the whole digits set with its pixels shuffled by a
/// fixed, seeded permutation (the first experience unpermuted unless `permute_first`) — permuted
/// MNIST when `path` names MNIST. The `setting` says what the model is told (van de Ven & Tolias
/// 2019, permuted MNIST in three scenarios):
/// - `domain` (default): labels stay the digits, one shared 10-way head;
/// - `task`: the same labels, one 10-way head per permutation (set `"model": {"multi_head": true}`;
///   the experience index selects the head);
/// - `class`: permutation e's digit d is class 10·e + d, one head over 10 × `experiences` classes.
public struct PermutedDigitsScenario: ScenarioOptions {
    public static let typeName = "permuted_digits"
    public static let summary = "8x8 digits under a fixed seeded pixel permutation per experience (10-way)"

    public var path = DigitsData.defaultPath
    public var experiences = 5
    public var permuteFirst = false
    /// Seed of the permutations; nil = the run's seed.
    public var seed: UInt64?
    public var setting: SplitDigitsScenario.Setting = .domain

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case path, experiences, permuteFirst = "permute_first", seed, setting
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
        path = try c.decode(.path, default: DigitsData.defaultPath)
        experiences = try c.decode(.experiences, default: 5)
        permuteFirst = try c.decode(.permuteFirst, default: false)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        setting = try c.decodeChoice(.setting, default: .domain)
        try c.require((1...1000).contains(experiences), .experiences, "must be in 1...1000, got \(experiences)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(experiences, forKey: .experiences)
        try c.encode(permuteFirst, forKey: .permuteFirst)
        try c.encodeIfPresent(seed, forKey: .seed)
        // Written only when not the default, so run ids of files from before `setting` existed
        // (which hash the resolved config) stay what they were.
        if setting != .domain { try c.encode(setting, forKey: .setting) }
    }

    /// The "task" setting evaluates each permutation with its own head (task identity given).
    public var providesTaskIdentity: Bool { setting == .task }

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
        let classes = setting == .class ? 10 * experiences : 10
        func permuted(_ s: Samples, _ p: [Int], offset: Int32) -> Samples {
            var f = [Float](repeating: 0, count: s.features.count)
            for i in 0..<s.count {
                for j in 0..<d { f[i * d + j] = s.features[i * d + p[j]] }
            }
            return Samples(dimension: d, features: f, labels: s.labels.map { $0 + offset })
        }
        let list = (0..<experiences).map { e in
            let p = permutation(e, dimension: d, seed: runSeed)
            let offset = setting == .class ? Int32(10 * e) : 0
            return Experience(index: e, name: "permutation_\(e)", train: permuted(data.train, p, offset: offset),
                              test: permuted(data.test, p, offset: offset),
                              metadata: ["permuted": e > 0 || permuteFirst ? "yes" : "no", "task_id": "\(e)", "setting": setting.rawValue,
                                         "drift": e == 0 ? "none" : "sudden", "drift_kind": "virtual+real (input permutation)"])
        }
        var metadata = ["source": path, "seed": "\(seed ?? runSeed)", "setting": setting.rawValue]
        if setting == .task { metadata["requires"] = "model.multi_head = true (one head per experience)" }
        return ExperienceStream(name: Self.typeName, featureNames: data.featureNames.indices.map { "input_\($0)" },
                                head: .multiclass(classes: classes), experiences: list, metadata: metadata)
    }
}
