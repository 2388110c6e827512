import ContinualCore

/// One behavioural regime of the habit-tracking user: how their day looks and what makes them
/// complete the habit the next day.
///
/// The probability of completing tomorrow is σ(logit) with
/// logit = bias + hourWeight·cos(2π(h − goodHour)/24) + streakWeight·(streak − 0.3)
///       + rateWeight·(rate30 − 0.5) + reminderWeight·reminderTomorrow
///       + openedWeight·(opened − 0.5) + weekendWeight·(±1 for weekend/weekday tomorrow)
///       + launchWeight·(launches − 0.3),
/// where h is today's activity hour. Because cos(h − g) = cos h cos g + sin h sin g, moving the
/// good hour moves the weights on the sin/cos features: *real* drift that a model must relearn.
public struct HabitPhase: Codable, Sendable, Equatable {
    public var name: String
    /// Centre of the user's main activity hour (0–24) and its spread (hours, std).
    public var activityHour: Double
    public var activitySpread: Double
    /// Fraction of days whose activity hour is drawn uniformly instead of around the centre.
    public var irregularDays: Double
    /// Hour at which activity leads to completion.
    public var goodHour: Double
    public var hourWeight: Double
    public var streakWeight: Double
    public var rateWeight: Double
    public var reminderWeight: Double
    public var openedWeight: Double
    public var weekendWeight: Double
    public var launchWeight: Double
    public var bias: Double
    /// Probability that a reminder is scheduled for tomorrow, and that one sent today is opened.
    public var reminderRate: Double
    public var openRate: Double
    /// Mean app launches per day (Poisson).
    public var launchRate: Double

    /// Built-in regimes, by name.
    public static let presets: [String: HabitPhase] = {
        let morning = HabitPhase(
            name: "morning", activityHour: 7.5, activitySpread: 1.5, irregularDays: 0.35, goodHour: 7.5,
            hourWeight: 3.0, streakWeight: 1.0, rateWeight: 1.5, reminderWeight: 1.0, openedWeight: 0.5,
            weekendWeight: 0, launchWeight: 0.5, bias: -1.9, reminderRate: 0.6, openRate: 0.5, launchRate: 3)
        var night = morning
        night.name = "night"
        night.activityHour = 22
        night.goodHour = 22
        var fatigue = night
        fatigue.name = "reminder_fatigue"
        fatigue.reminderWeight = -2.0
        fatigue.openedWeight = -1.5
        fatigue.hourWeight = 2.0
        fatigue.bias = -0.3
        fatigue.reminderRate = 0.7
        fatigue.openRate = 0.2
        var weekend = morning
        weekend.name = "weekend_only"
        weekend.activityHour = 11
        weekend.goodHour = 11
        weekend.hourWeight = 0.5
        weekend.weekendWeight = 3.0
        weekend.streakWeight = 0.3
        weekend.rateWeight = 0.5
        weekend.bias = -0.5
        return ["morning": morning, "night": night, "reminder_fatigue": fatigue, "weekend_only": weekend]
    }()

    public static var presetNames: [String] { presets.keys.sorted() }

    public init(name: String, activityHour: Double, activitySpread: Double, irregularDays: Double, goodHour: Double,
                hourWeight: Double, streakWeight: Double, rateWeight: Double, reminderWeight: Double,
                openedWeight: Double, weekendWeight: Double, launchWeight: Double, bias: Double,
                reminderRate: Double, openRate: Double, launchRate: Double) {
        self.name = name
        self.activityHour = activityHour
        self.activitySpread = activitySpread
        self.irregularDays = irregularDays
        self.goodHour = goodHour
        self.hourWeight = hourWeight
        self.streakWeight = streakWeight
        self.rateWeight = rateWeight
        self.reminderWeight = reminderWeight
        self.openedWeight = openedWeight
        self.weekendWeight = weekendWeight
        self.launchWeight = launchWeight
        self.bias = bias
        self.reminderRate = reminderRate
        self.openRate = openRate
        self.launchRate = launchRate
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case preset, name
        case activityHour = "activity_hour", activitySpread = "activity_spread", irregularDays = "irregular_days"
        case goodHour = "good_hour", hourWeight = "hour_weight", streakWeight = "streak_weight"
        case rateWeight = "rate_weight", reminderWeight = "reminder_weight", openedWeight = "opened_weight"
        case weekendWeight = "weekend_weight", launchWeight = "launch_weight", bias
        case reminderRate = "reminder_rate", openRate = "open_rate", launchRate = "launch_rate"
    }

    /// Decodes either a preset name (`"night"`) or an object `{"preset": "night", "bias": 1}`
    /// whose keys override the preset (default preset: `morning`).
    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), let name = try? single.decode(String.self) {
            guard let preset = HabitPhase.presets[name] else {
                throw DecodingError.dataCorruptedError(
                    in: single, debugDescription: "unknown phase \"\(name)\"\(didYouMean(name, HabitPhase.presetNames)); presets: \(HabitPhase.presetNames.joined(separator: ", "))")
            }
            self = preset
            return
        }
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        let presetName = try c.decode(.preset, default: "morning")
        guard let base = HabitPhase.presets[presetName] else {
            throw DecodingError.dataCorruptedError(
                forKey: .preset, in: c,
                debugDescription: "unknown preset \"\(presetName)\"\(didYouMean(presetName, HabitPhase.presetNames)); presets: \(HabitPhase.presetNames.joined(separator: ", "))")
        }
        name = try c.decode(.name, default: c.contains(.preset) ? base.name : "custom")
        activityHour = try c.decode(.activityHour, default: base.activityHour)
        activitySpread = try c.decode(.activitySpread, default: base.activitySpread)
        irregularDays = try c.decode(.irregularDays, default: base.irregularDays)
        goodHour = try c.decode(.goodHour, default: base.goodHour)
        hourWeight = try c.decode(.hourWeight, default: base.hourWeight)
        streakWeight = try c.decode(.streakWeight, default: base.streakWeight)
        rateWeight = try c.decode(.rateWeight, default: base.rateWeight)
        reminderWeight = try c.decode(.reminderWeight, default: base.reminderWeight)
        openedWeight = try c.decode(.openedWeight, default: base.openedWeight)
        weekendWeight = try c.decode(.weekendWeight, default: base.weekendWeight)
        launchWeight = try c.decode(.launchWeight, default: base.launchWeight)
        bias = try c.decode(.bias, default: base.bias)
        reminderRate = try c.decode(.reminderRate, default: base.reminderRate)
        openRate = try c.decode(.openRate, default: base.openRate)
        launchRate = try c.decode(.launchRate, default: base.launchRate)
        try c.require((0...24).contains(activityHour), .activityHour, "must be in 0...24, got \(activityHour)")
        try c.require((0...24).contains(goodHour), .goodHour, "must be in 0...24, got \(goodHour)")
        try c.require(activitySpread >= 0, .activitySpread, "must be ≥ 0, got \(activitySpread)")
        try c.require((0...1).contains(irregularDays), .irregularDays, "must be in 0...1, got \(irregularDays)")
        try c.require((0...1).contains(reminderRate), .reminderRate, "must be in 0...1, got \(reminderRate)")
        try c.require((0...1).contains(openRate), .openRate, "must be in 0...1, got \(openRate)")
        try c.require(launchRate >= 0, .launchRate, "must be ≥ 0, got \(launchRate)")
    }

    /// Always encodes the full parameter set, so the resolved config is explicit.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(activityHour, forKey: .activityHour)
        try c.encode(activitySpread, forKey: .activitySpread)
        try c.encode(irregularDays, forKey: .irregularDays)
        try c.encode(goodHour, forKey: .goodHour)
        try c.encode(hourWeight, forKey: .hourWeight)
        try c.encode(streakWeight, forKey: .streakWeight)
        try c.encode(rateWeight, forKey: .rateWeight)
        try c.encode(reminderWeight, forKey: .reminderWeight)
        try c.encode(openedWeight, forKey: .openedWeight)
        try c.encode(weekendWeight, forKey: .weekendWeight)
        try c.encode(launchWeight, forKey: .launchWeight)
        try c.encode(bias, forKey: .bias)
        try c.encode(reminderRate, forKey: .reminderRate)
        try c.encode(openRate, forKey: .openRate)
        try c.encode(launchRate, forKey: .launchRate)
    }

    /// The probability of completing tomorrow given today's features (the ground truth).
    public func completionProbability(_ f: HabitDay) -> Double {
        let twoPi = 2 * Double.pi
        var logit = bias
        logit += hourWeight * _cos(twoPi * (f.activityHour - goodHour) / 24)
        logit += streakWeight * (f.streak - 0.3)
        logit += rateWeight * (f.completionRate - 0.5)
        logit += reminderWeight * f.reminderTomorrow
        logit += openedWeight * (f.remindersOpened - 0.5)
        logit += weekendWeight * (f.weekendTomorrow > 0.5 ? 1 : -1)
        logit += launchWeight * (f.appLaunches - 0.3)
        return 1 / (1 + _exp(-logit))
    }
}

/// One simulated day's normalised features (the model's input), in `featureNames` order.
public struct HabitDay: Sendable, Equatable {
    /// Current streak of completed days / 30, capped at 1.
    public var streak: Double
    /// Completed fraction of the last 30 days.
    public var completionRate: Double
    /// App launches today / 10, capped at 1.
    public var appLaunches: Double
    /// Fraction of today's (up to 3) reminders that were opened.
    public var remindersOpened: Double
    /// Hour of today's main activity, 0 ≤ h < 24 (enters the model as sin/cos).
    public var activityHour: Double
    /// 1 if tomorrow is Saturday or Sunday.
    public var weekendTomorrow: Double
    /// 1 if a reminder is scheduled for tomorrow.
    public var reminderTomorrow: Double
    /// 1 if the habit was completed today.
    public var completedToday: Double
    /// Sleep last night, (hours − 7) / 2: a realistic feature with no effect on the label.
    public var sleep: Double

    public static let featureNames = [
        "streak", "completion_rate_30d", "app_launches", "reminders_opened", "activity_hour_sin",
        "activity_hour_cos", "weekend_tomorrow", "reminder_tomorrow", "completed_today", "sleep_hours",
    ]

    public var features: [Float] {
        let angle = 2 * Double.pi * activityHour / 24
        return [streak, completionRate, appLaunches, remindersOpened, _sin(angle), _cos(angle),
                weekendTomorrow, reminderTomorrow, completedToday, sleep].map { Float($0) }
    }
}
