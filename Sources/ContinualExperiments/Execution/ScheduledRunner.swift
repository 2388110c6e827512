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

    /// Trains the plan's sessions (a `SessionSource` on the one training loop, with a
    /// `SessionProbe` observer scoring each day), optionally stopping after session `stopAfter`
    /// or resuming from a checkpoint. Returns the Trainer outcome (nil when no session ran), the
    /// trainer (for its model, optimizer and checkpoint), and the day-by-day report (covering the
    /// sessions trained so far when it stopped early). `initialParameters` (a warm start) replace
    /// the first entries of the freshly built model.
    public static func run(plan: Plan, stream: ExperienceStream, spec: MLPSpec, optimizer: OptimizerSpec,
                           training: TrainingOptions, plugins: [any StrategyPlugin], seed: UInt64,
                           type: String, resumingFrom resume: TrainerCheckpoint? = nil,
                           stopAfter: Int? = nil, initialParameters: [Float]? = nil) throws -> (TrainingOutcome?, Trainer, ScheduleReport) {
        // Phase rows: phase i is scored by the model held at the end of its last day, which is the
        // model the probe sees before the first session after that day (or the final model).
        let phaseEnds = phaseEndDays(dayExperience: plan.dayExperience, phases: stream.experiences.count)
        var phasesBefore = [Int](repeating: 0, count: plan.sessionDays.count)
        for e in phaseEnds {
            if let k = plan.sessionDays.firstIndex(where: { $0 > e }) { phasesBefore[k] += 1 }
        }
        var probe = SessionProbe(sessionDays: plan.sessionDayRanges.map { r in r.map { plan.daySamples[$0] } })
        probe.phaseTests = stream.experiences.map(\.test)
        probe.phasesBefore = phasesBefore
        var trainer = Trainer(spec: spec, optimizer: optimizer, options: training, plugins: plugins,
                              observers: [probe], seed: seed)
        // A warm start (model.init_from): these values replace the first entries of the model.
        if let p = initialParameters { trainer.model.parameters.replaceSubrange(0..<p.count, with: p) }
        var outcome: TrainingOutcome? = nil
        var dayCorrect = [Int](repeating: 0, count: plan.daySamples.count)
        var model = trainer.model
        var finished = true
        if !plan.sessions.isEmpty {
            let o = try trainer.run(stream, source: SessionSource(sessions: plan.sessions), resumingFrom: resume,
                                    stopAfter: stopAfter)
            let correct = (trainer.observers[0] as? SessionProbe)?.correct ?? []
            var index = 0
            for range in plan.sessionDayRanges where index < correct.count {
                for d in range { dayCorrect[d] = Int(correct[index]); index += 1 }
            }
            model = o.finalModel
            outcome = o
            finished = trainer.checkpoint == nil
        }
        // Days after the last session: predicted by the final model, never trained on.
        let ws = model.makeWorkspace(capacity: 512)
        if finished {
            let tail = plan.sessionDayRanges.last?.upperBound ?? 0
            for d in tail..<plan.daySamples.count {
                dayCorrect[d] = correctCount(model: model, samples: plan.daySamples[d], workspace: ws)
            }
        }
        let finalAccuracy = stream.experiences.map { model.accuracy(on: $0.test, route: 0, workspace: ws) }
        var report = ScheduleReport(type: type, gateOpen: plan.gateOpen, daySamples: plan.daySamples.map(\.count),
                                    dayExperience: plan.dayExperience, sessionDays: plan.sessionDays,
                                    dayCorrect: dayCorrect, finalExperienceAccuracy: finalAccuracy)
        if finished {
            let rows = plan.sessions.isEmpty ? [] : (trainer.observers[0] as? SessionProbe)?.phaseAccuracy ?? []
            let tail = phaseEnds.filter { e in plan.sessionDays.last.map { e >= $0 } ?? true }.count
            // A run resumed from a checkpoint older than phase rows lacks the early ones: no matrix then.
            if rows.count + tail == stream.experiences.count {
                report.phaseAccuracy = rows + [[Double]](repeating: finalAccuracy, count: tail)
            }
        }
        return (outcome, trainer, report)
    }

    /// The last day of each scenario experience (of an earlier one when it has no day; -1 when
    /// none has): non-decreasing, so phase rows are produced in phase order.
    public static func phaseEndDays(dayExperience: [Int], phases: Int) -> [Int] {
        var ends = [Int](repeating: -1, count: phases)
        for (d, e) in dayExperience.enumerated() where e < phases { ends[e] = d }
        for i in ends.indices.dropFirst() where ends[i] < ends[i - 1] { ends[i] = ends[i - 1] }
        return ends
    }

    static func correctCount(model: MLP, samples: Samples, workspace: Workspace) -> Int {
        samples.isEmpty ? 0 : Int((model.accuracy(on: samples, route: 0, workspace: workspace) * Double(samples.count)).rounded())
    }
}

/// A loop observer of scheduled runs: before session k is trained it predicts the samples of
/// session k's days with the model of that moment (the model after session k−1, or the initial
/// model), which is what the device would have predicted on those days.
public struct SessionProbe: LoopObserver {
    public var name: String { "session_probe" }
    let sessionDays: [[Samples]]
    /// Correct predictions per day of the sessions seen so far.
    public private(set) var correct: [Double] = []
    /// The scenario experiences' test sets, and how many phase rows to score before each session.
    var phaseTests: [Samples] = []
    var phasesBefore: [Int] = []
    /// Rows of `ScheduleReport.phaseAccuracy` scored so far (only reads the model: training is
    /// unchanged by it).
    public private(set) var phaseAccuracy: [[Double]] = []

    init(sessionDays: [[Samples]]) { self.sessionDays = sessionDays }

    public mutating func experienceWillTrain(index: Int, trainingSet: Samples, own: Samples, predictor: inout Predictor) {
        let model = predictor.model
        let ws = model.makeWorkspace(capacity: 512)
        for day in sessionDays[index] {
            correct.append(Double(ScheduledRunner.correctCount(model: model, samples: day, workspace: ws)))
        }
        if index < phasesBefore.count && phasesBefore[index] > 0 {
            let row = phaseTests.map { model.accuracy(on: $0, route: 0, workspace: ws) }
            phaseAccuracy += [[Double]](repeating: row, count: phasesBefore[index])
        }
    }

    public func checkpointState() -> PluginState {
        var doubles = ["day_correct": correct]
        if !phaseAccuracy.isEmpty { doubles["phase_accuracy"] = phaseAccuracy.flatMap { $0 } }
        return PluginState(doubles: doubles)
    }

    public mutating func restore(from state: PluginState) throws {
        guard let c = state.doubles["day_correct"] else { throw CheckpointError.mismatch("session probe state lacks day_correct") }
        correct = c
        // Checkpoints written before phase rows existed carry none (the report then lacks them).
        let flat = state.doubles["phase_accuracy"] ?? []
        let T = max(phaseTests.count, 1)
        phaseAccuracy = stride(from: 0, to: flat.count - flat.count % T, by: T).map { Array(flat[$0..<($0 + T)]) }
    }
}
