import ContinualCore

/// Thermal state of the phone, as the OS reports it (iOS `ProcessInfo.ThermalState` names).
public enum ThermalState: String, Sendable, Codable, CaseIterable, Comparable {
    case nominal, fair, serious, critical

    var rank: Int { Self.allCases.firstIndex(of: self)! }
    public static func < (a: ThermalState, b: ThermalState) -> Bool { a.rank < b.rank }
}

/// The device's state during one hour of a simulated day: what gates on-device training.
public struct DeviceHour: Sendable, Equatable {
    public var charging: Bool
    /// Screen locked and no foreground use.
    public var idle: Bool
    public var wifi: Bool
    /// Battery level at the start of the hour, 0...1.
    public var battery: Double
    public var thermal: ThermalState

    public init(charging: Bool, idle: Bool, wifi: Bool, battery: Double, thermal: ThermalState) {
        self.charging = charging
        self.idle = idle
        self.wifi = wifi
        self.battery = battery
        self.thermal = thermal
    }
}

/// One simulated day: 24 hourly device states.
public struct DeviceDay: Sendable, Equatable {
    public var day: Int
    public var hours: [DeviceHour]

    public init(day: Int, hours: [DeviceHour]) {
        self.day = day
        self.hours = hours
    }

    /// A day whose 24 hours are all `hour` (for tests and forced gates).
    public static func constant(day: Int, _ hour: DeviceHour) -> DeviceDay {
        DeviceDay(day: day, hours: [DeviceHour](repeating: hour, count: 24))
    }
}

/// Seeded generator of device days with typical patterns (JSON `"device": {"state": {...}}`).
///
/// Per day: sleep from `bedtime ± 1 h` to `wake ± 0.5 h` (screen locked, at home). `overnight`
/// users plug in at bedtime with probability `charge_probability` and charge until they wake;
/// `irregular` users charge on `charge_probability` of days, at a random hour, for 1–4 hours;
/// `never` never charges; `always` is always plugged in. Any user tops up for 1–2 daytime hours
/// with probability `daytime_charge_probability`. Wi-Fi is on at home (asleep or evening) on
/// `home_wifi_probability` of days, and in any other hour with `away_wifi_probability`. Awake
/// hours are idle with `daytime_idle_probability`. Battery: +30 %/h charging, −6 %/h awake,
/// −1 %/h asleep. Thermal: `fair` with probability 0.15 per charging hour, `serious` with 0.02
/// per awake hour, else `nominal`.
public struct DeviceStateOptions: Sendable, Equatable, Hashable, Codable {
    public enum Pattern: String, Sendable, Codable, CaseIterable { case overnight, irregular, never, always }

    public var pattern: Pattern
    public var chargeProbability: Double
    public var daytimeChargeProbability: Double
    public var homeWifiProbability: Double
    public var awayWifiProbability: Double
    public var daytimeIdleProbability: Double
    public var bedtime: Double
    public var wake: Double
    /// Seed of the device stream; nil = derived from the run's seed.
    public var seed: UInt64?

    public init(pattern: Pattern = .overnight, chargeProbability: Double = 0.9, daytimeChargeProbability: Double = 0.2,
                homeWifiProbability: Double = 0.9, awayWifiProbability: Double = 0.2,
                daytimeIdleProbability: Double = 0.3, bedtime: Double = 23, wake: Double = 7, seed: UInt64? = nil) {
        self.pattern = pattern
        self.chargeProbability = chargeProbability
        self.daytimeChargeProbability = daytimeChargeProbability
        self.homeWifiProbability = homeWifiProbability
        self.awayWifiProbability = awayWifiProbability
        self.daytimeIdleProbability = daytimeIdleProbability
        self.bedtime = bedtime
        self.wake = wake
        self.seed = seed
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case pattern, chargeProbability = "charge_probability", daytimeChargeProbability = "daytime_charge_probability"
        case homeWifiProbability = "home_wifi_probability", awayWifiProbability = "away_wifi_probability"
        case daytimeIdleProbability = "daytime_idle_probability", bedtime, wake, seed
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        let d = DeviceStateOptions()
        pattern = try c.decodeChoice(.pattern, default: d.pattern)
        chargeProbability = try c.decode(.chargeProbability, default: d.chargeProbability)
        daytimeChargeProbability = try c.decode(.daytimeChargeProbability, default: d.daytimeChargeProbability)
        homeWifiProbability = try c.decode(.homeWifiProbability, default: d.homeWifiProbability)
        awayWifiProbability = try c.decode(.awayWifiProbability, default: d.awayWifiProbability)
        daytimeIdleProbability = try c.decode(.daytimeIdleProbability, default: d.daytimeIdleProbability)
        bedtime = try c.decode(.bedtime, default: d.bedtime)
        wake = try c.decode(.wake, default: d.wake)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        for (key, p) in [(CodingKeys.chargeProbability, chargeProbability), (.daytimeChargeProbability, daytimeChargeProbability),
                         (.homeWifiProbability, homeWifiProbability), (.awayWifiProbability, awayWifiProbability),
                         (.daytimeIdleProbability, daytimeIdleProbability)] {
            try c.require((0...1).contains(p), key, "must be in 0...1, got \(p)")
        }
        try c.require((12...24).contains(bedtime), .bedtime, "must be an hour in 12...24, got \(bedtime)")
        try c.require((0...12).contains(wake), .wake, "must be an hour in 0...12, got \(wake)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(pattern, forKey: .pattern)
        try c.encode(chargeProbability, forKey: .chargeProbability)
        try c.encode(daytimeChargeProbability, forKey: .daytimeChargeProbability)
        try c.encode(homeWifiProbability, forKey: .homeWifiProbability)
        try c.encode(awayWifiProbability, forKey: .awayWifiProbability)
        try c.encode(daytimeIdleProbability, forKey: .daytimeIdleProbability)
        try c.encode(bedtime, forKey: .bedtime)
        try c.encode(wake, forKey: .wake)
        try c.encodeIfPresent(seed, forKey: .seed)
    }

    /// `count` consecutive days (deterministic in the seed).
    public func makeDays(count: Int, runSeed: UInt64) -> [DeviceDay] {
        var rng = RandomSource(seed: seed ?? runSeed, stream: "device.state")
        var battery = 0.8
        var days: [DeviceDay] = []
        days.reserveCapacity(count)
        for d in 0..<count {
            let bed = Int((bedtime + rng.uniform(-1, 1)).rounded())
            let up = Int((wake + 0.5 * rng.uniform(-1, 1)).rounded())
            let homeWifi = rng.bernoulli(homeWifiProbability)
            var charging = [Bool](repeating: false, count: 24)
            switch pattern {
            case .overnight:
                if rng.bernoulli(chargeProbability) {
                    for h in 0..<24 where h < up || h >= bed { charging[h] = true }
                }
            case .irregular:
                if rng.bernoulli(chargeProbability) {
                    let start = rng.uniformInt(below: 24), length = 1 + rng.uniformInt(below: 4)
                    for h in start..<min(24, start + length) { charging[h] = true }
                }
            case .never: break
            case .always: charging = [Bool](repeating: true, count: 24)
            }
            if pattern != .never && rng.bernoulli(daytimeChargeProbability) {
                let start = 9 + rng.uniformInt(below: 10), length = 1 + rng.uniformInt(below: 2)
                for h in start..<min(24, start + length) { charging[h] = true }
            }
            var hours: [DeviceHour] = []
            hours.reserveCapacity(24)
            for h in 0..<24 {
                let asleep = h < up || h >= bed
                let evening = h >= 19
                let idle = asleep || rng.bernoulli(daytimeIdleProbability)
                let wifi = ((asleep || evening) && homeWifi) || rng.bernoulli(awayWifiProbability)
                var thermal = ThermalState.nominal
                if charging[h] && rng.bernoulli(0.15) { thermal = .fair }
                if !asleep && rng.bernoulli(0.02) { thermal = .serious }
                hours.append(DeviceHour(charging: charging[h], idle: idle, wifi: wifi, battery: battery, thermal: thermal))
                battery = min(1, max(0.02, battery + (charging[h] ? 0.3 : (asleep ? -0.01 : -0.06))))
            }
            days.append(DeviceDay(day: d, hours: hours))
        }
        return days
    }
}
