import ContinualCore

/// Parameters of the app-usage user (see `AppUsageScenario`).
public enum AppUsageSchema: ConceptSchema {
    public enum Key: String, CaseIterable, Hashable, Sendable {
        case home, work, commute, batteryMean = "battery_mean"
        case categories, hourWeight = "hour_weight", locationWeight = "location_weight"
        case transitionWeight = "transition_weight", batteryWeight = "battery_weight"
        case hourShift = "hour_shift", temperature
    }
    public static let labelKeys: Set<Key> = [.categories, .hourWeight, .locationWeight, .transitionWeight,
                                             .batteryWeight, .hourShift, .temperature]
    public static let defaultPreset = "core"
    public static let ranges: [Key: ClosedRange<Double>] = [
        .home: 0...1, .work: 0...1, .commute: 0...1, .batteryMean: 0...1,
        .categories: 1...Double(AppUsageScenario.categoryNames.count), .hourShift: -24...24, .temperature: 0.01...100,
    ]
    public static let presets: [String: [Key: Double]] = {
        let core: [Key: Double] = [
            .home: 0.5, .work: 0.3, .commute: 0.1, .batteryMean: 0.6, .categories: 3, .hourWeight: 2,
            .locationWeight: 1.5, .transitionWeight: 1.5, .batteryWeight: 1, .hourShift: 0, .temperature: 0.5,
        ]
        var explore = core
        explore[.categories] = 5
        var full = core
        full[.categories] = 8
        var nightOwl = full
        nightOwl[.hourShift] = 8
        nightOwl[.home] = 0.7
        nightOwl[.work] = 0.1
        return ["core": core, "explore": explore, "full": full, "night_owl": nightOwl]
    }()
}

public typealias AppUsagePhase = ParameterConcept<AppUsageSchema>

/// Which app category does the user open next? One sample per app session (multi-class).
///
/// Inputs: hour (sin/cos), weekend, location (home/work/commute/other one-hot), previous app
/// category (one-hot over all 8), battery level and charging. A per-user profile drawn from the
/// seed gives each category a peak hour, location and battery affinities and a transition score
/// from each previous category; the next category is drawn from a softmax (at `temperature`) over
/// the phase's first `categories` categories. New categories appear over time (default phases:
/// core 3 → explore 5 → full 8 → night owl 8 with peaks shifted by 8 h): a class-incremental
/// stream with real drift at the end.
public struct AppUsageScenario: ScenarioOptions {
    public static let typeName = "app_usage"
    public static let summary = "next app category (8-way), new categories appear over time (class-incremental)"

    public static let categoryNames = ["messaging", "social", "news", "productivity", "music", "games", "fitness", "shopping"]
    public static let locationNames = ["home", "work", "commute", "other"]
    public static var featureNames: [String] {
        ["hour_sin", "hour_cos", "weekend"] + locationNames.map { "at_" + $0 }
            + categoryNames.map { "previous_" + $0 } + ["battery", "charging"]
    }

    public var trainPerExperience = 2000
    public var testPerExperience = 500
    public var phases: [AppUsagePhase] = AppUsageScenario.defaultPhases
    public var sessionsPerDay = 20
    public var drift: DriftOptions = .sudden
    public var cut: ExperienceCut = .driftPoints
    public var labelNoise = 0.0
    public var seed: UInt64?

    public static let defaultPhases: [AppUsagePhase] = ["core", "explore", "full", "night_owl"].map { .preset($0) }

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case trainPerExperience = "train_per_experience", testPerExperience = "test_per_experience"
        case phases, sessionsPerDay = "sessions_per_day", drift, cut, labelNoise = "label_noise", seed
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
        trainPerExperience = try c.decode(.trainPerExperience, default: 2000)
        testPerExperience = try c.decode(.testPerExperience, default: 500)
        phases = try c.decode(.phases, default: Self.defaultPhases)
        sessionsPerDay = try c.decode(.sessionsPerDay, default: 20)
        drift = try c.decode(.drift, default: .sudden)
        cut = try c.decode(.cut, default: .driftPoints)
        labelNoise = try c.decode(.labelNoise, default: 0)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        try c.require(trainPerExperience >= 1, .trainPerExperience, "must be ≥ 1, got \(trainPerExperience)")
        try c.require(testPerExperience >= 1, .testPerExperience, "must be ≥ 1, got \(testPerExperience)")
        try c.require(!phases.isEmpty, .phases, "needs at least one phase")
        try c.require(sessionsPerDay >= 1, .sessionsPerDay, "must be ≥ 1, got \(sessionsPerDay)")
        try c.require((0...0.5).contains(labelNoise), .labelNoise, "must be in 0...0.5, got \(labelNoise)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(trainPerExperience, forKey: .trainPerExperience)
        try c.encode(testPerExperience, forKey: .testPerExperience)
        try c.encode(phases, forKey: .phases)
        try c.encode(sessionsPerDay, forKey: .sessionsPerDay)
        try c.encode(drift, forKey: .drift)
        try c.encode(cut, forKey: .cut)
        try c.encode(labelNoise, forKey: .labelNoise)
        try c.encodeIfPresent(seed, forKey: .seed)
    }

    public var schedule: DriftSchedule {
        DriftSchedule(options: drift, concepts: phases.count, length: trainPerExperience + testPerExperience)
    }

    /// The user's fixed tastes, drawn once from the seed.
    public struct Profile: Sendable, Equatable {
        public var peakHour: [Double]
        public var location: [[Double]]
        public var transition: [[Double]]
        public var battery: [Double]
        public var base: [Double]

        public init(rng: inout RandomSource) {
            let k = AppUsageScenario.categoryNames.count
            peakHour = (0..<k).map { _ in rng.uniform(0, 24) }
            location = (0..<k).map { _ in (0..<4).map { _ in rng.normal() * 1.5 } }
            transition = (0..<k).map { _ in (0..<k).map { _ in rng.normal() * 1.5 } }
            battery = (0..<k).map { _ in rng.normal() }
            base = (0..<k).map { _ in rng.normal() * 0.5 }
        }
    }

    /// The ground truth: the probability of each category for `features` under `phase`.
    public static func categoryProbabilities(_ f: [Float], phase p: AppUsagePhase, profile: Profile) -> [Double] {
        let k = categoryNames.count
        let active = max(1, min(k, Int(p[.categories].rounded())))
        let location = (0..<4).first { f[3 + $0] > 0.5 } ?? 3
        let previous = (0..<k).first { f[7 + $0] > 0.5 }
        var scores = [Double](repeating: -.infinity, count: k)
        for c in 0..<active {
            let peak = 2 * Double.pi * (profile.peakHour[c] + p[.hourShift]) / 24
            var s = profile.base[c]
            s += p[.hourWeight] * (Double(f[1]) * _cos(peak) + Double(f[0]) * _sin(peak))
            s += p[.locationWeight] * profile.location[c][location]
            if let previous { s += p[.transitionWeight] * profile.transition[previous][c] }
            s += p[.batteryWeight] * profile.battery[c] * (Double(f[15]) - 0.5)
            scores[c] = s / p[.temperature]
        }
        let m = scores.max()!
        let e = scores.map { $0 == -.infinity ? 0 : _exp($0 - m) }
        let z = e.reduce(0, +)
        return e.map { $0 / z }
    }

    public func makeStream(seed runSeed: UInt64) throws -> ExperienceStream {
        let dataSeed = seed ?? runSeed
        var rng = RandomSource(seed: dataSeed, stream: "scenario.\(Self.typeName)")
        var profileRNG = rng.derived("profile")
        let profile = Profile(rng: &profileRNG)
        var sim = rng.derived("sessions")
        var driftRNG = rng.derived("drift")
        let schedule = self.schedule
        let k = Self.categoryNames.count
        let noise = LabelNoise(rate: labelNoise, classes: k)
        var timeline = GeneratedTimeline(dimension: Self.featureNames.count)
        var previous: Int? = nil
        var battery = 1.0
        for t in 0..<schedule.totalLength {
            let segment = schedule.segment(at: t)
            let (p, conceptIndex) = schedule.concept(at: t, concepts: phases, rng: &driftRNG)
            let day = t / sessionsPerDay
            let slot = t % sessionsPerDay
            // Sessions spread over the waking day 7:00–24:00 with jitter.
            let hour = min(23.99, 7 + 17 * (Double(slot) + sim.uniform()) / Double(sessionsPerDay))
            if slot == 0 { battery = 0.7 + 0.3 * sim.uniform() }
            let weekend = day % 7 >= 5
            let charging = sim.bernoulli(0.15)
            battery = charging ? min(1, battery + 0.1) : max(0.02, battery - 0.04 * sim.uniform() * 2 * (1 - p[.batteryMean] + 0.5))
            let workShare = weekend ? 0 : p[.work]
            let weights = [p[.home], workShare, p[.commute], max(0, 1 - p[.home] - p[.work] - p[.commute])]
            let location = Self.draw(weights, rng: &sim)
            let angle = 2 * Double.pi * hour / 24
            var f = [Float](repeating: 0, count: Self.featureNames.count)
            f[0] = Float(_sin(angle))
            f[1] = Float(_cos(angle))
            f[2] = weekend ? 1 : 0
            f[3 + location] = 1
            if let previous { f[7 + previous] = 1 }
            f[15] = Float(battery)
            f[16] = charging ? 1 : 0
            let probabilities = Self.categoryProbabilities(f, phase: p, profile: profile)
            let next = Self.draw(probabilities, rng: &sim)
            previous = next
            timeline.append(f, label: noise.apply(Int32(next), rng: &rng), day: day, segment: segment, concept: conceptIndex)
        }
        let fraction = Double(testPerExperience) / Double(trainPerExperience + testPerExperience)
        var experiences = timeline.experiences(cut: cut, schedule: schedule, conceptNames: phases.map(\.name),
                                               testFraction: fraction, rng: &rng)
        for e in experiences.indices {
            let seen = Set(experiences[e].train.labels + experiences[e].test.labels).sorted()
            experiences[e].metadata["classes"] = seen.map(String.init).joined(separator: ",")
        }
        return ExperienceStream(name: Self.typeName, featureNames: Self.featureNames, head: .multiclass(classes: k),
                                experiences: experiences,
                                metadata: ["generator": Self.typeName, "seed": "\(dataSeed)",
                                           "label": "next app category", "classes": Self.categoryNames.joined(separator: ","),
                                           "drift": drift.type.rawValue, "drift_kind": drift.kind.rawValue])
    }

    /// Index drawn with probability proportional to `weights`.
    static func draw(_ weights: [Double], rng: inout RandomSource) -> Int {
        let total = weights.reduce(0, +)
        var u = rng.uniform() * total
        for (i, w) in weights.enumerated() {
            u -= w
            if u < 0 { return i }
        }
        return weights.lastIndex { $0 > 0 } ?? 0
    }
}
