import ContinualCore

/// Poisoning of one user's own event stream (issue 32 item 5): a compromised app input or a hostile
/// sibling corrupts some of the samples the phone trains on. Applied to every experience's
/// *training* set; test sets stay clean, so the run's accuracy is the clean accuracy.
///
/// Per experience with n training samples, exactly round(`backdoor.fraction`·n) samples carry the
/// backdoor and exactly round(`label_flip`·n) other samples have their label flipped. The rows are
/// the first ones of a seeded permutation (backdoor first, then flips), so the two sets are
/// disjoint and the same seed picks the same rows.
/// - Label flip: binary labels become 1 − y; with k > 2 classes the label moves to a different
///   class drawn uniformly (the generators' label-noise rule, as a targeted fraction).
/// - Backdoor (Gu et al. 2017, BadNets, on features): the trigger sets `features[i]` to
///   `values[i]` and the label to `target`.
/// The attack success rate of a model is the fraction of clean test samples whose label is not
/// the target that the model classifies as the target once the trigger is stamped on them.
public struct StreamPoisoning: Codable, Sendable, Equatable {
    public struct Backdoor: Codable, Sendable, Equatable {
        public var fraction: Double
        public var features: [Int]
        public var values: [Float]
        public var target: Int32

        public init(fraction: Double, features: [Int], values: [Float], target: Int32) {
            self.fraction = fraction
            self.features = features
            self.values = values
            self.target = target
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case fraction, features, values, target }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
            fraction = try c.decode(Double.self, forKey: .fraction)
            features = try c.decode([Int].self, forKey: .features)
            values = try c.decode([Float].self, forKey: .values)
            target = try c.decode(Int32.self, forKey: .target)
            try c.require(fraction >= 0 && fraction <= 1, .fraction, "must be in 0...1, got \(fraction)")
            try c.require(!features.isEmpty, .features, "needs at least one feature index (the trigger pattern)")
            try c.require(features.allSatisfy { $0 >= 0 }, .features, "feature indices must be ≥ 0, got \(features)")
            try c.require(Set(features).count == features.count, .features, "feature indices must be distinct, got \(features)")
            try c.require(values.count == features.count, .values, "needs one value per trigger feature (\(features.count)), got \(values.count)")
            try c.require(values.allSatisfy(\.isFinite), .values, "values must be finite")
            try c.require(target >= 0, .target, "must be a class index ≥ 0, got \(target)")
        }

        /// Stamps the trigger on row `r` of `samples`.
        func stamp(_ samples: inout Samples, row r: Int) {
            let d = samples.dimension
            for (f, v) in zip(features, values) { samples.features[r * d + f] = v }
        }
    }

    /// Fraction of each experience's training samples whose label flips.
    public var labelFlip = 0.0
    public var backdoor: Backdoor?
    /// Seed of the row choice (default: the run's seed).
    public var seed: UInt64?

    public init(labelFlip: Double = 0, backdoor: Backdoor? = nil, seed: UInt64? = nil) {
        self.labelFlip = labelFlip
        self.backdoor = backdoor
        self.seed = seed
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case labelFlip = "label_flip", backdoor, seed }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        labelFlip = try c.decode(.labelFlip, default: 0)
        backdoor = try c.decodeIfPresent(Backdoor.self, forKey: .backdoor)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        try c.require(labelFlip >= 0 && labelFlip <= 1, .labelFlip, "must be in 0...1, got \(labelFlip)")
        try c.require(labelFlip + (backdoor?.fraction ?? 0) <= 1, .labelFlip,
                      "label_flip + backdoor.fraction must be ≤ 1 (the two sets of rows are disjoint), got \(labelFlip + (backdoor?.fraction ?? 0))")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(labelFlip, forKey: .labelFlip)
        try c.encodeIfPresent(backdoor, forKey: .backdoor)
        try c.encodeIfPresent(seed, forKey: .seed)
    }

    /// What was poisoned: per experience, the backdoored and flipped training rows.
    public struct Record: Sendable, Equatable {
        public var backdoored: [[Int]] = []
        public var flipped: [[Int]] = []
    }

    /// A problem with this stream (key path below `poisoning` and message), or nil: trigger
    /// features and the target must exist in the stream.
    public func problem(for stream: ExperienceStream) -> (key: String, message: String)? {
        guard let b = backdoor else { return nil }
        if let bad = b.features.first(where: { $0 >= stream.dimension }) {
            return ("backdoor.features", "feature \(bad) does not exist: the stream has \(stream.dimension) features (0...\(stream.dimension - 1))")
        }
        if Int(b.target) >= stream.head.classCount {
            return ("backdoor.target", "class \(b.target) does not exist: the stream has \(stream.head.classCount) classes")
        }
        return nil
    }

    /// The poisoned stream (training sets only) and which rows were changed. `runSeed` is used
    /// when `seed` is not set; each experience draws from its own stream of it.
    public func apply(to stream: ExperienceStream, runSeed: UInt64) -> (ExperienceStream, Record) {
        var out = stream
        var record = Record()
        let classes = stream.head.classCount
        for (j, e) in stream.experiences.enumerated() {
            var train = e.train
            let n = train.count
            var rng = RandomSource(seed: seed ?? runSeed, stream: "poisoning.\(j)")
            var order = Array(0..<n)
            rng.shuffle(&order)
            let nb = backdoor.map { Int(($0.fraction * Double(n)).rounded()) } ?? 0
            let nf = min(n - nb, Int((labelFlip * Double(n)).rounded()))
            let chosenB = Array(order[0..<nb]).sorted(), chosenF = Array(order[nb..<(nb + nf)]).sorted()
            if let b = backdoor {
                for r in chosenB {
                    b.stamp(&train, row: r)
                    train.labels[r] = b.target
                }
            }
            let noise = LabelNoise(rate: 1, classes: classes)
            for r in chosenF { train.labels[r] = noise.apply(train.labels[r], rng: &rng) }
            out.experiences[j].train = train
            record.backdoored.append(chosenB)
            record.flipped.append(chosenF)
        }
        return (out, record)
    }

    /// Per experience, the fraction of `stream`'s clean test samples with a label other than the
    /// target that `model` classifies as the target once the trigger is stamped (NaN when an
    /// experience has no such sample, or there is no backdoor).
    public func attackSuccessRate(_ model: MLP, stream: ExperienceStream, route: (Int) -> Int = { _ in 0 }) -> [Double] {
        guard let b = backdoor else { return stream.experiences.map { _ in .nan } }
        let ws = model.makeWorkspace(capacity: 256)
        return stream.experiences.enumerated().map { j, e in
            let rows = (0..<e.test.count).filter { e.test.labels[$0] != b.target }
            guard !rows.isEmpty else { return .nan }
            var stamped = e.test.subset(rows)
            for r in 0..<stamped.count {
                b.stamp(&stamped, row: r)
                stamped.labels[r] = b.target
            }
            // Accuracy against the target label = the fraction classified as the target.
            return model.accuracy(on: stamped, route: route(j), workspace: ws)
        }
    }
}
