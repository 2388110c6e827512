import ContinualCore
import ContinualOnDevice
import ContinualScenarios
import ContinualStrategies
import Testing

// The README's "Link the runtime" example, compiled and run (DocSnippetTests checks that the
// README's block is this code verbatim).

/// One day of a habit app: label yesterday, predict today, train at night if allowed, save.
func habitAppDay(_ model: inout PersonalModel, day: Int, today: [Float], yesterdayDone: Bool,
                 night: DeviceHour) throws -> (remind: Bool, saved: [UInt8]) {
    if day > 0 { try model.label(day: day - 1, outcome: yesterdayDone) }
    try model.observe(features: today, day: day)
    let remind = try model.predict(today)[1] < 0.4              // p(habit done today) is low
    if let session = try model.trainIfDue(day: day, now: night) {
        print("session \(session.session): \(session.steps) steps, \(session.energy.joules) J")
    }
    return (remind, model.checkpoint())                        // write these bytes to a file
}

func makeHabitModel() throws -> PersonalModel {
    let configuration = PersonalModel.Configuration(
        model: MLPSpec(inputs: 3, hidden: [8]),
        strategy: [Replay.Options(capacity: 100), EWC.Options(lambda: 100)],
        schedule: ScheduleConfig(type: .daily, when: GateCondition(charging: true, idle: true, wifi: true)))
    return try PersonalModel(configuration: configuration)
    // After a relaunch: try PersonalModel(checkpoint: bytes, configuration: configuration)
}

@Suite struct ReadmeExampleTests {
    @Test func theReadmeLoopRunsAndRelaunches() throws {
        var model = try makeHabitModel()
        let night = DeviceHour(charging: true, idle: true, wifi: true, battery: 0.8, thermal: .nominal)
        var saved: [UInt8] = []
        for day in 0..<10 {
            (_, saved) = try habitAppDay(&model, day: day, today: [Float(day % 7) / 7, 0.5, day % 2 == 0 ? 1 : 0],
                                         yesterdayDone: day % 3 != 0, night: night)
        }
        #expect(model.sessionsTrained == 9)        // day 0 had nothing labelled yet
        let relaunched = try PersonalModel(checkpoint: saved, configuration: model.configuration)
        #expect(relaunched.parameters == model.parameters)
    }
}
