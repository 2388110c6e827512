import ContinualCore
import ContinualMetrics

// The `schedule` block's policy lives here, on a portable target, so that the research runner
// (ContinualExperiments' ScheduledRunner) and the on-device runtime (ContinualOnDevice's
// PersonalModel) gate sessions with one piece of code.

/// When the device allows training: every listed requirement must hold in at least one hour of
/// the day (JSON `"when": {"charging": true, "idle": true, "wifi": false, "min_battery": 0,
/// "max_thermal": "fair"}`; `false` means "not required").
public struct GateCondition: Codable, Sendable, Equatable {
    public var charging = true
    public var idle = true
    public var wifi = false
    public var minBattery = 0.0
    public var maxThermal = ThermalState.fair

    public init(charging: Bool = true, idle: Bool = true, wifi: Bool = false, minBattery: Double = 0,
                maxThermal: ThermalState = .fair) {
        self.charging = charging
        self.idle = idle
        self.wifi = wifi
        self.minBattery = minBattery
        self.maxThermal = maxThermal
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case charging, idle, wifi, minBattery = "min_battery", maxThermal = "max_thermal"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        charging = try c.decode(.charging, default: true)
        idle = try c.decode(.idle, default: true)
        wifi = try c.decode(.wifi, default: false)
        minBattery = try c.decode(.minBattery, default: 0)
        maxThermal = try c.decodeChoice(.maxThermal, default: .fair)
        try c.require((0...1).contains(minBattery), .minBattery, "must be in 0...1, got \(minBattery)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(charging, forKey: .charging)
        try c.encode(idle, forKey: .idle)
        try c.encode(wifi, forKey: .wifi)
        try c.encode(minBattery, forKey: .minBattery)
        try c.encode(maxThermal.rawValue, forKey: .maxThermal)
    }

    /// Whether training may run in this hour.
    public func allows(_ h: DeviceHour) -> Bool {
        (!charging || h.charging) && (!idle || h.idle) && (!wifi || h.wifi) && h.battery >= minBattery
            && h.thermal <= maxThermal
    }

    /// Whether the gate opens at some hour of `day`.
    public func opens(_ day: DeviceDay) -> Bool { day.hours.contains(where: allows) }
}

/// `"schedule"`: when on-device training sessions run. Samples arrive day by day
/// (`samples_per_day` training samples of the scenario per simulated day, experiences in order);
/// a session trains on every sample since the previous session.
///
/// - `always`: a session at the end of every experience's days, whatever the device state
///   (today's behaviour, seen prequentially).
/// - `daily`: every day on which the gate opens.
/// - `weekly`: on a day the gate opens, at least 7 days after the previous session (first
///   session from day 6 on).
/// - `after_n_new_samples`: on a day the gate opens once at least `n` samples arrived since the
///   previous session.
/// - `on_drift`: on a day the gate opens once the `detector` (a `DriftDetectorSpec` in JSON,
///   `{"type": "adwin", "delta": 0.002}`) fired since the previous session; the detector reads
///   the prequential 0/1 error of the model held that day (`DriftTrigger`). Until the first
///   session, `n` new samples also start one (as `after_n_new_samples`): the errors of a model
///   that never trained may never drift. The session days then depend on the model's own
///   predictions, so the runner decides day by day.
///
/// `safe_refresh` (any type): the session's candidate must pass the `SafeRefreshGate` on a
/// held-out window of the newest labelled events, or it is rolled back; a session then needs
/// more than `window` pending samples.
public struct ScheduleConfig: Codable, Sendable, Equatable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case always, daily, weekly
        case afterNewSamples = "after_n_new_samples"
        case onDrift = "on_drift"
    }

    public var type: Kind = .daily
    public var samplesPerDay = 20
    public var n = 100
    public var when = GateCondition()
    /// The detector of `on_drift` (required there, refused elsewhere).
    public var detector: DriftDetectorSpec?
    /// The safe-refresh gate (nil: every session's model replaces the current one).
    public var safeRefresh: SafeRefreshGate?

    public init(type: Kind = .daily, samplesPerDay: Int = 20, n: Int = 100, when: GateCondition = GateCondition(),
                detector: DriftDetectorSpec? = nil, safeRefresh: SafeRefreshGate? = nil) {
        self.type = type
        self.samplesPerDay = samplesPerDay
        self.n = n
        self.when = when
        self.detector = detector
        self.safeRefresh = safeRefresh
    }

    /// Whether session days depend on the model (a detector trigger or the safe-refresh gate):
    /// such runs are decided day by day instead of planned up front.
    public var isAdaptive: Bool { type == .onDrift || safeRefresh != nil }

    /// A text naming every option, the same in every process: the fields of schedules without
    /// a detector or gate print exactly as before those options existed (so fingerprints of
    /// existing on-device configurations do not change).
    public var canonicalDescription: String {
        var base = ScheduleConfig(type: type, samplesPerDay: samplesPerDay, n: n, when: when)
        base.detector = nil
        base.safeRefresh = nil
        var text = "\(base)"
        let suffix = ", detector: nil, safeRefresh: nil)"
        if text.hasSuffix(suffix) { text = String(text.dropLast(suffix.count)) + ")" }
        if let d = detector { text += "|detector=" + d.canonicalDescription }
        if let g = safeRefresh { text += "|safe_refresh=window:\(g.window),margin:\(g.margin)" }
        return text
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case type, samplesPerDay = "samples_per_day", n, when, detector, safeRefresh = "safe_refresh"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        type = try c.decodeChoice(.type, default: .daily)
        samplesPerDay = try c.decode(.samplesPerDay, default: 20)
        n = try c.decode(.n, default: 100)
        when = try c.decode(.when, default: GateCondition())
        safeRefresh = try c.decodeIfPresent(SafeRefreshGate.self, forKey: .safeRefresh)
        try c.require(samplesPerDay >= 1, .samplesPerDay, "must be ≥ 1, got \(samplesPerDay)")
        try c.require(n >= 1, .n, "must be ≥ 1, got \(n)")
        if c.contains(.detector) {
            try c.require(type == .onDrift, .detector, "is read by \"type\": \"on_drift\" only (this schedule is \(type.rawValue))")
            detector = try c.decode(DetectorJSON.self, forKey: .detector).spec
        } else {
            try c.require(type != .onDrift, .type, "\"on_drift\" needs a \"detector\", e.g. {\"type\": \"adwin\", \"delta\": 0.002}")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type.rawValue, forKey: .type)
        try c.encode(samplesPerDay, forKey: .samplesPerDay)
        try c.encode(n, forKey: .n)
        try c.encode(when, forKey: .when)
        // Written only when set, so the canonical JSON (and run ids) of existing experiments stay.
        if let d = detector { try c.encode(DetectorJSON(spec: d), forKey: .detector) }
        try c.encodeIfPresent(safeRefresh, forKey: .safeRefresh)
    }

    /// Days (indices into `days`) on which a session runs. `samples[d]` = samples arriving on day
    /// d; `experienceEnds` = last day of each experience (used by `always`). A session needs at
    /// least one new sample.
    public func sessionDays(days: [DeviceDay], samples: [Int], experienceEnds: Set<Int>) -> [Int] {
        var sessions: [Int] = []
        var last = -1
        var pending = 0
        for d in days.indices {
            pending += d < samples.count ? samples[d] : 0
            if runsSession(day: d, device: days[d], pendingSamples: pending, lastSessionDay: last,
                           endsExperience: experienceEnds.contains(d)) {
                sessions.append(d)
                last = d
                pending = 0
            }
        }
        return sessions
    }

    /// Whether a session runs on `day` (after that day's samples arrived), given the device's
    /// states that day, the samples waiting since the previous session, and the previous session's
    /// day (-1: none yet). `endsExperience` is read by `always` only (research streams). The one
    /// decision behind both `sessionDays` and the on-device runtime's `trainIfDue`.
    /// `driftPending`: whether the `on_drift` detector fired since the previous session (read by
    /// `on_drift` only). With `safe_refresh`, more than `window` samples must be pending.
    public func runsSession(day: Int, device: DeviceDay, pendingSamples: Int, lastSessionDay: Int,
                            endsExperience: Bool, driftPending: Bool = false) -> Bool {
        guard pendingSamples > (safeRefresh?.window ?? 0) else { return false }
        switch type {
        case .always: return endsExperience
        case .daily: return when.opens(device)
        case .weekly: return day - lastSessionDay >= 7 && when.opens(device)
        case .afterNewSamples: return pendingSamples >= n && when.opens(device)
        // The first session also comes after `n` samples: an untrained model's errors may never drift.
        case .onDrift: return (driftPending || (lastSessionDay < 0 && pendingSamples >= n)) && when.opens(device)
        }
    }
}

/// `schedule.detector` in JSON: `{"type": "adwin", "delta": 0.002}`; every other key is a
/// parameter of that detector (a number), checked by `DriftDetectorSpec` with errors that name
/// the key path (`schedule.detector.delta must be in (0, 1), got 2`).
struct DetectorJSON: Codable {
    var spec: DriftDetectorSpec

    init(spec: DriftDetectorSpec) { self.spec = spec }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        let typeKey = AnyCodingKey("type")
        guard c.contains(typeKey) else {
            throw DecodingError.keyNotFound(typeKey, .init(codingPath: c.codingPath,
                debugDescription: "a detector needs a \"type\"; allowed: \(DriftDetectorSpec.Kind.allCases.map(\.rawValue).joined(separator: ", "))"))
        }
        let type = try c.decode(String.self, forKey: typeKey)
        var parameters: [String: Double] = [:]
        for key in c.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) where key.stringValue != "type" {
            parameters[key.stringValue] = try c.decode(Double.self, forKey: key)
        }
        do {
            spec = try DriftDetectorSpec(type: type, parameters: parameters)
        } catch {
            let key = AnyCodingKey(error.parameter ?? "type")
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath + [key], debugDescription: error.rule))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyCodingKey.self)
        try c.encode(spec.kind.rawValue, forKey: AnyCodingKey("type"))
        for (name, value) in spec.parameters.sorted(by: { $0.key < $1.key }) {
            try c.encode(value, forKey: AnyCodingKey(name))
        }
    }
}
