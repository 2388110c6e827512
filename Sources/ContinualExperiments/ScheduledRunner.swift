import ContinualCore
import ContinualScenarios

/// Runs a scenario under a training schedule: samples arrive day by day, the schedule and the
/// device gate pick the session days, and the samples since the previous session become one
/// experience of the ordinary Trainer. Every day's samples are predicted by the model the device
/// held that day (prequential): before the first session the initial model, after the last one
/// the final model.
public enum ScheduledRunner {
    /// The plan of a scheduled run: days, sessions and the session stream for the Trainer.
    public struct Plan: Sendable {
        public var days: [DeviceDay]
        public var gateOpen: [Bool]
        public var daySamples: [Samples]
        public var dayExperience: [Int]
        public var sessionDays: [Int]
        /// One experience per session: train = test = the samples of its days.
        public var sessions: [Experience]
        /// Days of each session, in order.
        public var sessionDayRanges: [Range<Int>]
    }

    /// Splits `stream`'s training samples into days and plans the sessions. `deviceDays` overrides
    /// the generated device states (tests use it to force the gate).
    public static func plan(stream: ExperienceStream, schedule: ScheduleConfig, device: DeviceStateOptions,
                            seed: UInt64, deviceDays: [DeviceDay]? = nil) -> Plan {
        var daySamples: [Samples] = [], dayExperience: [Int] = []
        var experienceEnds = Set<Int>()
        for e in stream.experiences {
            let n = e.train.count
            var start = 0
            while start < n {
                let end = min(start + schedule.samplesPerDay, n)
                daySamples.append(e.train.subset(Array(start..<end)))
                dayExperience.append(e.index)
                start = end
            }
            if n > 0 { experienceEnds.insert(daySamples.count - 1) }
        }
        let D = daySamples.count
        var days = deviceDays ?? device.makeDays(count: D, runSeed: seed)
        if days.count < D {
            let closed = DeviceHour(charging: false, idle: false, wifi: false, battery: 0.5, thermal: .nominal)
            days += (days.count..<D).map { DeviceDay.constant(day: $0, closed) }
        }
        let gate = days.prefix(D).map { schedule.when.opens($0) }
        let sessionDays = schedule.sessionDays(days: Array(days.prefix(D)), samples: daySamples.map(\.count),
                                               experienceEnds: experienceEnds)
        var sessions: [Experience] = [], ranges: [Range<Int>] = []
        var first = 0
        for (k, d) in sessionDays.enumerated() {
            var set = Samples(dimension: stream.dimension)
            for day in first...d { set.append(daySamples[day]) }
            let phases = Set(dayExperience[first...d]).sorted().map { stream.experiences[$0].name }
            sessions.append(Experience(index: k, name: "session_\(k)", train: set, test: set,
                                       metadata: ["first_day": "\(first)", "last_day": "\(d)",
                                                  "phases": phases.joined(separator: ",")]))
            ranges.append(first..<(d + 1))
            first = d + 1
        }
        return Plan(days: Array(days.prefix(D)), gateOpen: gate, daySamples: daySamples, dayExperience: dayExperience,
                    sessionDays: sessionDays, sessions: sessions, sessionDayRanges: ranges)
    }

    /// Trains the plan's sessions. Returns the Trainer outcome (nil when no session ran), the
    /// trainer (for its model and optimizer), and the day-by-day report.
    public static func run(plan: Plan, stream: ExperienceStream, spec: MLPSpec, optimizer: OptimizerSpec,
                           training: TrainingOptions, plugins: [any StrategyPlugin], seed: UInt64,
                           type: String) throws -> (TrainingOutcome?, Trainer, ScheduleReport) {
        let probe = PrequentialProbe(sessionDays: plan.sessionDayRanges.map { r in r.map { plan.daySamples[$0] } })
        var trainer = Trainer(spec: spec, optimizer: optimizer, options: training, plugins: plugins + [probe], seed: seed)
        var outcome: TrainingOutcome? = nil
        var dayCorrect = [Int](repeating: 0, count: plan.daySamples.count)
        var model = trainer.model
        if !plan.sessions.isEmpty {
            let sessionStream = ExperienceStream(name: stream.name + ".sessions", featureNames: stream.featureNames,
                                                 head: stream.head, experiences: plan.sessions, metadata: stream.metadata)
            var o = try trainer.run(sessionStream)
            let probeReport = o.pluginReports.removeLast().report
            let correct = probeReport.arrays["day_correct"]?.values ?? []
            var index = 0
            for range in plan.sessionDayRanges {
                for d in range { dayCorrect[d] = Int(correct[index]); index += 1 }
            }
            model = o.finalModel
            outcome = o
        }
        trainer.plugins.removeLast()
        // Days after the last session: predicted by the final model, never trained on.
        let ws = model.makeWorkspace(capacity: 512)
        let tail = plan.sessionDayRanges.last?.upperBound ?? 0
        for d in tail..<plan.daySamples.count {
            dayCorrect[d] = correctCount(model: model, samples: plan.daySamples[d], workspace: ws)
        }
        let finalAccuracy = stream.experiences.map { model.accuracy(on: $0.test, route: 0, workspace: ws) }
        let report = ScheduleReport(type: type, gateOpen: plan.gateOpen, daySamples: plan.daySamples.map(\.count),
                                    dayExperience: plan.dayExperience, sessionDays: plan.sessionDays,
                                    dayCorrect: dayCorrect, finalExperienceAccuracy: finalAccuracy)
        return (outcome, trainer, report)
    }

    static func correctCount(model: MLP, samples: Samples, workspace: Workspace) -> Int {
        samples.isEmpty ? 0 : Int((model.accuracy(on: samples, route: 0, workspace: workspace) * Double(samples.count)).rounded())
    }
}

/// Appended after the strategy's plugins by `ScheduledRunner`: before session k is trained it
/// predicts the samples of session k's days with the model of that moment (the model after
/// session k−1, or the initial model), which is what the device would have predicted on those days.
struct PrequentialProbe: StrategyPlugin {
    var name: String { "prequential" }
    let sessionDays: [[Samples]]
    var correct: [Double] = []

    init(sessionDays: [[Samples]]) { self.sessionDays = sessionDays }

    mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        let ws = model.makeWorkspace(capacity: 512)
        for day in sessionDays[context.index] {
            correct.append(Double(ScheduledRunner.correctCount(model: model, samples: day, workspace: ws)))
        }
    }

    func report() -> PluginReport {
        PluginReport(arrays: ["day_correct": .init(values: correct)])
    }
}
