import ContinualCore

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
public struct ScheduleConfig: Codable, Sendable, Equatable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case always, daily, weekly
        case afterNewSamples = "after_n_new_samples"
    }

    public var type: Kind = .daily
    public var samplesPerDay = 20
    public var n = 100
    public var when = GateCondition()

    public init(type: Kind = .daily, samplesPerDay: Int = 20, n: Int = 100, when: GateCondition = GateCondition()) {
        self.type = type
        self.samplesPerDay = samplesPerDay
        self.n = n
        self.when = when
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case type, samplesPerDay = "samples_per_day", n, when
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        type = try c.decodeChoice(.type, default: .daily)
        samplesPerDay = try c.decode(.samplesPerDay, default: 20)
        n = try c.decode(.n, default: 100)
        when = try c.decode(.when, default: GateCondition())
        try c.require(samplesPerDay >= 1, .samplesPerDay, "must be ≥ 1, got \(samplesPerDay)")
        try c.require(n >= 1, .n, "must be ≥ 1, got \(n)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type.rawValue, forKey: .type)
        try c.encode(samplesPerDay, forKey: .samplesPerDay)
        try c.encode(n, forKey: .n)
        try c.encode(when, forKey: .when)
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
    public func runsSession(day: Int, device: DeviceDay, pendingSamples: Int, lastSessionDay: Int,
                            endsExperience: Bool) -> Bool {
        guard pendingSamples > 0 else { return false }
        switch type {
        case .always: return endsExperience
        case .daily: return when.opens(device)
        case .weekly: return day - lastSessionDay >= 7 && when.opens(device)
        case .afterNewSamples: return pendingSamples >= n && when.opens(device)
        }
    }
}
