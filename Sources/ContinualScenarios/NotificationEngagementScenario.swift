import ContinualCore

/// Parameters of the notification user (see `NotificationEngagementScenario`).
public enum NotificationSchema: ConceptSchema {
    public enum Key: String, CaseIterable, Hashable, Sendable {
        case sendHour = "send_hour", sendSpread = "send_spread", remindersPerDay = "reminders_per_day"
        case activeRate = "active_rate"
        case bestHour = "best_hour", hourWeight = "hour_weight", fatigueWeight = "fatigue_weight"
        case ignoredWeight = "ignored_weight", recentWeight = "recent_weight", weekendWeight = "weekend_weight"
        case activeWeight = "active_weight", bias
    }
    public static let labelKeys: Set<Key> = [.bestHour, .hourWeight, .fatigueWeight, .ignoredWeight, .recentWeight,
                                             .weekendWeight, .activeWeight, .bias]
    public static let defaultPreset = "morning_reader"
    public static let ranges: [Key: ClosedRange<Double>] = [
        .sendHour: 0...24, .sendSpread: 0...24, .remindersPerDay: 0.1...50, .activeRate: 0...1, .bestHour: 0...24,
    ]
    public static let presets: [String: [Key: Double]] = {
        let morning: [Key: Double] = [
            .sendHour: 10, .sendSpread: 4, .remindersPerDay: 3, .activeRate: 0.4,
            .bestHour: 8, .hourWeight: 2.5, .fatigueWeight: -1.0, .ignoredWeight: -1.0, .recentWeight: 1.5,
            .weekendWeight: 0, .activeWeight: 1.5, .bias: 0,
        ]
        var evening = morning
        evening[.bestHour] = 20
        evening[.sendHour] = 14
        var fatigued = evening
        fatigued[.remindersPerDay] = 6
        fatigued[.fatigueWeight] = -5
        fatigued[.ignoredWeight] = -3
        fatigued[.hourWeight] = 1.5
        fatigued[.bias] = 0.5
        var weekend = morning
        weekend[.bestHour] = 11
        weekend[.hourWeight] = 1
        weekend[.weekendWeight] = 2.5
        weekend[.activeWeight] = 0.5
        weekend[.bias] = -0.5
        return ["morning_reader": morning, "evening_reader": evening, "fatigued": fatigued, "weekend_reader": weekend]
    }()
}

public typealias NotificationPhase = ParameterConcept<NotificationSchema>

/// Does the user open a reminder sent at hour h? One sample per reminder (binary label).
///
/// Reminders arrive `reminders_per_day` times a day (Poisson, ≥ 1) around `send_hour`. The
/// probability of opening is σ(bias + hour_weight·cos(2π(h − best_hour)/24)
/// + fatigue_weight·sent_today/5 + ignored_weight·ignored_in_a_row/10 + recent_weight·(open rate of
/// the last 20 − 0.5) + weekend_weight·(±1) + active_weight·phone_in_use): reminder fatigue is
/// the penalty for many reminders today and a run of ignored ones. Default phases: morning
/// reader → evening reader → fatigued → weekend reader → morning reader (real, sudden drift).
public struct NotificationEngagementScenario: ScenarioOptions {
    public static let typeName = "notification_engagement"
    public static let summary = "reminder opened or not (binary), with reminder fatigue and drifting best hour"

    public var trainPerExperience = 2000
    public var testPerExperience = 500
    public var phases: [NotificationPhase] = NotificationEngagementScenario.defaultPhases
    public var drift: DriftOptions = .sudden
    public var cut: ExperienceCut = .driftPoints
    public var labelNoise = 0.0
    public var seed: UInt64?

    public static let defaultPhases: [NotificationPhase] =
        ["morning_reader", "evening_reader", "fatigued", "weekend_reader", "morning_reader"].map { .preset($0) }

    public static let featureNames = [
        "hour_sin", "hour_cos", "weekend", "sent_today", "ignored_in_a_row", "hours_since_open",
        "open_rate_recent", "phone_in_use", "battery_low",
    ]

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case trainPerExperience = "train_per_experience", testPerExperience = "test_per_experience"
        case phases, drift, cut, labelNoise = "label_noise", seed
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
        trainPerExperience = try c.decode(.trainPerExperience, default: 2000)
        testPerExperience = try c.decode(.testPerExperience, default: 500)
        phases = try c.decode(.phases, default: Self.defaultPhases)
        drift = try c.decode(.drift, default: .sudden)
        cut = try c.decode(.cut, default: .driftPoints)
        labelNoise = try c.decode(.labelNoise, default: 0)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        try c.require(trainPerExperience >= 1, .trainPerExperience, "must be ≥ 1, got \(trainPerExperience)")
        try c.require(testPerExperience >= 1, .testPerExperience, "must be ≥ 1, got \(testPerExperience)")
        try c.require(!phases.isEmpty, .phases, "needs at least one phase")
        try c.require((0...0.5).contains(labelNoise), .labelNoise, "must be in 0...0.5, got \(labelNoise)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(trainPerExperience, forKey: .trainPerExperience)
        try c.encode(testPerExperience, forKey: .testPerExperience)
        try c.encode(phases, forKey: .phases)
        try c.encode(drift, forKey: .drift)
        try c.encode(cut, forKey: .cut)
        try c.encode(labelNoise, forKey: .labelNoise)
        try c.encodeIfPresent(seed, forKey: .seed)
    }

    public var schedule: DriftSchedule {
        DriftSchedule(options: drift, concepts: phases.count, length: trainPerExperience + testPerExperience)
    }

    /// The ground truth: probability that a reminder with `features` is opened under `phase`.
    public static func openProbability(_ f: [Float], phase p: NotificationPhase) -> Double {
        // cos(2π(h − b)/24) = cos(h)cos(b) + sin(h)sin(b) in angle terms: read from the features.
        let best = 2 * Double.pi * p[.bestHour] / 24
        var logit = p[.bias]
        logit += p[.hourWeight] * (Double(f[1]) * _cos(best) + Double(f[0]) * _sin(best))
        logit += p[.fatigueWeight] * Double(f[3])
        logit += p[.ignoredWeight] * Double(f[4])
        logit += p[.recentWeight] * (Double(f[6]) - 0.5)
        logit += p[.weekendWeight] * (f[2] > 0.5 ? 1 : -1)
        logit += p[.activeWeight] * Double(f[7])
        return 1 / (1 + _exp(-logit))
    }

    public func makeStream(seed runSeed: UInt64) throws -> ExperienceStream {
        let dataSeed = seed ?? runSeed
        var rng = RandomSource(seed: dataSeed, stream: "scenario.\(Self.typeName)")
        var sim = rng.derived("reminders")
        var driftRNG = rng.derived("drift")
        let schedule = self.schedule
        let noise = LabelNoise(rate: labelNoise, classes: 2)
        var timeline = GeneratedTimeline(dimension: Self.featureNames.count)
        var day = -1, leftToday = 0, sentToday = 0, ignored = 0
        var lastOpenHour = -24.0
        var recent: [Bool] = []
        var hours: [Double] = []
        for t in 0..<schedule.totalLength {
            let k = schedule.segment(at: t)
            let (p, conceptIndex) = schedule.concept(at: t, concepts: phases, rng: &driftRNG)
            if leftToday == 0 {
                day += 1
                sentToday = 0
                leftToday = max(1, sim.poisson(mean: p[.remindersPerDay]))
                hours = (0..<leftToday).map { _ in
                    let h = p[.sendHour] + p[.sendSpread] * sim.normal()
                    return min(max(h, 0), 23.99)
                }.sorted()
            }
            let hour = hours[hours.count - leftToday]
            leftToday -= 1
            let absoluteHour = Double(day) * 24 + hour
            let angle = 2 * Double.pi * hour / 24
            let rate = recent.isEmpty ? 0.5 : Double(recent.filter { $0 }.count) / Double(recent.count)
            let f: [Float] = [
                Float(_sin(angle)), Float(_cos(angle)), day % 7 >= 5 ? 1 : 0, Float(min(Double(sentToday) / 5, 2)),
                Float(min(Double(ignored) / 10, 1)), Float(min((absoluteHour - lastOpenHour) / 72, 1)), Float(rate),
                sim.bernoulli(p[.activeRate]) ? 1 : 0, sim.bernoulli(0.15) ? 1 : 0,
            ]
            let opened = sim.bernoulli(Self.openProbability(f, phase: p))
            sentToday += 1
            if opened {
                ignored = 0
                lastOpenHour = absoluteHour
            } else {
                ignored += 1
            }
            recent.append(opened)
            if recent.count > 20 { recent.removeFirst() }
            timeline.append(f, label: noise.apply(opened ? 1 : 0, rng: &rng), day: day, segment: k, concept: conceptIndex)
        }
        let fraction = Double(testPerExperience) / Double(trainPerExperience + testPerExperience)
        let experiences = timeline.experiences(cut: cut, schedule: schedule, conceptNames: phases.map(\.name),
                                               testFraction: fraction, rng: &rng)
        return ExperienceStream(name: Self.typeName, featureNames: Self.featureNames, head: .binary,
                                experiences: experiences,
                                metadata: ["generator": Self.typeName, "seed": "\(dataSeed)",
                                           "label": "reminder opened", "drift": drift.type.rawValue,
                                           "drift_kind": drift.kind.rawValue])
    }
}

