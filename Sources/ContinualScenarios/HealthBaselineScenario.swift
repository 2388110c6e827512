import ContinualCore

/// Parameters of the wearable user (see `HealthBaselineScenario`).
public enum HealthSchema: ConceptSchema {
    public enum Key: String, CaseIterable, Hashable, Sendable {
        case restingHR = "resting_hr", hrv, steps, sleep, activeMinutes = "active_minutes", respRate = "resp_rate"
        case anomalyRate = "anomaly_rate"
        case referenceHR = "reference_hr", referenceHRV = "reference_hrv", referenceSteps = "reference_steps"
        case referenceResp = "reference_resp", threshold
    }
    public static let labelKeys: Set<Key> = [.referenceHR, .referenceHRV, .referenceSteps, .referenceResp, .threshold]
    public static let defaultPreset = "age_30"
    public static let ranges: [Key: ClosedRange<Double>] = [.anomalyRate: 0...1]
    public static let presets: [String: [Key: Double]] = {
        var result: [String: [Key: Double]] = [:]
        for (age, hr, hrv, steps, sleep, active, resp) in [
            (30, 58.0, 65.0, 9.0, 7.3, 45.0, 14.0), (40, 61.0, 52.0, 8.2, 7.1, 40.0, 14.5),
            (50, 64.0, 41.0, 7.3, 6.9, 34.0, 15.0), (60, 67.0, 32.0, 6.4, 6.7, 28.0, 15.5),
            (70, 70.0, 25.0, 5.5, 6.5, 22.0, 16.0),
        ] {
            result["age_\(age)"] = [
                .restingHR: hr, .hrv: hrv, .steps: steps, .sleep: sleep, .activeMinutes: active, .respRate: resp,
                .anomalyRate: 0.1, .referenceHR: hr, .referenceHRV: hrv, .referenceSteps: steps, .referenceResp: resp,
                .threshold: 4,
            ]
        }
        return result
    }()
}

public typealias HealthPhase = ParameterConcept<HealthSchema>

/// A wearable's daily summary with a slowly ageing baseline and rare anomalies (binary: is
/// today anomalous?). One sample per day.
///
/// Normal days scatter around the phase's baseline (resting heart rate, HRV, steps, sleep,
/// active minutes, respiratory rate); on an anomalous day (probability `anomaly_rate`, e.g. an
/// infection) heart rate and respiration rise and HRV, steps and sleep fall. The label is the
/// clinical rule: anomaly ⇔ z(hr) − z(hrv) + z(resp) − ½ z(steps) > threshold, with z-scores
/// against the *reference* baseline. Under real drift the reference ages with the user, so what
/// counts as anomalous moves; under virtual drift it stays at the first phase. Default: five
/// phases aged 30 → 70 with incremental drift (the baseline moves every day).
public struct HealthBaselineScenario: ScenarioOptions {
    public static let typeName = "health_baseline"
    public static let summary = "wearable daily features, anomaly or not (binary), slowly ageing baseline (incremental drift)"

    public static let featureNames = [
        "resting_hr", "hrv", "steps", "sleep_hours", "active_minutes", "resp_rate", "skin_temp_delta",
    ]
    /// Day-to-day standard deviations (bpm, ms, thousand steps, hours, minutes, breaths/min).
    static let spread = (hr: 3.0, hrv: 8.0, steps: 2.0, sleep: 0.8, active: 15.0, resp: 1.2)

    public var trainPerExperience = 300
    public var testPerExperience = 100
    public var phases: [HealthPhase] = HealthBaselineScenario.defaultPhases
    public var drift = DriftOptions(type: .incremental)
    public var cut: ExperienceCut = .driftPoints
    public var labelNoise = 0.0
    public var seed: UInt64?

    public static let defaultPhases: [HealthPhase] = ["age_30", "age_40", "age_50", "age_60", "age_70"].map { .preset($0) }

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case trainPerExperience = "train_per_experience", testPerExperience = "test_per_experience"
        case phases, drift, cut, labelNoise = "label_noise", seed
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
        trainPerExperience = try c.decode(.trainPerExperience, default: 300)
        testPerExperience = try c.decode(.testPerExperience, default: 100)
        phases = try c.decode(.phases, default: Self.defaultPhases)
        drift = try c.decode(.drift, default: DriftOptions(type: .incremental))
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

    /// Features are scaled to O(1): (hr − 60)/10, (hrv − 45)/20, (steps − 7.5)/3, sleep − 7,
    /// (active − 35)/20, resp − 15, skin temperature delta in °C.
    static func scaled(hr: Double, hrv: Double, steps: Double, sleep: Double, active: Double, resp: Double,
                       temp: Double) -> [Float] {
        [Float((hr - 60) / 10), Float((hrv - 45) / 20), Float((steps - 7.5) / 3), Float(sleep - 7),
         Float((active - 35) / 20), Float(resp - 15), Float(temp)]
    }

    /// The ground truth (deterministic rule) on scaled features.
    public static func isAnomaly(_ f: [Float], phase p: HealthPhase) -> Bool {
        let hr = Double(f[0]) * 10 + 60, hrv = Double(f[1]) * 20 + 45, steps = Double(f[2]) * 3 + 7.5
        let resp = Double(f[5]) + 15
        let score = (hr - p[.referenceHR]) / spread.hr - (hrv - p[.referenceHRV]) / spread.hrv
            + (resp - p[.referenceResp]) / spread.resp - 0.5 * (steps - p[.referenceSteps]) / spread.steps
        return score > p[.threshold]
    }

    public func makeStream(seed runSeed: UInt64) throws -> ExperienceStream {
        let dataSeed = seed ?? runSeed
        var rng = RandomSource(seed: dataSeed, stream: "scenario.\(Self.typeName)")
        var sim = rng.derived("days")
        var driftRNG = rng.derived("drift")
        let schedule = self.schedule
        let noise = LabelNoise(rate: labelNoise, classes: 2)
        let s = Self.spread
        var timeline = GeneratedTimeline(dimension: Self.featureNames.count)
        for t in 0..<schedule.totalLength {
            let (p, conceptIndex) = schedule.concept(at: t, concepts: phases, rng: &driftRNG)
            let ill = sim.bernoulli(p[.anomalyRate])
            let severity = ill ? 0.5 + sim.uniform() : 0
            let f = Self.scaled(
                hr: p[.restingHR] + s.hr * sim.normal() + 10 * severity,
                hrv: max(5, p[.hrv] + s.hrv * sim.normal() - 20 * severity),
                steps: max(0, p[.steps] + s.steps * sim.normal() - 3 * severity),
                sleep: p[.sleep] + s.sleep * sim.normal() - 1 * severity,
                active: max(0, p[.activeMinutes] + s.active * sim.normal() - 15 * severity),
                resp: p[.respRate] + s.resp * sim.normal() + 3 * severity,
                temp: 0.25 * sim.normal() + 0.7 * severity)
            let label: Int32 = Self.isAnomaly(f, phase: p) ? 1 : 0
            timeline.append(f, label: noise.apply(label, rng: &rng), day: t, segment: schedule.segment(at: t),
                            concept: conceptIndex)
        }
        let fraction = Double(testPerExperience) / Double(trainPerExperience + testPerExperience)
        let experiences = timeline.experiences(cut: cut, schedule: schedule, conceptNames: phases.map(\.name),
                                               testFraction: fraction, rng: &rng)
        return ExperienceStream(name: Self.typeName, featureNames: Self.featureNames, head: .binary,
                                experiences: experiences,
                                metadata: ["generator": Self.typeName, "seed": "\(dataSeed)",
                                           "label": "anomalous day", "drift": drift.type.rawValue,
                                           "drift_kind": drift.kind.rawValue])
    }
}
