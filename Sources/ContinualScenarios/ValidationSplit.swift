import ContinualCore

/// `"validation_split"`: evaluate a run on a validation set carved from each experience's
/// *training* data instead of on its test set, so that hyperparameters can be selected without
/// ever reading a test sample (the protocol of Chaudhry et al. 2019, "Efficient lifelong learning
/// with A-GEM", §5, optionally on the first `experiences` experiences only).
///
/// ```json
/// "validation_split": {"fraction": 0.2, "experiences": 2, "seed": 0}
/// ```
/// Per experience and per label (stratified), the samples of that label in the training set are
/// permuted by a generator seeded with (`seed`, experience index, label) and the first
/// `round(fraction · n)` of them become validation samples — at least one when a label has two or
/// more samples, never all of them. The rest stay training samples, in their original order.
/// The experience's test set is dropped: the evaluation reads the validation samples only.
/// `seed` is the split's own seed, independent of the run's seed, so every selection run of a
/// grid is scored on the same validation samples.
public struct ValidationSplit: Codable, Sendable, Equatable {
    /// Share of each label's training samples moved to validation, in (0, 1).
    public var fraction: Double
    /// Only the first k experiences are kept (nil = all).
    public var experiences: Int?
    /// Seed of the carve (not of training).
    public var seed: UInt64

    public init(fraction: Double = 0.2, experiences: Int? = nil, seed: UInt64 = 0) {
        self.fraction = fraction
        self.experiences = experiences
        self.seed = seed
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case fraction, experiences, seed }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        fraction = try c.decode(.fraction, default: 0.2)
        experiences = try c.decodeIfPresent(Int.self, forKey: .experiences)
        seed = try c.decode(.seed, default: 0)
        try c.require(fraction > 0 && fraction < 1, .fraction, "must be in (0, 1) (the share of training samples held out), got \(fraction)")
        try c.require((experiences ?? 1) >= 1, .experiences, "must be ≥ 1 (the first k experiences), got \(experiences ?? 0)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(fraction, forKey: .fraction)
        try c.encodeIfPresent(experiences, forKey: .experiences)
        try c.encode(seed, forKey: .seed)
    }

    /// The stream with each kept experience's test set replaced by its validation samples.
    /// Throws when `experiences` exceeds the stream or an experience would have no training or
    /// no validation sample left. `owner` names whose stream it is when one run holds many (a
    /// population's user "user 3"): each owner's carve draws its own permutations, so users
    /// with the same label counts do not hold out the same positions. Empty for one stream.
    public func apply(to stream: ExperienceStream, owner: String = "") throws -> ExperienceStream {
        let k = experiences ?? stream.experiences.count
        guard k <= stream.experiences.count else {
            throw ScenarioError("validation_split.experiences is \(k), but the scenario has \(stream.experiences.count) experiences")
        }
        var out = stream
        out.experiences = try stream.experiences.prefix(k).map { try carve($0, owner: owner) }
        out.metadata["evaluated_on"] = description
        return out
    }

    /// "validation: 20 % of each experience's training samples (stratified, split seed 0), first 2 experiences".
    public var description: String {
        let share = (fraction * 100).formatted1
        return "validation: \(share) % of each experience's training samples (stratified by label, split seed \(seed))"
            + (experiences.map { ", first \($0) experience\($0 == 1 ? "" : "s")" } ?? "") + "; test sets not read"
    }

    func carve(_ e: Experience, owner: String = "") throws -> Experience {
        var byLabel: [Int32: [Int]] = [:]
        for (i, y) in e.train.labels.enumerated() { byLabel[y, default: []].append(i) }
        var held = Set<Int>()
        for label in byLabel.keys.sorted() {
            var rows = byLabel[label]!
            var rng = RandomSource(seed: seed, stream: owner.isEmpty ? "validation_split/\(e.index)/\(label)"
                                                                 : "validation_split/\(owner)/\(e.index)/\(label)")
            rng.shuffle(&rows)
            let n = rows.count
            let take = n < 2 ? 0 : min(n - 1, max(1, Int((fraction * Double(n)).rounded())))
            held.formUnion(rows.prefix(take))
        }
        let train = e.train.labels.indices.filter { !held.contains($0) }
        let validation = held.sorted()
        guard !train.isEmpty, !validation.isEmpty else {
            throw ScenarioError("validation_split: \(owner.isEmpty ? "" : owner + "'s ")experience \(e.index) (\"\(e.name)\") has \(e.train.count) training samples, "
                + "too few to carve a validation set (every label needs two or more)")
        }
        var metadata = e.metadata
        metadata["evaluated_on"] = "validation"
        return Experience(index: e.index, name: e.name, train: e.train.subset(train), test: e.train.subset(validation),
                          metadata: metadata)
    }
}

private extension Double {
    /// One decimal, trailing ".0" dropped ("20", "12.5").
    var formatted1: String {
        let r = (self * 10).rounded() / 10
        return r == r.rounded() ? String(Int(r)) : String(r)
    }
}
