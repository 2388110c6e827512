import ContinualCore
import ContinualMetrics
import ContinualOnDevice
import ContinualScenarios
import ContinualStrategies
import Testing

/// `trainIfDue(device:)` trains exactly when the `schedule` block's policy allows it.
@Suite struct TrainingGateTests {
    static let good = DeviceHour(charging: true, idle: true, wifi: true, battery: 0.9, thermal: .nominal)

    static func model(_ schedule: ScheduleConfig, pendingDays: Int = 1) throws -> PersonalModel {
        var m = try PersonalModel(configuration: PersonalModel.Configuration(
            model: MLPSpec(inputs: 2, hidden: [3]), training: TrainingOptions(epochs: 1, batchSize: 4),
            schedule: schedule, seed: 1, sessionCapacity: 10))
        for d in 0..<pendingDays {
            try m.observe(features: [0.5, Float(d)], day: d)
            try m.label(day: d, outcome: d % 2 == 0)
        }
        return m
    }

    func trains(_ schedule: ScheduleConfig, _ hour: DeviceHour, day: Int = 0) throws -> Bool {
        var m = try Self.model(schedule)
        return try m.trainIfDue(day: day, now: hour) != nil
    }

    @Test func eachConditionOfTheGateIsRequired() throws {
        let gate = GateCondition(charging: true, idle: true, wifi: true, minBattery: 0.3, maxThermal: .fair)
        let daily = ScheduleConfig(type: .daily, when: gate)
        #expect(try trains(daily, Self.good))
        var h = Self.good
        h.charging = false
        #expect(try !trains(daily, h))
        h = Self.good
        h.idle = false
        #expect(try !trains(daily, h))
        h = Self.good
        h.wifi = false
        #expect(try !trains(daily, h))
        h = Self.good
        h.battery = 0.2
        #expect(try !trains(daily, h))
        h = Self.good
        h.thermal = .serious
        #expect(try !trains(daily, h))
        // A condition set to false is not required.
        var noWifi = daily
        noWifi.when.wifi = false
        h = Self.good
        h.wifi = false
        #expect(try trains(noWifi, h))
        // `always` ignores the device.
        #expect(try trains(ScheduleConfig(type: .always), DeviceHour(charging: false, idle: false, wifi: false, battery: 0, thermal: .critical)))
    }

    @Test func oneOpenHourOfTheDayIsEnough() throws {
        var m = try Self.model(ScheduleConfig(type: .daily))
        let closed = DeviceHour(charging: false, idle: true, wifi: true, battery: 0.9, thermal: .nominal)
        #expect(try m.trainIfDue(device: DeviceDay(day: 0, hours: [closed, closed])) == nil)
        #expect(try m.trainIfDue(device: DeviceDay(day: 0, hours: [closed, Self.good])) != nil)
    }

    @Test func nothingPendingNeverTrains() throws {
        var m = try Self.model(ScheduleConfig(type: .always), pendingDays: 0)
        #expect(try m.trainIfDue(day: 0, now: Self.good) == nil)
        // Unlabelled observations are not training data.
        try m.observe(features: [1, 1], day: 0)
        #expect(try m.trainIfDue(day: 0, now: Self.good) == nil)
    }

    @Test func weeklyWaitsSevenDaysAndAfterNWaitsForSamples() throws {
        var weekly = try Self.model(ScheduleConfig(type: .weekly))
        #expect(try weekly.trainIfDue(day: 5, now: Self.good) == nil)      // first session from day 6
        #expect(try weekly.trainIfDue(day: 6, now: Self.good)?.session == 0)
        try weekly.observe(features: [0, 0], day: 7)
        try weekly.label(day: 7, outcome: true)
        #expect(try weekly.trainIfDue(day: 12, now: Self.good) == nil)
        #expect(try weekly.trainIfDue(day: 13, now: Self.good)?.session == 1)

        var afterN = try Self.model(ScheduleConfig(type: .afterNewSamples, n: 3), pendingDays: 2)
        #expect(try afterN.trainIfDue(day: 2, now: Self.good) == nil)
        try afterN.observe(features: [0, 0], day: 2)
        try afterN.label(day: 2, outcome: false)
        let report = try #require(try afterN.trainIfDue(day: 2, now: Self.good))
        #expect(report.newSamples == 3)
        #expect(afterN.pending.isEmpty)
    }

    @Test func theReportCostsTheSessionWithTheResearchCostModel() throws {
        var m = try Self.model(ScheduleConfig(type: .daily), pendingDays: 6)
        let report = try #require(try m.trainIfDue(day: 5, now: Self.good))
        // 6 samples, batches of 4, 1 epoch: 2 steps over 6 rows.
        #expect(report.steps == 2 && report.rowsProcessed == 6 && report.trainingSetSize == 6)
        let traffic = TrainingTraffic(model: m.model, optimizer: m.configuration.optimizer)
        #expect(report.energy == EnergyEstimate(training: traffic, rows: 6, steps: 2, profile: .phoneNPU2023))
        #expect(report.peakMemory == PeakMemory(model: m.model, optimizer: m.configuration.optimizer, batchRows: 4, bufferBytes: 0))
        #expect(m.lastSessionDay == 5 && m.sessionsTrained == 1)
    }
}
